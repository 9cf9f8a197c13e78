//! The resource database: the API's resources over a [`KvStore`](crate::KvStore).
//!
//! Only this module knows the key layout:
//!
//! ```text
//! res/<kind>/<path…>                 the resource's JSON body
//! file/<kind>/<path…>                its multipart file (kubeconfig, .wasm, manifests)
//! ref/<target key>\0<referrer key>   "referrer names target" (field name as value)
//! out/<referrer key>\0<target key>   the same, indexed from the referrer
//! token/<name>                       a scoped API token (its hash, never the secret)
//! meta/db-writes                     how many writes the database has taken
//! ```
//!
//! Writes are serialised, so the checks that make a write valid (parent
//! exists, name free, references resolve, nothing refers to what is
//! deleted) cannot race with another write; each write is one atomic,
//! durable batch. Within a process a lock does it; across the hosts that
//! share one store, each write also moves `meta/db-writes` on from the
//! value its checks saw, and is checked again if another host's write
//! moved it first. Every host watches that key to drop its list cache.

mod cache;
mod database;
mod delete;
mod error;
mod id;
mod read;
mod references;
mod sealed;
#[cfg(test)]
mod tests;
mod tokens;
mod write;

pub use database::ResourceDb;
pub use error::DbError;
pub use id::ResourceId;
pub use tokens::TokenError;
pub use write::Write;
