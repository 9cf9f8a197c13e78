//! What a cluster deployment's `file` is stored as: the Eggo deploy file
//! as uploaded and the private key it logs in with, sealed together.

use std::path::Path;

use serde::{Deserialize, Serialize};

use wasmco_core::FieldError;
use wasmco_core::eggo::DeployConfig;
use wasmco_nodes::Secret;

/// A deploy file and its key, as one sealed file.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeployUpload {
    /// Eggo's deploy file, unchanged.
    pub deploy_file: String,
    /// The key `private-key-path` names, uploaded beside the file: the
    /// server reads no key from its own disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<String>,
}

impl std::fmt::Debug for DeployUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeployUpload")
            .field("deploy_file_bytes", &self.deploy_file.len())
            .field(
                "private_key",
                &self.private_key.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl DeployUpload {
    /// The stored form.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Two strings always serialise.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The stored form read back.
    pub fn from_bytes(bytes: &[u8]) -> Result<DeployUpload, FieldError> {
        serde_json::from_slice(bytes)
            .map_err(|e| FieldError::new("file", format!("not a stored deploy upload: {e}")))
    }

    /// The deploy file parsed and checked by Eggo's rules and wasmco's
    /// refusals, and the login it gives; a problem names its field under
    /// `file.` (or `privateKey`).
    pub fn checked(&self) -> Result<(DeployConfig, Secret), FieldError> {
        let in_file = |e: FieldError| FieldError::new(format!("file.{}", e.field), e.reason);
        let config = wasmco_core::eggo::parse(&self.deploy_file).map_err(in_file)?;
        let filled = config.with_defaults();
        let mut problems = filled.check();
        problems.extend(wasmco_clusters::refusals(&filled));
        if let Some(problem) = problems.into_iter().next() {
            return Err(in_file(problem));
        }
        if let Some(source) = &filled.install.package_source {
            for (arch, path) in &source.srcpath {
                if !Path::new(path).is_file() {
                    return Err(FieldError::new(
                        format!("file.install.package-source.srcpath.{arch}"),
                        format!(
                            "{path} is not a file on the wasmco host, which reads the package archive from there"
                        ),
                    ));
                }
            }
        }
        let secret = self.secret(&config)?;
        Ok((config, secret))
    }

    /// What a deploy file lays out (never its logins), as a deployment's
    /// `status` shows it.
    pub fn summary(config: &DeployConfig) -> serde_json::Value {
        let names = |hosts: &[wasmco_core::eggo::HostConfig]| -> Vec<String> {
            hosts.iter().map(|host| host.name.clone()).collect()
        };
        serde_json::json!({
            "clusterId": config.cluster_id,
            "masters": names(&config.masters),
            "workers": names(&config.workers),
            "etcds": names(&config.etcds),
        })
    }

    fn secret(&self, config: &DeployConfig) -> Result<Secret, FieldError> {
        if !config.password.is_empty() {
            return Ok(Secret::Password(config.password.clone()));
        }
        match &self.private_key {
            Some(key) => {
                let secret = Secret::PrivateKey(key.clone());
                secret
                    .check()
                    .map_err(|error| FieldError::new("privateKey", error.to_string()))?;
                Ok(secret)
            }
            None if !config.private_key_path.is_empty() => Err(FieldError::new(
                "privateKey",
                format!(
                    "the deploy file logs in with private-key-path {}; upload that key as the \
                     `privateKey` part (the wasmco host reads no key from its own disk)",
                    config.private_key_path
                ),
            )),
            None => Err(FieldError::new(
                "file.password",
                "the deploy file has neither password nor private-key-path to log in with",
            )),
        }
    }
}
