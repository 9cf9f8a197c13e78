//! The clients rsync reaches clusters through: one per cluster and
//! identity (the cluster's own kubeconfig, or a logical cloud user's),
//! made on first use and kept until the cluster or the user changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wasmco_core::{ClusterRef, Kind};
use wasmco_store::appcontext::{Access, ContextMeta};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

use crate::config::RsyncConfig;
use crate::credentials::Credentials;
use crate::target::{DirectoryTarget, KubeTarget, SyncError, SyncTarget};

/// A cluster as one context reaches it: with whose credentials, and the
/// namespace its objects that name none go into.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Reach {
    pub(crate) cluster: ClusterRef,
    pub(crate) namespace: String,
    /// `(project, logical cloud)` whose user's kubeconfig is used; `None`
    /// is the cluster's own.
    pub(crate) cloud_user: Option<(String, String)>,
}

impl Reach {
    /// With the cluster's own kubeconfig, into `default`.
    pub(crate) fn admin(cluster: &ClusterRef) -> Self {
        Reach {
            cluster: cluster.clone(),
            namespace: Access::default().namespace().to_owned(),
            cloud_user: None,
        }
    }

    /// As `meta` asks.
    pub(crate) fn of(cluster: &ClusterRef, meta: &ContextMeta) -> Self {
        Reach {
            cluster: cluster.clone(),
            namespace: meta.access.namespace().to_owned(),
            cloud_user: meta
                .access
                .cloud_user
                .as_ref()
                .map(|cloud| (meta.project.clone(), cloud.clone())),
        }
    }
}

/// The targets made so far, by how they reach their cluster.
pub(crate) struct Clients {
    db: ResourceDb,
    config: Arc<RsyncConfig>,
    credentials: Credentials,
    targets: Mutex<HashMap<Reach, Arc<dyn SyncTarget>>>,
}

impl Clients {
    pub(crate) fn new(db: ResourceDb, config: Arc<RsyncConfig>) -> Self {
        Clients {
            credentials: Credentials::new(db.clone(), config.kubeconfigs.clone()),
            db,
            config,
            targets: Mutex::default(),
        }
    }

    /// The target of `cluster` with its own kubeconfig.
    pub(crate) async fn target(
        &self,
        cluster: &ClusterRef,
    ) -> Result<Arc<dyn SyncTarget>, SyncError> {
        self.target_as(&Reach::admin(cluster)).await
    }

    /// The target of a cluster as `reach` has it, made once.
    pub(crate) async fn target_as(&self, reach: &Reach) -> Result<Arc<dyn SyncTarget>, SyncError> {
        if let Some(target) = self
            .targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(reach)
            .cloned()
        {
            return Ok(target);
        }
        let target: Arc<dyn SyncTarget> = match &self.config.directory {
            Some(directory) => Arc::new(DirectoryTarget::new(
                directory.join(reach.cluster.to_string()),
            )),
            None => Arc::new(KubeTarget::new(
                self.client_config(reach).await?,
                reach.cloud_user.is_some(),
            )?),
        };
        self.targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(reach.clone(), target.clone());
        Ok(target)
    }

    /// Forgets the targets that `which` picks.
    pub(crate) fn forget(&self, which: impl Fn(&Reach) -> bool) {
        self.targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|reach, _| !which(reach));
    }

    /// Keeps `certificate` as the kubeconfig of the logical cloud user
    /// whose context `meta` is (see [`Credentials::keep_user_certificate`]);
    /// a client made from the one it replaces is forgotten.
    pub(crate) fn keep_user_certificate(
        &self,
        meta: &ContextMeta,
        cluster: &ClusterRef,
        certificate: &str,
    ) -> Result<(), SyncError> {
        let Some(user) = self
            .credentials
            .keep_user_certificate(meta, cluster, certificate)?
        else {
            return Ok(());
        };
        let user = Some(user);
        self.forget(|reach| &reach.cluster == cluster && reach.cloud_user == user);
        Ok(())
    }

    /// The client configuration `reach` asks for, from the stored kubeconfig
    /// (the cluster's, or its logical cloud user's).
    async fn client_config(&self, reach: &Reach) -> Result<kube::Config, SyncError> {
        let cluster = &reach.cluster;
        let kubeconfig = match &reach.cloud_user {
            None => {
                let id = ResourceId::new(
                    Kind::Cluster,
                    vec![cluster.provider.clone(), cluster.cluster.clone()],
                );
                self.db
                    .file(&id)
                    .map_err(|e| SyncError::Config(e.to_string()))?
                    .ok_or_else(|| {
                        SyncError::Config(format!("cluster {cluster} has no kubeconfig"))
                    })?
            }
            Some((project, cloud)) => self
                .credentials
                .cloud_user_kubeconfig(project, cloud, cluster)?,
        };
        // Checked again here, not only at upload: a kubeconfig stored by an
        // older version, or a policy tightened since, must not reach kube-rs.
        let refused = |e: wasmco_pki::kubeconfig::KubeconfigError| SyncError::Config(e.to_string());
        let mut config = self
            .config
            .kubeconfigs
            .check(&kubeconfig)
            .map_err(refused)?
            .client_config(&self.config.kubeconfigs)
            .await
            .map_err(refused)?;
        config.default_namespace = reach.namespace.clone();
        config.connect_timeout = Some(self.config.connect_timeout);
        config.read_timeout = Some(self.config.request_timeout);
        config.write_timeout = Some(self.config.request_timeout);
        // Counted from each request, not from when its pooled connection
        // last saw traffic.
        config.reset_reader_on_write = true;
        if config.cluster_url.scheme_str() == Some("http") && config.root_cert.is_none() {
            // No TLS will be spoken, but kube-rs builds a TLS setup anyway,
            // and without a CA that is the machine's every root (about
            // 100 KiB per client): a fleet of 1,000 plain clusters held
            // 200 MiB of them.
            config.root_cert = Some(Vec::new());
        }
        Ok(config)
    }
}

/// Every cluster of every provider.
pub(crate) fn all_clusters(db: &ResourceDb) -> Result<Vec<ClusterRef>, DbError> {
    let mut clusters = Vec::new();
    for (provider, _) in db.list(Kind::ClusterProvider, &[])? {
        for (cluster, _) in db.list(Kind::Cluster, &provider.path)? {
            if let [provider, cluster] = cluster.path.as_slice() {
                clusters.push(ClusterRef::new(provider, cluster));
            }
        }
    }
    Ok(clusters)
}
