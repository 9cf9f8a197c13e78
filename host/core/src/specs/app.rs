//! The bodies under a composite app: the app itself, its apps'
//! dependencies and its profiles' values.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checking::{Scope, Spec};
use super::patterns::NAME_PATTERN;
use crate::document::{FieldError, Reference, check_name};

/// A composite app's spec.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompositeAppSpec {
    /// The version its first version is created under.
    #[schemars(pattern(NAME_PATTERN))]
    pub composite_app_version: String,
}

impl Spec for CompositeAppSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.compositeAppVersion", &self.composite_app_version)?;
        Ok(Vec::new())
    }
}

/// An app's dependency on another app of its composite app.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DependencySpec {
    /// The app depended on.
    #[schemars(pattern(NAME_PATTERN))]
    pub app: String,
    /// What the other app must have reached.
    #[serde(default)]
    pub op_status: OpStatus,
    /// Seconds to wait after it has.
    #[serde(default)]
    pub wait: u64,
}

impl Spec for DependencySpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.app", &self.app)?;
        Ok(vec![scope.app("spec.app", &self.app)])
    }
}

/// What an app waits for in the app it depends on (EMCO's `opStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum OpStatus {
    /// Its resources are ready on every cluster.
    #[default]
    Ready,
    /// Its resources are applied on every cluster.
    Deployed,
}

/// An app profile: the values file for one app.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppProfileSpec {
    /// The app it is for.
    #[schemars(pattern(NAME_PATTERN))]
    pub app: String,
}

impl Spec for AppProfileSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.app", &self.app)?;
        Ok(vec![scope.app("spec.app", &self.app)])
    }
}
