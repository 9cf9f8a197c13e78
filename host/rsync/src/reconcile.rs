//! One reconcile of one target: make each cluster hold what the target's
//! current revision puts there (or nothing, once terminated), and record
//! what each holds.

mod apply;
mod claim;
mod clean;
mod cluster;
mod csr;
mod hooks;
mod reconciler;
mod resource;
mod run;
mod settled;

pub(crate) use reconciler::Reconciler;
pub(crate) use run::{reconcile, repair};
pub(crate) use settled::{Look, Settled};
