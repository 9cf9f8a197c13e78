//! How wasmco logs in to a node. The secret never reaches a log: its Debug
//! form is a placeholder, and no error carries it.

use std::fmt;

use crate::error::NodeError;

/// A user and the secret that proves it.
#[derive(Clone)]
pub struct Login {
    /// The user (Eggo's `username`).
    pub user: String,
    /// Its password or private key.
    pub secret: Secret,
}

/// The proof of a login.
#[derive(Clone)]
pub enum Secret {
    /// Eggo's `password`.
    Password(String),
    /// The contents of the private key file Eggo's `private-key-path`
    /// names (OpenSSH or PEM; RSA, ECDSA or Ed25519; not encrypted).
    PrivateKey(String),
}

impl Secret {
    /// The method's name as errors give it.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Password(_) => "password",
            Self::PrivateKey(_) => "private key",
        }
    }

    /// Refuses a private key that cannot log in (not a key, or encrypted)
    /// before any machine is dialled.
    pub fn check(&self) -> Result<(), NodeError> {
        if let Self::PrivateKey(pem) = self {
            russh::keys::decode_secret_key(pem, None)
                .map_err(|error| NodeError::BadKey(Box::new(error)))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(sealed)", self.method())
    }
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Login")
            .field("user", &self.user)
            .field("secret", &self.secret)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let login = Login {
            user: "root".into(),
            secret: Secret::Password("hunter2".into()),
        };
        let shown = format!("{login:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("password(sealed)"), "{shown}");
    }
}
