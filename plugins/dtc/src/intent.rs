//! The specs of dtc's intent kinds, as far as the network policy reads them.
//!
//! The host has checked each spec against `intents.json`, so a field the
//! schema requires is there; the fields only other sub-controllers would
//! read (`serviceMesh`, `management`, `external`, `namespaces`, …) are left
//! out and ignored.

use serde::{Deserialize, Deserializer};

/// An inbound intent's spec: the server side of the traffic.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboundSpec {
    pub app: String,
    pub app_label: String,
    pub port: u16,
    pub protocol: String,
    #[serde(default, deserialize_with = "flag")]
    pub external_support: bool,
}

/// An inbound clients intent's spec: one client of the server.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientsSpec {
    #[serde(default)]
    pub app_label: String,
    #[serde(default)]
    pub cidrs: Vec<String>,
}

/// A boolean that EMCO's example files also write as "true" / "false".
fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Flag {
        Bool(bool),
        Text(String),
    }
    match Flag::deserialize(deserializer)? {
        Flag::Bool(value) => Ok(value),
        Flag::Text(text) if text == "true" => Ok(true),
        Flag::Text(text) if text == "false" => Ok(false),
        Flag::Text(text) => Err(serde::de::Error::custom(format!(
            "{text:?} is not true or false"
        ))),
    }
}

/// Splits a pod label written `key=value`; `None` unless there is exactly
/// one `=` with text on both sides.
pub fn label(text: &str) -> Option<(&str, &str)> {
    let (key, value) = text.split_once('=')?;
    (!key.is_empty() && !value.is_empty() && !value.contains('=')).then_some((key, value))
}
