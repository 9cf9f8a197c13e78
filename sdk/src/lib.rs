//! Helpers for wasmco controllers written in Rust.
//!
//! A request carries its strings once, in byte order, as one `data` string
//! and a list of end offsets (see `wit/controller.wit`); records refer to
//! them by index. [`StringTable`] reads that table: [`StringTable::get`] turns
//! an index into the `&str`, [`StringTable::find`] an `&str` into its index by
//! binary search, so a controller compares numbers in its hot loops.
//!
//! The crate works on plain slices so that it serves the bindings generated
//! in each controller crate.

#![no_std]

extern crate alloc;

mod clusters;
mod columns;
#[cfg(feature = "intents")]
pub mod intents;
mod nodes;
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod one_call;
mod placement;
#[cfg(feature = "serde")]
pub mod pods;
pub mod quantity;
pub mod records;
mod scan;
mod strings;
pub mod testing;

pub use clusters::Clusters;
pub use nodes::Nodes;
#[cfg(target_arch = "wasm32")]
pub use one_call::OneCallAllocator;
pub use placement::{NO_GROUP, group_column, placed};
pub use strings::StringTable;
