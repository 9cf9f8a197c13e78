//! EMCO's rule for the names of API resources.

/// The rule, as error messages state it.
pub const NAME_RULE: &str = "1 to 128 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit";

/// Whether `name` follows EMCO's naming rule.
pub fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::is_valid_name;

    #[test]
    fn emco_example_names_pass_and_bad_ones_fail() {
        for good in [
            "vfw_composite-profile",
            "fw-placement-intent",
            "a",
            "v1.2",
            "A9",
        ] {
            assert!(is_valid_name(good), "{good}");
        }
        let long = "a".repeat(129);
        for bad in ["", "-a", "a-", "a b", "a/b", "é", "_x", long.as_str()] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }
}
