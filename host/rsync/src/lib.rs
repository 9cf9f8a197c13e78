//! rsync: makes clusters match the AppContexts the orchestrator hands it,
//! and keeps them matching.
//!
//! It follows kube-runtime's controller model. Each target (a DIG, a
//! logical cloud) has one worker that reconciles towards the target's
//! *latest* desired state: its current revision, or nothing once it is
//! terminated. A hand-off only nudges the worker; a nudge during a
//! reconcile stops it at its next step, and the worker starts again from
//! the new state, so no two reconciles of one target ever run at once and
//! a superseded revision is never written after its successor.
//!
//! A reconcile is level-triggered: it lists what the target's labels find
//! on each cluster, applies what is missing or has drifted, and deletes
//! what no longer belongs. Apps go in app order; an app's clusters in
//! parallel (bounded, in a `JoinSet` owned by the reconcile); on a cluster,
//! CRDs first, then namespaces, then the rest, several applies at a time.
//!
//! What starts a reconcile besides a hand-off: a watch seeing someone
//! change or delete a target's object (drift), the resync interval (with
//! jitter) as the safety net, backoff after a reconcile that did not
//! finish, and a cluster whose probe finds it back after being away.

mod clients;
mod config;
mod credentials;
mod drift;
mod engine;
mod error;
mod facts;
mod health;
pub mod metrics;
mod owner;
mod ownership;
mod reconcile;
mod repairs;
mod stored;
pub mod target;
mod tasks;
mod watch;
mod worker;

pub use config::RsyncConfig;
pub use engine::Rsync;
pub use error::RsyncError;
pub use owner::{
    ADOPTED_ANNOTATION, APP_LABEL, DIG_LABEL, FORCE_ANNOTATION, HOOK_LABEL, OWNER_ANNOTATION,
    owner_label,
};
pub use target::{ApplyAs, DirectoryTarget, KubeTarget, Labels, SyncError, SyncTarget};
