//! What wasmco keeps: the resource database ([`db`]), secrets sealed at rest
//! ([`secrets`]) and the AppContext revisions with the hand-off port between
//! the orchestrator and rsync ([`appcontext`]), all over the [`KvStore`]
//! trait, so none of them depends on one engine. sled (embedded, one
//! directory) is the default.
//!
//! Durability: every mutating call returns only after the change is on disk
//! (sled's `flush`, an fsync), so a write the API acknowledged survives a
//! crash of the process or the machine.

pub mod appcontext;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
pub mod db;
mod error;
mod etcd_store;
pub mod hosts;
mod kv;
pub mod metrics;
pub mod secrets;
mod sled_store;

pub use error::StoreError;
pub use etcd_store::{EtcdHosts, EtcdOptions, EtcdStore};
pub use kv::{BatchOp, Change, Entry, Expect, KvStore, OnChange};
pub use sled_store::SledStore;

#[cfg(test)]
mod tests;
