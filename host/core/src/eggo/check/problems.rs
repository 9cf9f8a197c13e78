//! The list of problems a check collects.

use crate::document::FieldError;

/// Problems found so far.
#[derive(Default)]
pub(super) struct Problems {
    found: Vec<FieldError>,
}

impl Problems {
    /// Records that `field` is refused for `reason`.
    pub(super) fn add(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.found.push(FieldError::new(field, reason));
    }

    /// Records `result`'s error, if any, against `field`.
    pub(super) fn test<T>(&mut self, field: &str, result: Result<T, String>) {
        if let Err(reason) = result {
            self.add(field, reason);
        }
    }

    /// Records `result`'s error against `field` unless `value` is empty
    /// (Eggo's default then applies).
    pub(super) fn test_set<T>(
        &mut self,
        field: &str,
        value: &str,
        check: impl FnOnce(&str) -> Result<T, String>,
    ) {
        if !value.is_empty() {
            self.test(field, check(value));
        }
    }

    /// What was found.
    pub(super) fn into_vec(self) -> Vec<FieldError> {
        self.found
    }
}
