//! Where rsync puts resources: a Kubernetes API (through kube-rs) or a
//! directory of YAML files.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::Value;

use wasmco_core::resource::Resource;

/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "wasmco";

/// Why a target could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The cluster could not be reached (worth retrying).
    #[error("cluster unreachable: {0}")]
    Unreachable(#[source] kube::Error),
    /// The cluster answered with an error status.
    #[error("{code} {reason}: {message}")]
    Refused {
        /// The HTTP status: 429 and 5xx are worth retrying.
        code: u16,
        /// Kubernetes' reason (`Conflict`, `Invalid`, …).
        reason: String,
        /// Its message.
        message: String,
    },
    /// The directory target could not write or remove a file.
    #[error("{path}: {source}")]
    Directory {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The cluster's kubeconfig is unusable.
    #[error("kubeconfig: {0}")]
    Config(String),
}

impl SyncError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            SyncError::Unreachable(_) => true,
            SyncError::Refused { code, .. } => *code == 429 || *code >= 500,
            SyncError::Directory { .. } | SyncError::Config(_) => false,
        }
    }
}

fn classify(error: kube::Error) -> SyncError {
    match error {
        kube::Error::Api(status) => SyncError::Refused {
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        },
        other => SyncError::Unreachable(other),
    }
}

/// One cluster, as rsync drives it.
#[async_trait::async_trait]
pub trait SyncTarget: Send + Sync {
    /// Applies `resource` with `labels` added.
    async fn apply(
        &self,
        resource: &Resource,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), SyncError>;
    /// Whether `resource` is ready, read from the cluster.
    async fn ready(&self, resource: &Resource) -> Result<bool, SyncError>;
    /// Deletes `resource`; `Ok(true)` once it is gone.
    async fn delete(&self, resource: &Resource) -> Result<bool, SyncError>;
    /// The objects of `like`'s kind, in every namespace, whose labels match
    /// `selector`; `None` when the target cannot list.
    async fn list_labelled(
        &self,
        like: &Resource,
        selector: &str,
    ) -> Result<Option<Vec<Resource>>, SyncError> {
        let _ = (like, selector);
        Ok(None)
    }
}

/// A cluster reached through its kubeconfig.
pub struct KubeTarget {
    client: kube::Client,
    kinds: Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>,
}

impl KubeTarget {
    /// A client from a checked configuration (see [`wasmco_pki::kubeconfig`]).
    pub fn new(config: kube::Config) -> Result<Self, SyncError> {
        let client =
            kube::Client::try_from(config).map_err(|e| SyncError::Config(e.to_string()))?;
        Ok(KubeTarget {
            client,
            kinds: Mutex::default(),
        })
    }

    async fn api_resource(&self, resource: &Resource) -> Result<ApiResource, SyncError> {
        Ok(self.kind_of(resource).await?.0)
    }

    async fn api(&self, resource: &Resource) -> Result<Api<DynamicObject>, SyncError> {
        let (api_resource, capabilities) = self.kind_of(resource).await?;
        Ok(match capabilities.scope {
            Scope::Cluster => Api::all_with(self.client.clone(), &api_resource),
            Scope::Namespaced => Api::namespaced_with(
                self.client.clone(),
                resource.namespace.as_deref().unwrap_or("default"),
                &api_resource,
            ),
        })
    }

    /// The API type of `resource`'s kind, discovered once per kind.
    async fn kind_of(
        &self,
        resource: &Resource,
    ) -> Result<(ApiResource, ApiCapabilities), SyncError> {
        let (group, version) = match resource.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", resource.api_version.as_str()),
        };
        let gvk = GroupVersionKind::gvk(group, version, &resource.key.kind);
        let known = self
            .kinds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&gvk)
            .cloned();
        let (api_resource, capabilities) = match known {
            Some(found) => found,
            None => {
                let found = kube::discovery::pinned_kind(&self.client, &gvk)
                    .await
                    .map_err(classify)?;
                self.kinds
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(gvk, found.clone());
                found
            }
        };
        Ok((api_resource, capabilities))
    }
}

#[async_trait::async_trait]
impl SyncTarget for KubeTarget {
    async fn apply(
        &self,
        resource: &Resource,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), SyncError> {
        let api = self.api(resource).await?;
        let mut manifest = resource.manifest.clone();
        let metadata = &mut manifest["metadata"];
        for (key, value) in labels {
            metadata["labels"][key] = Value::String(value.clone());
        }
        let params = PatchParams::apply(FIELD_MANAGER).force();
        api.patch(&resource.key.name, &params, &Patch::Apply(&manifest))
            .await
            .map(drop)
            .map_err(classify)
    }

    async fn ready(&self, resource: &Resource) -> Result<bool, SyncError> {
        let api = self.api(resource).await?;
        let Some(object) = api.get_opt(&resource.key.name).await.map_err(classify)? else {
            return Ok(false);
        };
        Ok(is_ready(
            &resource.key.kind,
            &serde_json::to_value(&object).unwrap_or_default(),
        ))
    }

    async fn list_labelled(
        &self,
        like: &Resource,
        selector: &str,
    ) -> Result<Option<Vec<Resource>>, SyncError> {
        // Every namespace: a dropped object may sit in any of them.
        let all: Api<DynamicObject> =
            Api::all_with(self.client.clone(), &self.api_resource(like).await?);
        let list = all
            .list(&kube::api::ListParams::default().labels(selector))
            .await
            .map_err(classify)?;
        let found = list
            .items
            .into_iter()
            .filter_map(|object| {
                let mut manifest = serde_json::to_value(&object).ok()?;
                manifest["apiVersion"] = Value::String(like.api_version.clone());
                manifest["kind"] = Value::String(like.key.kind.clone());
                Resource::from_manifest(manifest).ok()
            })
            .collect();
        Ok(Some(found))
    }

    async fn delete(&self, resource: &Resource) -> Result<bool, SyncError> {
        let api = self.api(resource).await?;
        match api
            .delete(&resource.key.name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(api
                .get_opt(&resource.key.name)
                .await
                .map_err(classify)?
                .is_none()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(true),
            Err(error) => Err(classify(error)),
        }
    }
}

/// Whether objects of `kind` are ready as soon as they exist (no status to wait for).
pub fn ready_once_applied(kind: &str) -> bool {
    !matches!(
        kind,
        "Deployment" | "StatefulSet" | "DaemonSet" | "Job" | "Pod" | "CustomResourceDefinition"
    )
}

/// Readiness as the cluster reports it: workloads rolled out, Jobs complete,
/// Pods ready, CRDs established; anything else once it exists.
pub fn is_ready(kind: &str, object: &Value) -> bool {
    let status = &object["status"];
    let condition = |name: &str| {
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == name && c["status"] == "True")
    };
    let generation_seen =
        || status["observedGeneration"].as_i64() >= object["metadata"]["generation"].as_i64();
    let wanted = object["spec"]["replicas"].as_i64().unwrap_or(1);
    match kind {
        "Deployment" => {
            generation_seen() && status["availableReplicas"].as_i64().unwrap_or(0) >= wanted
        }
        "StatefulSet" => {
            generation_seen() && status["readyReplicas"].as_i64().unwrap_or(0) >= wanted
        }
        "DaemonSet" => {
            generation_seen()
                && status["numberReady"].as_i64().unwrap_or(-1)
                    >= status["desiredNumberScheduled"].as_i64().unwrap_or(0)
        }
        "Job" => condition("Complete"),
        "Pod" => condition("Ready"),
        "CustomResourceDefinition" => condition("Established"),
        _ => true,
    }
}

/// A directory: the manifests per cluster as YAML files, for dry runs and GitOps.
pub struct DirectoryTarget {
    dir: PathBuf,
}

impl DirectoryTarget {
    /// Writes under `dir` (created when missing).
    pub fn new(dir: PathBuf) -> Self {
        DirectoryTarget { dir }
    }

    /// `<namespace>/<kind>-<name>.yaml`, or `<kind>-<name>.yaml` for objects
    /// the manifest gives no namespace.
    fn path(&self, resource: &Resource) -> PathBuf {
        let file = format!(
            "{}-{}.yaml",
            resource.key.kind.to_lowercase(),
            resource.key.name
        );
        match &resource.namespace {
            Some(namespace) => self.dir.join(namespace).join(file),
            None => self.dir.join(file),
        }
    }
}

#[async_trait::async_trait]
impl SyncTarget for DirectoryTarget {
    async fn apply(
        &self,
        resource: &Resource,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), SyncError> {
        let mut manifest = resource.manifest.clone();
        for (key, value) in labels {
            manifest["metadata"]["labels"][key] = Value::String(value.clone());
        }
        let path = self.path(resource);
        let io = |source: std::io::Error| SyncError::Directory {
            path: path.clone(),
            source,
        };
        let yaml = serde_norway::to_string(&manifest)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(io)?;
        }
        tokio::fs::write(&path, yaml).await.map_err(io)
    }

    async fn ready(&self, resource: &Resource) -> Result<bool, SyncError> {
        Ok(tokio::fs::try_exists(self.path(resource))
            .await
            .unwrap_or(false))
    }

    async fn delete(&self, resource: &Resource) -> Result<bool, SyncError> {
        let path = self.path(resource);
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(source) => Err(SyncError::Directory { path, source }),
        }
    }
}

#[cfg(test)]
mod error_tests {
    use super::*;

    #[test]
    fn what_is_worth_retrying_is_decided_by_the_status_code() {
        let refused = |code| SyncError::Refused {
            code,
            reason: "r".into(),
            message: "5 is not a status".into(),
        };
        assert!(refused(429).is_transient());
        assert!(refused(503).is_transient());
        assert!(!refused(409).is_transient());
        assert!(!refused(422).is_transient());
        assert_eq!(refused(409).to_string(), "409 r: 5 is not a status");
    }
}
