//! A logical cloud user's kubeconfigs: read for the DIGs deployed in a
//! standard cloud, and made from the certificate a cluster issued for the
//! user's request (EMCO's rsync approves that request and reads the
//! certificate back).

use std::sync::Arc;

use wasmco_core::cloud::{CONTEXT_COMPOSITE_APP, KUBECONFIG_SECRET, USER_KEY_SECRET};
use wasmco_core::specs::{ClusterReferenceSpec, LogicalCloudSpec};
use wasmco_core::{ClusterRef, Kind};
use wasmco_pki::KeyedCert;
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_store::appcontext::ContextMeta;
use wasmco_store::db::{ResourceDb, ResourceId};

use crate::target::SyncError;

fn store_error(error: impl std::fmt::Display) -> SyncError {
    SyncError::Config(error.to_string())
}

/// The stored kubeconfigs of logical cloud users.
pub(crate) struct Credentials {
    db: ResourceDb,
    /// What a cluster's kubeconfig may ask of this host.
    kubeconfigs: Arc<KubeconfigPolicy>,
}

impl Credentials {
    pub(crate) fn new(db: ResourceDb, kubeconfigs: Arc<KubeconfigPolicy>) -> Self {
        Credentials { db, kubeconfigs }
    }

    /// The user of `project`'s logical cloud `cloud` on `cluster`: not yet
    /// there while the cluster has not issued its certificate.
    pub(crate) fn cloud_user_kubeconfig(
        &self,
        project: &str,
        cloud: &str,
        cluster: &ClusterRef,
    ) -> Result<Vec<u8>, SyncError> {
        let reference = self.cluster_reference(project, cloud, cluster)?;
        self.db
            .secret(&reference, KUBECONFIG_SECRET)
            .map_err(store_error)?
            .ok_or_else(|| {
                SyncError::NotYet(format!(
                    "logical cloud {cloud}'s user has no certificate on cluster {cluster} yet"
                ))
            })
    }

    /// Keeps `certificate` (PEM), which `cluster` issued for the user of the
    /// logical cloud whose context `meta` is, as that user's kubeconfig
    /// there: the cluster's server and trust, the user's key, the cloud's
    /// namespace. The user (project, logical cloud) when its kubeconfig
    /// is new, so that clients made from the old one are forgotten.
    pub(crate) fn keep_user_certificate(
        &self,
        meta: &ContextMeta,
        cluster: &ClusterRef,
        certificate: &str,
    ) -> Result<Option<(String, String)>, SyncError> {
        if meta.composite_app != CONTEXT_COMPOSITE_APP {
            // A DIG's own request: its certificate is its business.
            return Ok(None);
        }
        let (project, cloud) = (&meta.project, &meta.deployment_intent_group);
        let lc = ResourceId::new(Kind::LogicalCloud, vec![project.clone(), cloud.clone()]);
        let spec: LogicalCloudSpec = self.db.spec(&lc).map_err(store_error)?;
        let key = self
            .db
            .secret(&lc, USER_KEY_SECRET)
            .map_err(store_error)?
            .ok_or_else(|| SyncError::Config(format!("logical cloud {cloud} has no user key")))?;
        let cluster_id = ResourceId::new(
            Kind::Cluster,
            vec![cluster.provider.clone(), cluster.cluster.clone()],
        );
        let own = self
            .db
            .file(&cluster_id)
            .map_err(store_error)?
            .ok_or_else(|| SyncError::Config(format!("cluster {cluster} has no kubeconfig")))?;
        let own = self
            .kubeconfigs
            .check(&own)
            .map_err(|e| SyncError::Config(e.to_string()))?;
        let client = KeyedCert {
            certificate: certificate.to_owned(),
            key: String::from_utf8_lossy(&key).into_owned(),
        };
        let kubeconfig = own.for_user(&cluster.cluster, spec.user_name(), &client, &spec.namespace);
        let reference = self.cluster_reference(project, cloud, cluster)?;
        let kept = self
            .db
            .secret(&reference, KUBECONFIG_SECRET)
            .map_err(store_error)?;
        if kept.as_deref() == Some(kubeconfig.as_bytes()) {
            return Ok(None);
        }
        self.db
            .put_secret(&reference, KUBECONFIG_SECRET, kubeconfig.as_bytes())
            .map_err(store_error)?;
        tracing::info!(%cluster, %project, %cloud, "logical cloud user's certificate issued by the cluster");
        Ok(Some((project.clone(), cloud.clone())))
    }

    /// The reference of `project`'s logical cloud `cloud` to `cluster`.
    fn cluster_reference(
        &self,
        project: &str,
        cloud: &str,
        cluster: &ClusterRef,
    ) -> Result<ResourceId, SyncError> {
        let references: Vec<(ResourceId, ClusterReferenceSpec)> = self
            .db
            .list_specs(
                Kind::LogicalCloudClusterReference,
                &[project.to_owned(), cloud.to_owned()],
            )
            .map_err(store_error)?;
        references
            .into_iter()
            .find(|(_, r)| r.cluster_provider == cluster.provider && r.cluster == cluster.cluster)
            .map(|(id, _)| id)
            .ok_or_else(|| {
                SyncError::Config(format!(
                    "logical cloud {cloud} no longer references cluster {cluster}"
                ))
            })
    }
}
