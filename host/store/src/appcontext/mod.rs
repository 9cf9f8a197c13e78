//! AppContexts in the store, and the deployment state of each DIG.
//!
//! Key layout (this module owns the `ctx/` key space):
//!
//! ```text
//! ctx/<dig>/state                          DigState: current state, revision, history
//! ctx/<dig>/footprint                      every cluster and kind any revision put objects on, grouped by kinds
//! ctx/<dig>/rev/<revision>/meta            ContextMeta: inputs, app order, dependencies
//! ctx/<dig>/rev/<revision>/app/<app>/base  the app's manifests (once per app)
//! ctx/<dig>/rev/<revision>/app/<app>/placement  the app's clusters and their anyOf groups
//! ctx/<dig>/rev/<revision>/app/<app>/order  resorder and resdependency (CRDs before the rest)
//! ctx/<dig>/rev/<revision>/app/<app>/diff/<provider>+<cluster>  only what differs on that cluster
//! ctx/<dig>/rev/<revision>/app/<app>/hooks  the app's Helm hooks, by weight
//! ctx/<dig>/hooks/<app>/<provider>+<cluster>  the hook events already run there
//! ctx/<dig>/rev/<revision>/status/…        reserved for rsync's per-resource and per-cluster status
//! ctx/<dig>/rev/<revision>/tally/<app>/<provider>+<cluster>  rsync's count of that app's statuses there
//! ctx/<dig>/reconciled                     how many actions rsync had seen at its last whole pass
//! ctx/<dig>/note                           why a step after the deploy could not be done (a message)
//! health/<provider>+<cluster>             ClusterHealth: what rsync's probe last saw
//! held/<space>/<name>                      the host holding a name taken once (a namespace, say)
//! ```
//!
//! A revision is written in one batch together with the state that points
//! at it, so a context is either whole and current or absent.

mod error;
mod footprint;
mod handoff;
mod health;
mod held;
mod model;
mod progress;
mod revision;
mod state;
mod store;

pub use error::ContextError;
pub use footprint::Footprint;
pub use handoff::{ClusterFacts, NoSync, ReconcileListener, SyncEngine};
pub use model::{
    Access, ContextMeta, RolloutPlan, ServiceMirror, StoredApp, StoredContext, StoredPlacement,
};
pub use progress::{StatusCell, Tally};
pub use state::{DigState, now};
pub use store::{ContextStore, Fence};
pub use wasmco_core::wire::{
    AppDependency, ClusterHealth, Connectivity, DeployState, Deployed, Drift, DriftKind,
    Reachability, Readiness, ResourceStatus, StateAction,
};
