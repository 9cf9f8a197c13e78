//! What rsync asks of a cluster, whatever holds it: the [`SyncTarget`]
//! trait and the values that cross it.

use futures_util::stream::BoxStream;
use serde_json::Value;

use wasmco_core::resource::Resource;

use super::error::SyncError;
use super::readiness::is_ready;
use crate::owner::Labels;

/// One object a watch saw changed by someone else, or deleted.
#[derive(Debug, Clone)]
pub struct Changed {
    /// The value of the watched label: whose object it is.
    pub owner: String,
    /// The key its owner annotation names, when it has one: a label
    /// copied onto someone else's object does not make it the target's.
    pub owner_key: Option<String>,
    /// Its app label, when it has one.
    pub app: Option<String>,
    /// Its name.
    pub name: String,
    /// Its namespace, for a namespaced kind.
    pub namespace: Option<String>,
    /// The object as it is now; `None` once it was deleted.
    pub live: Option<Value>,
    /// Only its status changed since rsync wrote it, and it is not ready:
    /// no drift, but readiness to record.
    pub status_only: bool,
}

/// What a watch reports.
#[derive(Debug, Clone)]
pub enum Watched {
    /// Its list is done: from now on it reports every change.
    Listed,
    /// It may have missed changes (it lists again, or could not read an
    /// event): until its next list is done it vouches for nothing.
    Gap,
    /// An object someone else changed, or deleted.
    Changed(Changed),
}

/// How one apply is to be made.
#[derive(Debug, Clone, Copy)]
pub struct ApplyAs<'a> {
    /// The server-side apply field manager (one per DIG, so that two DIGs
    /// shipping one object conflict instead of taking it from each other).
    pub manager: &'a str,
    /// Take fields other managers own instead of reporting the conflict.
    pub force: bool,
}

/// One cluster, as rsync drives it.
#[async_trait::async_trait]
pub trait SyncTarget: Send + Sync {
    /// Applies `manifest` (`resource`'s, with rsync's labels); the object
    /// as the cluster then holds it.
    async fn apply(
        &self,
        resource: &Resource,
        manifest: &Value,
        how: ApplyAs<'_>,
    ) -> Result<Value, SyncError>;
    /// The object as the cluster holds it, if it does.
    async fn get(&self, resource: &Resource) -> Result<Option<Value>, SyncError>;
    /// Deletes `resource`, but only the object with `uid` when it is
    /// given (another object since made under that name is left alone);
    /// `Ok(true)` once the object is gone.
    async fn delete(&self, resource: &Resource, uid: Option<&str>) -> Result<bool, SyncError>;
    /// Gives an adopted object back: takes rsync's labels and annotations
    /// off it (and this target's field manager out of its managed fields)
    /// and leaves the rest as it is.
    async fn release(&self, resource: &Resource, manager: &str) -> Result<(), SyncError>;
    /// The objects of one kind, in every namespace, carrying all of `labels`.
    /// A kind the cluster does not serve has none.
    async fn list_labelled(
        &self,
        api_version: &str,
        kind: &str,
        labels: &Labels,
    ) -> Result<Vec<Value>, SyncError>;
    /// The server's version: the health probe.
    async fn version(&self) -> Result<String, SyncError>;

    /// Objects of one kind carrying `label` that someone other than rsync
    /// changed or that were deleted, for as long as the stream is read,
    /// and when the watch is complete; `None` when the target cannot watch.
    async fn changes(
        &self,
        api_version: &str,
        kind: &str,
        label: &str,
    ) -> Result<Option<BoxStream<'static, Watched>>, SyncError> {
        let _ = (api_version, kind, label);
        Ok(None)
    }

    /// Whether the cluster serves `kind` cluster-wide rather than in
    /// namespaces; a target that cannot tell goes by Kubernetes' own kinds.
    async fn cluster_scoped(&self, api_version: &str, kind: &str) -> Result<bool, SyncError> {
        Ok(wasmco_core::tenancy::is_cluster_scoped(
            wasmco_core::tenancy::group_of(api_version),
            kind,
        ))
    }

    /// Approves a CertificateSigningRequest, as `kubectl certificate
    /// approve` does.
    async fn approve(&self, resource: &Resource) -> Result<(), SyncError> {
        let _ = resource;
        Ok(())
    }

    /// Whether `resource` is ready, read from the cluster.
    async fn ready(&self, resource: &Resource) -> Result<bool, SyncError> {
        Ok(self
            .get(resource)
            .await?
            .is_some_and(|object| is_ready(&resource.key.kind, &object)))
    }
}
