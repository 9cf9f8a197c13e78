//! One emcoctl document, as read from its file.

use std::path::PathBuf;

use serde_json::Value;

/// One emcoctl document.
#[derive(Debug, Clone)]
pub struct Document {
    /// Where it came from: `file.yaml#2`.
    pub origin: String,
    /// Its anchor, relative to `/v2`.
    pub anchor: String,
    /// `metadata`.
    pub metadata: Option<Value>,
    /// `spec`.
    pub spec: Option<Value>,
    /// A label document's `clusterLabel`.
    pub cluster_label: Option<String>,
    /// `files` then `file`, resolved against the document's directory.
    pub files: Vec<PathBuf>,
    /// Whether the document gave `files` (a list) rather than `file`: an
    /// intent kind of `files` body takes them as `files` parts.
    pub many: bool,
    /// Why wasmco cannot do what the document asks, found when reading it
    /// (fields it does not know, several files).
    pub unsupported: Option<String>,
}

impl Document {
    /// `metadata.name`, when the document has one.
    pub fn name(&self) -> Option<&str> {
        self.metadata.as_ref()?.get("name")?.as_str()
    }
}
