//! Key/value pairs, of a cluster or of a logical cloud.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::checking::{Scope, Spec};
use crate::document::{FieldError, Reference};

/// A cluster's key/value pairs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KvPairSpec {
    /// The pairs, as EMCO writes them: a list of one-entry maps. Read as
    /// any JSON so a value that is not a string is refused by its key.
    #[schemars(with = "Vec<BTreeMap<String, String>>")]
    pub kv: Vec<BTreeMap<String, Value>>,
}

impl Spec for KvPairSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        for (i, pair) in self.kv.iter().enumerate() {
            for (key, value) in pair {
                if !value.is_string() {
                    return Err(FieldError::new(
                        format!("spec.kv[{i}].{key}"),
                        "values are strings",
                    ));
                }
            }
        }
        Ok(Vec::new())
    }
}
