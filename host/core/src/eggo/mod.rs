//! Eggo's deploy file (openEuler's cluster deployment tool): the typed
//! document, the refusals Eggo itself makes on it, and the template its
//! `eggo template` command writes. Users hand wasmco their Eggo files
//! unchanged, so keys, spellings and defaults follow Eggo, not wasmco.

mod check;
mod defaults;
pub mod eggops;
mod hosts;
mod install;
mod membership;
mod model;
mod parse;
mod serde_shapes;
mod syntax;
mod template;
mod whitelist;

#[cfg(test)]
mod tests;

pub use check::KNOWN_EXTRA_ARGS_NAMES;
pub use defaults::{DEFAULT_APISERVER_PORT, DEFAULT_ARCH, DEFAULT_CLUSTER_ID, DEFAULT_SSH_PORT};
pub use hosts::{HostConfig, LoadBalance};
pub use install::{
    DEFAULT_SHELL_TIMEOUT, Install, Package, PackageSource, PackageType, RolePackages, Schedule,
};
pub use membership::JoinFile;
pub use model::{
    ApiServerSans, CorednsType, DeployConfig, DnsConfig, ExtraArgs, Network, OpenPort, Protocol,
    RolePorts, ServiceCluster,
};
pub use parse::{parse, to_yaml};
pub use syntax::parse_go_duration;
pub use template::template;
pub use whitelist::{DST_DIRS, DST_SUBDIRS, dst_allowed};
