//! Kubernetes resource quantities (`500m`, `2`, `64Gi`, `1.5G`, `1e3`).

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use core::fmt;
use core::str::FromStr;

/// A quantity, kept exactly in thousandths of a unit so `500m` and `0.5`
/// compare equal; the text is kept for messages.
#[derive(Debug, Clone)]
pub struct Quantity {
    millis: u128,
    text: String,
}

impl Quantity {
    /// The amount in thousandths of a unit (`500m` is 500, `2` is 2000).
    pub fn millis(&self) -> u128 {
        self.millis
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.millis == other.millis
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.millis.cmp(&other.millis))
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Multiplier of a suffix, in thousandths.
fn suffix_millis(suffix: &str) -> Option<u128> {
    const KI: u128 = 1024;
    Some(match suffix {
        "m" => 1,
        "" => 1_000,
        "k" => 1_000_000,
        "M" => 1_000_000_000,
        "G" => 1_000_000_000_000,
        "T" => 1_000_000_000_000_000,
        "P" => 1_000_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000_000,
        "Ki" => KI * 1_000,
        "Mi" => KI.pow(2) * 1_000,
        "Gi" => KI.pow(3) * 1_000,
        "Ti" => KI.pow(4) * 1_000,
        "Pi" => KI.pow(5) * 1_000,
        "Ei" => KI.pow(6) * 1_000,
        _ => return None,
    })
}

impl FromStr for Quantity {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("{text:?} is not a Kubernetes quantity");
        let number_len = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, suffix) = text.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let multiplier = match suffix.strip_prefix(['e', 'E']) {
            Some(exponent) if !exponent.is_empty() => {
                let exponent: u32 = exponent.parse().map_err(|_| invalid())?;
                10u128
                    .checked_pow(exponent)
                    .and_then(|m| m.checked_mul(1_000))
            }
            _ => suffix_millis(suffix),
        }
        .ok_or_else(invalid)?;
        let digits = format!("{whole}{fraction}");
        let scaled: u128 = digits.parse().map_err(|_| invalid())?;
        let divisor = 10u128
            .checked_pow(fraction.len() as u32)
            .ok_or_else(invalid)?;
        let millis = scaled.checked_mul(multiplier).ok_or_else(invalid)? / divisor;
        Ok(Quantity {
            millis,
            text: text.to_owned(),
        })
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Quantity {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use alloc::string::ToString;
        let value = serde_json::Value::deserialize(deserializer)?;
        let text = match value {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => n.to_string(),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "{other} is not a quantity"
                )));
            }
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    fn q(s: &str) -> Quantity {
        s.parse().unwrap()
    }

    #[test]
    fn suffixes_compare_by_value() {
        assert!(q("500m") == q("0.5"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("1.5k") == q("1500"));
        assert!(q("1e3") == q("1k"));
        assert!(q("64Gi") > q("4Gi"));
    }

    #[test]
    fn garbage_is_refused() {
        for bad in ["", "abc", "1x", "--1", "1.2.3"] {
            assert!(bad.parse::<Quantity>().is_err(), "{bad}");
        }
    }
}
