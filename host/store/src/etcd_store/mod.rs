//! The [`KvStore`](crate::KvStore) over etcd, for several wasmco hosts
//! sharing one store.
//!
//! The trait is synchronous and is called from tokio workers as well as
//! blocking threads, so the store drives etcd-client on a runtime of its
//! own and each call waits on a channel for its answer (a runtime's
//! `block_on` would panic inside another runtime).

mod chunks;
mod connection;
mod failure;
mod hosts;
mod kv_store;
mod read;
mod watch;
mod write;

pub use connection::{EtcdOptions, EtcdStore};
pub use hosts::EtcdHosts;
