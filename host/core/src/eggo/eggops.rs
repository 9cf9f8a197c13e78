//! Eggops, Eggo's API mode: machines registered once (`Machine`), what
//! machines are installed with (`Infrastructure`), and clusters requested
//! by how many masters and workers they need and which labels those carry
//! (`Cluster`), with the login (a `Secret`) their machines take. The
//! documents are Eggops' own (`eggo.isula.org/v1`); a request becomes an
//! Eggo deploy file once its machines are picked.

mod documents;
mod machines;
mod request;
#[cfg(test)]
mod tests;

pub use documents::{API_VERSION, EggopsDocument, MachineLogin, document};
pub use machines::{MachineSpec, Picked, Requirement, pick};
pub use request::{ClusterRequestSpec, InfrastructureSpec, ObjectRef, Role};
