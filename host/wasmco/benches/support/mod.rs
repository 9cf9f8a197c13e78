//! Filling a resource database directly, for benchmarks that need inputs
//! without going through HTTP.

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_store::db::{ResourceDb, ResourceId, Write};

/// Stores a resource of `kind` at `path` (its name is its own path value),
/// with `spec` and an optional multipart `file`.
pub fn create(db: &ResourceDb, kind: Kind, path: &[&str], spec: Value, file: Option<Vec<u8>>) {
    let name = path.get(kind.parent_arity()).copied().unwrap_or_default();
    let body = if kind == Kind::ClusterLabel {
        json!({ "clusterLabel": name })
    } else {
        json!({"metadata": {"name": name}, "spec": spec})
    };
    let id = ResourceId::new(kind, path.iter().map(|s| s.to_string()).collect());
    db.create(
        &id,
        Write {
            body,
            references: Vec::new(),
            file,
        },
    )
    .expect("create");
}
