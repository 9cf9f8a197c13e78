//! What each phase puts on a machine and runs there, as a list of steps.
//! Rendering is pure (no node, no clock), so a plan can be tested and
//! compared; every step is safe to run again, which is what lets a deploy
//! resume at the phase where it stopped.

mod cleanup;
mod control_plane;
mod etcd;
mod infrastructure;
mod network;
mod packages;
mod step;
mod worker;

pub use cleanup::{postcleanup, teardown};
pub use control_plane::{bootstrap_rbac, control_plane};
pub use etcd::{etcd, remove_member};
pub use infrastructure::{Archive, infrastructure};
pub use network::{bridge, forget_routes};
pub use packages::{PACKAGE_DIR, hooks, is_url, left_out, packages_for, url_addons};
pub use step::{CONFIG_DIR, Plan, STAMPS, Step, socket};
pub use worker::{worker_prepare, worker_start};
