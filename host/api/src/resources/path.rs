//! A request's path, as the kind table's routes give it.

use axum::extract::Path;

/// Path parameters in route order.
pub type PathValues = Path<Vec<(String, String)>>;

/// The path's values, in route order.
pub(super) fn values(path: PathValues) -> Vec<String> {
    path.0.into_iter().map(|(_, v)| v).collect()
}
