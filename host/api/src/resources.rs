//! Create, read, update and delete for every kind of the table, in steps:
//! read the body, check it, check its file, write it.

mod delete;
mod incoming;
mod multipart;
mod path;
mod prepare;
mod read;
mod request;
mod write;

pub use delete::delete;
pub(crate) use multipart::parse_multipart_parts;
pub use path::PathValues;
pub use read::{ItemQuery, ListQuery, get_one, list};
pub(crate) use read::{json_array, json_response};
pub(crate) use request::{content_type, expect_json};
pub use write::{create, update};
