//! What the store's writes take besides objects, and what they tell
//! watchers.

use serde_json::Value;

/// How a PATCH body is to be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// Server-side apply (`application/apply-patch+yaml`).
    Apply,
    /// RFC 7386 (`application/merge-patch+json`).
    Merge,
    /// Strategic merge (treated as a merge patch here).
    Strategic,
    /// RFC 6902 (`application/json-patch+json`).
    Json,
}

/// The changes a write made, for watchers.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'static str,
    /// The type's group and plural.
    pub resource: (String, String),
    /// The object after the change (before it, for `DELETED`).
    pub object: Value,
    /// The resourceVersion the change made.
    pub revision: u64,
}
