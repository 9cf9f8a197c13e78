//! The shapes the checks hold names to, as JSON Schema patterns, so that a
//! spec's schema says what its type's `check` refuses wherever a pattern
//! can say it.

/// EMCO's naming rule (`check_name`).
pub const NAME_PATTERN: &str = "^[A-Za-z0-9]([A-Za-z0-9_.-]{0,126}[A-Za-z0-9])?$";

/// A Kubernetes namespace's (a DNS-1123 label's) shape (`check_dns_label`).
pub const NAMESPACE_PATTERN: &str = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";

/// A name, or `""` for none.
pub const NAME_OR_EMPTY_PATTERN: &str = "^$|^[A-Za-z0-9]([A-Za-z0-9_.-]{0,126}[A-Za-z0-9])?$";

/// A namespace, or `""` for none (or, for a permission, the whole cluster).
pub const NAMESPACE_OR_EMPTY_PATTERN: &str = "^$|^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";

/// A label's key (`check_label`): an optional DNS prefix and a name.
pub const LABEL_KEY_PATTERN: &str = "^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?){0,2}/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$";

/// A label's value (`check_label`), which may be empty.
pub const LABEL_VALUE_PATTERN: &str = "^([A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?)?$";

/// A logical cloud's user: no `/`, no control characters.
pub const USER_NAME_PATTERN: &str = "^[^/\\u0000-\\u001f\\u007f-\\u009f]+$";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_or_empty_patterns_are_their_patterns_or_nothing() {
        assert_eq!(NAME_OR_EMPTY_PATTERN, format!("^$|{NAME_PATTERN}"));
        assert_eq!(
            NAMESPACE_OR_EMPTY_PATTERN,
            format!("^$|{NAMESPACE_PATTERN}")
        );
    }
}
