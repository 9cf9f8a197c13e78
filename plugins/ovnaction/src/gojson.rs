//! JSON read and written the way Go's `encoding/json` does, so that the
//! annotation values ovnaction writes are byte for byte the ones EMCO's
//! Go controller writes (users diff them).
//!
//! Reading keeps an object's members in document order, because Go assigns
//! struct fields member by member (a later duplicate wins, a `null` leaves
//! the field alone) and matches member names case-insensitively. Writing
//! escapes as Go does (`<`, `>`, `&` as `\u003c`…) and formats numbers that
//! went through a Go `float64`.

use std::fmt::{self, Write as _};

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

/// A JSON value whose objects keep their members in document order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses `text`; errors are JSON syntax errors.
    pub(crate) fn parse(text: &str) -> Result<Json, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// What Go's `%T`-less error messages call the value's type.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "bool",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Json, E> {
        Ok(Json::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Json, E> {
        Ok(Json::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Json, E> {
        Ok(Json::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(value)
            .map(Json::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Json, E> {
        Ok(Json::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Json, E> {
        Ok(Json::String(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Json>()? {
            members.push(member);
        }
        Ok(Json::Object(members))
    }
}

/// Whether the member name `key` selects the struct field tagged `field`
/// (an ASCII name), as Go's decoder decides when no tag equals `key`
/// exactly: case-insensitively, with `ſ` (U+017F) folding to `s` and the
/// Kelvin sign (U+212A) to `k`.
pub(crate) fn folds_to(key: &str, field: &str) -> bool {
    let mut wanted = field.chars();
    for found in key.chars() {
        let Some(expected) = wanted.next() else {
            return false;
        };
        let same = found.eq_ignore_ascii_case(&expected)
            || (found == '\u{17f}' && expected.eq_ignore_ascii_case(&'s'))
            || (found == '\u{212a}' && expected.eq_ignore_ascii_case(&'k'));
        if !same {
            return false;
        }
    }
    wanted.next().is_none()
}

/// Which of `fields` the member name `key` sets: the one spelled exactly
/// so, else the first that folds to it.
pub(crate) fn field_for<'a>(key: &str, fields: &[&'a str]) -> Option<&'a str> {
    fields
        .iter()
        .find(|field| **field == key)
        .or_else(|| fields.iter().find(|field| folds_to(key, field)))
        .copied()
}

/// Appends `text` as a JSON string, escaped as Go's `json.Marshal` does.
pub(crate) fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Go escapes every other control character, the HTML
            // specials and the two JavaScript line separators.
            '\u{0}'..='\u{1f}' | '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            _ => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `value` as Go writes a `float64`: shortest round-trip digits,
/// in exponent form (`1e+21`, `1e-7`) only below 1e-6 or from 1e21 up.
pub(crate) fn write_float(out: &mut String, value: f64) {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
        let text = format!("{value:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{exponent}");
            }
            _ => out.push_str(&text),
        }
    } else {
        let _ = write!(out, "{value}");
    }
}

/// Appends `value` as Go writes what it decoded into an `interface{}`:
/// numbers went through `float64`, objects became maps (members sorted by
/// name, a later duplicate winning).
pub(crate) fn write_any(out: &mut String, value: &Json) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(true) => out.push_str("true"),
        Json::Bool(false) => out.push_str("false"),
        Json::Number(number) => write_float(out, number.as_f64().unwrap_or_default()),
        Json::String(text) => write_string(out, text),
        Json::Array(items) => {
            out.push('[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                write_any(out, item);
            }
            out.push(']');
        }
        Json::Object(members) => write_map(out, members),
    }
}

/// Appends `members` as Go writes a `map[string]interface{}`.
pub(crate) fn write_map(out: &mut String, members: &[(String, Json)]) {
    let mut sorted: Vec<&(String, Json)> = Vec::with_capacity(members.len());
    // Later duplicates replace earlier ones, as map assignment does.
    for member in members {
        match sorted.iter_mut().find(|kept| kept.0 == member.0) {
            Some(kept) => *kept = member,
            None => sorted.push(member),
        }
    }
    sorted.sort_by(|left, right| left.0.cmp(&right.0));
    out.push('{');
    for (position, (name, value)) in sorted.into_iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        write_string(out, name);
        out.push(':');
        write_any(out, value);
    }
    out.push('}');
}
