//! How a spec is read and checked: each kind's type says what it must
//! satisfy beyond its shape, given where its body sits.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::document::{FieldError, Reference, from_value};
use crate::kinds::Kind;

/// A stored spec as `T`; an error names the field at fault under `spec`.
pub fn read_spec<T: DeserializeOwned>(spec: &Value) -> Result<T, FieldError> {
    from_value(spec, "spec")
}

/// An action's request body read as `T`, a problem named by its field.
pub fn read_body<T: DeserializeOwned>(body: &Value) -> Result<T, FieldError> {
    from_value(body, "").map_err(|e| match e.field.as_str() {
        "" => FieldError::new("body", e.reason),
        _ => e,
    })
}

/// Where a body sits: its parent's path values.
pub(super) struct Scope<'a> {
    pub(super) parent: &'a [String],
}

impl Scope<'_> {
    /// A reference from `field` to the `kind` named `name` in the enclosing
    /// composite app version (an app, a composite profile).
    pub(super) fn in_version(&self, field: impl Into<String>, kind: Kind, name: &str) -> Reference {
        let mut path = self.parent[..3].to_vec();
        path.push(name.to_owned());
        Reference {
            field: field.into(),
            kind,
            path,
        }
    }

    /// A reference from `field` to app `app` of the enclosing composite app
    /// version.
    pub(super) fn app(&self, field: impl Into<String>, app: &str) -> Reference {
        self.in_version(field, Kind::App, app)
    }
}

/// A kind's spec: what it must satisfy beyond its shape, and what it names.
pub(super) trait Spec: DeserializeOwned {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError>;
}

pub(super) fn checked<T: Spec>(
    spec: &Value,
    scope: &Scope<'_>,
) -> Result<Vec<Reference>, FieldError> {
    read_spec::<T>(spec)?.check(scope)
}
