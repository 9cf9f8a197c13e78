//! Reading and writing the deploy file's YAML.

use crate::document::FieldError;
use crate::limits::{bounded, check_yaml_depth};

use super::model::DeployConfig;

/// The field a refusal of the whole file names.
const FILE: &str = "file";

/// Parses a deploy file. A key Eggo does not have, a value of the wrong
/// shape or a word outside a closed vocabulary (package type, schedule,
/// protocol, CoreDNS type, role) is refused with its path, e.g.
/// `install.etcd[0].typ: unknown field ...`. What Eggo checks beyond the
/// shape is in [`DeployConfig::check`].
pub fn parse(text: &str) -> Result<DeployConfig, FieldError> {
    check_yaml_depth(text).map_err(|reason| FieldError::new(FILE, reason))?;
    let deserializer = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let field = if path.is_empty() || path == "." {
            FILE.to_owned()
        } else {
            path
        };
        FieldError::new(field, bounded(error.into_inner().to_string()))
    })
}

/// Writes `config` as YAML that [`parse`] reads back to the same value;
/// unset fields are left out.
pub fn to_yaml(config: &DeployConfig) -> Result<String, FieldError> {
    serde_norway::to_string(config).map_err(|e| FieldError::new(FILE, e.to_string()))
}
