//! Service discovery, EMCO dtc's sds: once a deployed server app is ready,
//! its clients' clusters learn where to reach its Service.
//!
//! What to make known comes from the traffic group intents the DIG hands
//! its dtc controller: each inbound intent names a server app and its
//! `serviceName`, and its clients name client apps. They are read when the
//! context is built and kept in its meta
//! ([`wasmco_store::appcontext::ServiceMirror`]).
//!
//! The work is done after the deploy, each time rsync finishes reconciling
//! the DIG (it tells [`crate::Background`]'s follow-ups, as EMCO's rsync
//! tells sds through its ready notifications), since it needs what only the clusters know: the
//! Service as the server's cluster holds it (a NodePort's node port on the
//! first IP address of the cluster's first node, or a LoadBalancer's port
//! on its ingress address) once every resource of the server app there is
//! ready. Each client cluster that is not a server cluster then gets a
//! Service of that name without a selector, and its Endpoints, in the
//! DIG's namespace and with the DIG's access, as a context of its own under
//! [`mirror_key`], deployed by rsync like any other. It is written again
//! only when what it holds changes, which also follows an update (clusters
//! that no longer hold a client lose it) and a host restart (rsync's first
//! reconcile tells again); a terminate or stop of the DIG does the same to
//! it.
//!
//! A server that cannot be read for a while (its cluster unreachable, a
//! rollout under way) keeps what its clients have; only what cannot work
//! (a Service of another type, one the server app does not deploy) takes
//! it away. Either way the reason is in the DIG's status.
//!
//! Where EMCO differs: its sds waits on a goroutine that a restart loses,
//! leaves the objects of an update's old clients behind, builds objects
//! without a name when the Service is missing, points the Endpoints at the
//! Service's port where a NodePort is served on its node port, and drops
//! the ports' protocol; it also takes any Service of that name. Here the
//! Service must be one the server app deploys, and every server cluster is
//! a subset of the one Endpoints.

mod mirror;
mod objects;
mod serving;
mod wanted;

pub(crate) use mirror::{Follow, Mirrors};
pub use mirror::{MIRROR_APP, mirror_key};
pub(crate) use wanted::mirrors_in;
