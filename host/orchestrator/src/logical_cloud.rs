//! Logical clouds (EMCO's dcm): a namespace, a Role, a RoleBinding for a
//! user and a ResourceQuota in every referenced cluster, and for each
//! cluster a kubeconfig whose client certificate comes from that cluster's
//! CA. They travel to the clusters the way an app does: as a one-app
//! context handed to rsync, so status, retries and resume come with it.
//!
//! An admin cloud (EMCO's level 0) uses the clusters' own kubeconfigs and
//! makes nothing on them: its context places an empty app on them.

mod build;
mod lifecycle;
mod manifests;

pub(crate) use lifecycle::LogicalClouds;
