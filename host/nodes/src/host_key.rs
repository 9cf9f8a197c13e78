//! Which host key a node must show. Eggo's file has no place for host
//! keys, so the first contact records the key and every later one checks
//! it (as ssh's known_hosts does); a key given up front is pinned from the
//! start.

use std::sync::{Arc, Mutex, PoisonError};

use russh::client;
use russh::keys::ssh_key::public::KeyData;
use russh::keys::{HashAlg, PublicKey, PublicKeyOrCertificate};

/// What to accept from a node's host key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyPolicy {
    /// Only this key: an OpenSSH fingerprint (`SHA256:…`, as
    /// `ssh-keygen -l` prints it) or a public key line (`ssh-ed25519 AAAA…`).
    Pinned(String),
    /// Any key, at the first contact only: the session reports the key it
    /// saw ([`crate::NodeSession::host_key`]) for the caller to pin.
    FirstContact,
}

impl HostKeyPolicy {
    /// The fingerprint a pinned key stands for: a public key line becomes
    /// its SHA-256 fingerprint, a fingerprint stays as given.
    pub fn pinned_fingerprint(&self) -> Option<String> {
        match self {
            Self::FirstContact => None,
            Self::Pinned(pin) => Some(match PublicKey::from_openssh(pin.trim()) {
                Ok(key) => fingerprint(key.key_data()),
                Err(_) => pin.trim().to_owned(),
            }),
        }
    }
}

/// The OpenSSH form of a key's SHA-256 fingerprint.
pub(crate) fn fingerprint(key: &KeyData) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// The SSH client's handler: checks the server's key against the policy
/// and keeps what it saw, for the session or for the mismatch error.
pub(crate) struct HostKeyCheck {
    expected: Option<String>,
    seen: Arc<Mutex<Option<String>>>,
}

impl HostKeyCheck {
    pub(crate) fn new(policy: &HostKeyPolicy) -> (Self, Arc<Mutex<Option<String>>>) {
        let seen = Arc::new(Mutex::new(None));
        let check = Self {
            expected: policy.pinned_fingerprint(),
            seen: seen.clone(),
        };
        (check, seen)
    }
}

impl client::Handler for HostKeyCheck {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        offered: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = match offered {
            PublicKeyOrCertificate::PublicKey { key, .. } => key.key_data(),
            // Host certificates need a CA to trust, which Eggo's file
            // cannot name; the certificate's key is pinned like a plain one.
            PublicKeyOrCertificate::Certificate(certificate) => certificate.public_key(),
        };
        let found = fingerprint(key);
        let accepted = self.expected.as_ref().is_none_or(|pin| *pin == found);
        *self.seen.lock().unwrap_or_else(PoisonError::into_inner) = Some(found);
        Ok(accepted)
    }
}

/// Takes what the check saw.
pub(crate) fn seen(cell: &Mutex<Option<String>>) -> Option<String> {
    cell.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl node1";

    #[test]
    fn a_public_key_line_pins_its_fingerprint() {
        let from_line = HostKeyPolicy::Pinned(KEY.into())
            .pinned_fingerprint()
            .unwrap();
        assert!(from_line.starts_with("SHA256:"), "{from_line}");
        let from_fingerprint = HostKeyPolicy::Pinned(from_line.clone()).pinned_fingerprint();
        assert_eq!(from_fingerprint.as_deref(), Some(from_line.as_str()));
        assert_eq!(HostKeyPolicy::FirstContact.pinned_fingerprint(), None);
    }
}
