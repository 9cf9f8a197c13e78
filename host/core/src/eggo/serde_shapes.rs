//! How Eggo's Go YAML reader treats absent and empty values, for serde:
//! an explicit `null` is the zero value, and `""` for a closed vocabulary
//! means "not set" (Go writes unset strings as `""` when it saves a file).

use serde::{Deserialize, Deserializer};

/// A collection or block written as `key:` with nothing (YAML null) is
/// empty, as Go's reader leaves it.
pub(super) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// An optional closed-vocabulary value where `""` and `null` mean unset.
pub(super) fn empty_as_none<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr<Err = String>,
{
    match Option::<String>::deserialize(deserializer)? {
        None => Ok(None),
        Some(text) if text.is_empty() => Ok(None),
        Some(text) => text.parse().map(Some).map_err(serde::de::Error::custom),
    }
}

/// Skips a block that holds nothing when writing.
pub(super) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Skips a zero number or `false` when writing.
pub(super) fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// Skips `false` when writing.
pub(super) fn is_false(value: &bool) -> bool {
    !*value
}
