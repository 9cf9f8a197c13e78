//! What the orchestrator acts on, by name: a DIG, a logical cloud, a
//! cluster's network intents, a caCert. Each is a context in the store
//! under a key of its own; the names are kept apart from the lifecycles so
//! that every concern can name every other's targets without importing it.

mod ca_cert;
mod deployed;
mod dig;
mod logical_cloud;
mod network;

pub use ca_cert::{CaCertRef, CaCertScope, CertStage};
pub(crate) use deployed::Deployed;
pub use dig::DigRef;
pub(crate) use logical_cloud::CLOUD_APP;
pub use logical_cloud::LogicalCloudRef;
pub(crate) use network::NETWORK_COMPOSITE_APP;
pub use network::NetworkSetRef;
