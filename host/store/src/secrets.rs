//! Secrets at rest: private keys and kubeconfigs are sealed with
//! XChaCha20-Poly1305 under a master key that never enters the store.
//!
//! The master key is 32 bytes, hex-encoded, from `WASMCO_MASTER_KEY` or a
//! key file. The store keeps a check value sealed under it, so a wrong key
//! is refused at start, before anything is read or written.

use std::io::Write;
use std::path::{Path, PathBuf};

use chacha20poly1305::aead::{Aead, KeyInit, OsRng, Payload, rand_core::RngCore};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// The environment variable that may carry the master key (hex).
pub const MASTER_KEY_ENV: &str = "WASMCO_MASTER_KEY";

const VERSION: u8 = 1;
const NONCE_LEN: usize = 24;
const CHECK_CONTEXT: &[u8] = b"wasmco master key check";

/// Why secrets cannot be sealed or opened.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The key file could not be read or written.
    #[error("master key file {path}: {source}")]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The key is not 64 hex digits.
    #[error("the master key from {from} is not 64 hex digits (32 bytes)")]
    Malformed {
        /// Where it came from.
        from: String,
    },
    /// The store was sealed under another key.
    #[error(
        "the master key from {from} is not the one this data directory was sealed with; \
         nothing was changed (give the right key in {MASTER_KEY_ENV} or the key file)"
    )]
    WrongKey {
        /// Where the key came from.
        from: String,
    },
    /// A sealed value was changed or cut.
    #[error("a sealed value is damaged or was sealed for something else")]
    Damaged,
}

/// The master key and where it came from (for messages).
pub struct MasterKey {
    cipher: XChaCha20Poly1305,
    from: String,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterKey")
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

impl MasterKey {
    /// The key from `WASMCO_MASTER_KEY` when set, else from `file`; with
    /// `create`, a missing file is made with a fresh key (mode 0600).
    pub fn load(file: &Path, create: bool) -> Result<Option<MasterKey>, SecretError> {
        if let Ok(hex_key) = std::env::var(MASTER_KEY_ENV) {
            return Self::from_hex(hex_key.trim(), MASTER_KEY_ENV.to_owned()).map(Some);
        }
        let from = file.display().to_string();
        match read_or_make_hex(file, create).map_err(|source| SecretError::KeyFile {
            path: file.to_owned(),
            source,
        })? {
            Some(key) => Self::from_hex(&key, from).map(Some),
            None => Ok(None),
        }
    }

    fn from_hex(text: &str, from: String) -> Result<MasterKey, SecretError> {
        let bytes = hex::decode(text).map_err(|_| SecretError::Malformed { from: from.clone() })?;
        let cipher = XChaCha20Poly1305::new_from_slice(&bytes)
            .map_err(|_| SecretError::Malformed { from: from.clone() })?;
        Ok(MasterKey { cipher, from })
    }

    /// Seals `plaintext`; `context` (where it is stored) is bound in, so a
    /// sealed value moved to another key does not open.
    pub fn seal(&self, context: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        let sealed = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: context,
                },
            )
            // Encryption fails only for inputs beyond 256 GiB.
            .unwrap_or_default();
        let mut out = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what [`Self::seal`] sealed under the same `context`.
    pub fn open(&self, context: &[u8], sealed: &[u8]) -> Result<Vec<u8>, SecretError> {
        if sealed.len() < 1 + NONCE_LEN || sealed[0] != VERSION {
            return Err(SecretError::Damaged);
        }
        let (nonce, ciphertext) = sealed[1..].split_at(NONCE_LEN);
        self.cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: context,
                },
            )
            .map_err(|_| SecretError::Damaged)
    }

    /// A value to keep beside the sealed data: [`Self::verify`] tells
    /// whether a key is the one that made it.
    pub fn check_value(&self) -> Vec<u8> {
        self.seal(CHECK_CONTEXT, b"ok")
    }

    /// Refuses a key other than the one that made `check`.
    pub fn verify(&self, check: &[u8]) -> Result<(), SecretError> {
        self.open(CHECK_CONTEXT, check)
            .map(drop)
            .map_err(|_| SecretError::WrongKey {
                from: self.from.clone(),
            })
    }
}

/// `bytes` random bytes from the OS, hex-encoded (tokens, keys).
pub fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    OsRng.fill_bytes(&mut buffer);
    hex::encode(buffer)
}

/// The trimmed text of `file`; when it does not exist and `make` is set, a
/// new 32-byte random hex value written there first (0600). `None` when it
/// does not exist and may not be made.
pub fn read_or_make_hex(file: &Path, make: bool) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && make => {
            let value = random_hex(32);
            write_private(file, value.as_bytes())?;
            Ok(Some(value))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes a file only its owner can read (0600), creating its directory.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_opens_and_refuses_other_keys_and_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::load(&dir.path().join("k"), true)
            .unwrap()
            .unwrap();
        let sealed = key.seal(b"a", b"secret");
        assert!(!sealed.windows(6).any(|w| w == b"secret"));
        assert_eq!(key.open(b"a", &sealed).unwrap(), b"secret");
        assert!(key.open(b"b", &sealed).is_err());
        let other = MasterKey::load(&dir.path().join("other"), true)
            .unwrap()
            .unwrap();
        assert!(matches!(
            other.verify(&key.check_value()),
            Err(SecretError::WrongKey { .. })
        ));
        key.verify(&key.check_value()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("k"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
