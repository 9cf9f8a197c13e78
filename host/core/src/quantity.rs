//! Kubernetes resource quantities (`500m`, `2`, `64Gi`, `1.5G`, `1e3`), as
//! the host reads them from clusters. Guests have the same reading in the
//! SDK (`wasmco_guest::quantity`); the host does not depend on guest code.

/// A quantity in thousandths of its unit (`500m` is 500, `1Ki` is
/// 1,024,000); `None` when the text is not a quantity or overflows.
pub fn millis(text: &str) -> Option<u128> {
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let multiplier = match suffix.strip_prefix(['e', 'E']) {
        Some(exponent) if !exponent.is_empty() => 10u128
            .checked_pow(exponent.parse().ok()?)?
            .checked_mul(1_000)?,
        _ => suffix_millis(suffix)?,
    };
    let scaled: u128 = format!("{whole}{fraction}").parse().ok()?;
    let divisor = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    Some(scaled.checked_mul(multiplier)? / divisor)
}

/// Thousandths per unit of a suffix.
fn suffix_millis(suffix: &str) -> Option<u128> {
    let binary = |power: u32| 1024u128.pow(power) * 1_000;
    let decimal = |power: u32| 1_000u128.pow(power) * 1_000;
    Some(match suffix {
        "m" => 1,
        "" => 1_000,
        "k" => decimal(1),
        "M" => decimal(2),
        "G" => decimal(3),
        "T" => decimal(4),
        "P" => decimal(5),
        "E" => decimal(6),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::millis;

    #[test]
    fn suffixes_scale_by_their_unit() {
        assert_eq!(millis("500m"), Some(500));
        assert_eq!(millis("0.5"), Some(500));
        assert_eq!(millis("2"), Some(2_000));
        assert_eq!(millis("1Ki"), Some(1_024_000));
        assert_eq!(millis("1.5k"), Some(1_500_000));
        assert_eq!(millis("1e3"), millis("1k"));
        assert_eq!(millis("32Gi"), Some(32 * 1024 * 1024 * 1024 * 1000));
        for bad in ["", "x", "1Zi", ".", "1e"] {
            assert_eq!(millis(bad), None, "{bad}");
        }
    }
}
