//! The names Kubernetes accepts where a body carries one: label keys and
//! values, and namespace names. EMCO's own names follow [`crate::names`].

use crate::document::FieldError;

/// A Kubernetes label: its key an optional DNS subdomain prefix and `/`
/// and a name; its value empty or a name (at most 63 characters each, of
/// letters, digits, `-`, `_` and `.`, alphanumeric at both ends).
pub fn check_label(field: &str, key: &str, value: &str) -> Result<(), FieldError> {
    fn name_ok(name: &str) -> bool {
        name.len() <= 63
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
    }
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|prefix| {
        prefix.len() <= 253
            && prefix
                .split('.')
                .all(|part| check_dns_label(field, part).is_ok())
    });
    if !prefix_ok || !name_ok(name) {
        return Err(FieldError::new(
            field,
            format!(
                "{key:?} is not a Kubernetes label key ([prefix/]name, name at most 63 of letters, digits, '-', '_', '.')"
            ),
        ));
    }
    if !value.is_empty() && !name_ok(value) {
        return Err(FieldError::new(
            field,
            format!(
                "{value:?} is not a Kubernetes label value (at most 63 of letters, digits, '-', '_', '.')"
            ),
        ));
    }
    Ok(())
}

/// A Kubernetes DNS-1123 label (namespace names).
pub fn check_dns_label(field: &str, value: &str) -> Result<(), FieldError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!(
                "{value:?} is not a Kubernetes namespace name (lower-case letters, digits, '-', at most 63)"
            ),
        ))
    }
}
