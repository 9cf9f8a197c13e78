//! Where rsync puts resources: a Kubernetes API (through kube-rs) or a
//! directory of YAML files.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions};
use kube::core::{ApiResource, GroupVersionKind, Selector};
use kube::discovery::{ApiCapabilities, Scope};
use kube::runtime::wait::{Condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

use wasmco_core::resource::Resource;

mod directory;

pub use directory::DirectoryTarget;

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
    /// The cluster took longer than this to answer.
    #[error("no answer in {0:?}")]
    TimedOut(std::time::Duration),
    /// Something this work needs is still being made elsewhere (a
    /// logical cloud user's certificate the cluster has yet to issue).
    #[error("{0}")]
    NotYet(String),
}

impl SyncError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            SyncError::Unreachable(_) | SyncError::TimedOut(_) | SyncError::NotYet(_) => true,
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
        // The cluster answered: it does not serve that kind.
        kube::Error::Discovery(missing) => SyncError::Refused {
            code: 404,
            reason: "NotFound".into(),
            message: missing.to_string(),
        },
        other => SyncError::Unreachable(other),
    }
}

/// Labels, as rsync sets and selects them.
pub type Labels = BTreeMap<String, String>;

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
    /// changed or that were deleted, for as long as the stream is read;
    /// `None` when the target cannot watch.
    async fn changes(
        &self,
        api_version: &str,
        kind: &str,
        label: &str,
    ) -> Result<Option<BoxStream<'static, Changed>>, SyncError> {
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

/// A cluster reached through its kubeconfig.
pub struct KubeTarget {
    client: kube::Client,
    /// For watches, which stay open without traffic for minutes: the
    /// request timeout would cut them, so theirs is past the 290 s the
    /// watcher asks the server to end them by.
    watching: kube::Client,
    kinds: Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>,
    /// Lists and watches stay in the client's namespace: its user (a
    /// logical cloud's) may see nothing else.
    namespace_only: bool,
}

/// How long a watch may go without a byte.
const WATCH_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(330);

impl KubeTarget {
    /// A client from a checked configuration (see [`wasmco_pki::kubeconfig`]);
    /// objects that name no namespace go into the configuration's default
    /// one. With `namespace_only`, lists and watches of namespaced kinds
    /// look in that namespace only.
    pub fn new(config: kube::Config, namespace_only: bool) -> Result<Self, SyncError> {
        let mut watch_config = config.clone();
        watch_config.read_timeout = Some(WATCH_READ_TIMEOUT);
        let client = |config: kube::Config| {
            kube::Client::try_from(config).map_err(|e| SyncError::Config(e.to_string()))
        };
        Ok(KubeTarget {
            client: client(config)?,
            watching: client(watch_config)?,
            kinds: Mutex::default(),
            namespace_only,
        })
    }

    /// Where a list or watch of a kind looks.
    fn listing(
        &self,
        client: &kube::Client,
        api_resource: &ApiResource,
        capabilities: &ApiCapabilities,
    ) -> Api<DynamicObject> {
        if self.namespace_only && capabilities.scope == Scope::Namespaced {
            Api::default_namespaced_with(client.clone(), api_resource)
        } else {
            Api::all_with(client.clone(), api_resource)
        }
    }

    async fn api(&self, resource: &Resource) -> Result<Api<DynamicObject>, SyncError> {
        let (api_resource, capabilities) = self
            .kind_of(&resource.api_version, &resource.key.kind)
            .await?;
        Ok(match capabilities.scope {
            Scope::Cluster => Api::all_with(self.client.clone(), &api_resource),
            Scope::Namespaced => match resource.namespace.as_deref() {
                Some(namespace) => {
                    Api::namespaced_with(self.client.clone(), namespace, &api_resource)
                }
                None => Api::default_namespaced_with(self.client.clone(), &api_resource),
            },
        })
    }

    /// The API type of a kind, discovered once per kind.
    async fn kind_of(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, ApiCapabilities), SyncError> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let known = self
            .kinds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&gvk)
            .cloned();
        if let Some(found) = known {
            return Ok(found);
        }
        let found = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(classify)?;
        self.kinds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(gvk, found.clone());
        Ok(found)
    }
}

fn to_value(object: DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

#[async_trait::async_trait]
impl SyncTarget for KubeTarget {
    async fn apply(
        &self,
        resource: &Resource,
        manifest: &Value,
        how: ApplyAs<'_>,
    ) -> Result<Value, SyncError> {
        let api = self.api(resource).await?;
        let mut params = PatchParams::apply(how.manager);
        params.force = how.force;
        api.patch(&resource.key.name, &params, &Patch::Apply(manifest))
            .await
            .map(to_value)
            .map_err(classify)
    }

    async fn get(&self, resource: &Resource) -> Result<Option<Value>, SyncError> {
        let api = self.api(resource).await?;
        Ok(api
            .get_opt(&resource.key.name)
            .await
            .map_err(classify)?
            .map(to_value))
    }

    async fn list_labelled(
        &self,
        api_version: &str,
        kind: &str,
        labels: &Labels,
    ) -> Result<Vec<Value>, SyncError> {
        let (api_resource, capabilities) = match self.kind_of(api_version, kind).await {
            Ok(found) => found,
            Err(SyncError::Refused { code: 404, .. }) => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        // Every namespace it may see: a dropped object may sit in any of them.
        let all = self.listing(&self.client, &api_resource, &capabilities);
        let selector: Selector = labels.clone().into_iter().collect();
        let list = all
            .list(&ListParams::default().labels_from(&selector))
            .await
            .map_err(classify)?;
        Ok(list
            .items
            .into_iter()
            .map(|object| {
                let mut object = to_value(object);
                // Lists leave them out of their items.
                object["apiVersion"] = Value::String(api_version.to_owned());
                object["kind"] = Value::String(kind.to_owned());
                object
            })
            .collect())
    }

    async fn delete(&self, resource: &Resource, uid: Option<&str>) -> Result<bool, SyncError> {
        let api = self.api(resource).await?;
        let params = DeleteParams {
            preconditions: uid.map(|uid| Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&resource.key.name, &params).await {
            Ok(_) => Ok(api
                .get_opt(&resource.key.name)
                .await
                .map_err(classify)?
                .is_none_or(|now| uid.is_some_and(|uid| now.metadata.uid.as_deref() != Some(uid)))),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(true),
            // The precondition failed: what holds the name is another object.
            Err(kube::Error::Api(status)) if status.code == 409 && uid.is_some() => Ok(true),
            Err(error) => Err(classify(error)),
        }
    }

    async fn release(&self, resource: &Resource, manager: &str) -> Result<(), SyncError> {
        let api = self.api(resource).await?;
        let Some(live) = api.get_opt(&resource.key.name).await.map_err(classify)? else {
            return Ok(());
        };
        let mut patch = release_patch();
        // The field manager's entry goes too, so that whoever applies the
        // object next does not find wasmco still owning its fields.
        let others: Vec<_> = live
            .metadata
            .managed_fields
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| entry.manager.as_deref() != Some(manager))
            .collect();
        if !others.is_empty() {
            patch["metadata"]["managedFields"] = serde_json::to_value(others).unwrap_or_default();
        }
        api.patch(
            &resource.key.name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map(drop)
        .map_err(classify)
    }

    async fn cluster_scoped(&self, api_version: &str, kind: &str) -> Result<bool, SyncError> {
        let (_, capabilities) = self.kind_of(api_version, kind).await?;
        Ok(capabilities.scope == Scope::Cluster)
    }

    async fn approve(&self, resource: &Resource) -> Result<(), SyncError> {
        use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
        let requests: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        let approval = serde_json::json!({"status": {"conditions": [{
            "type": "Approved",
            "status": "True",
            "reason": "WasmcoApproved",
            "message": "approved by wasmco for the logical cloud whose user it names",
        }]}});
        requests
            .patch_approval(
                &resource.key.name,
                &PatchParams::default(),
                &Patch::Merge(&approval),
            )
            .await
            .map(drop)
            .map_err(classify)
    }

    async fn version(&self) -> Result<String, SyncError> {
        Ok(self
            .client
            .apiserver_version()
            .await
            .map_err(classify)?
            .git_version)
    }

    async fn changes(
        &self,
        api_version: &str,
        kind: &str,
        label: &str,
    ) -> Result<Option<BoxStream<'static, Changed>>, SyncError> {
        let (api_resource, capabilities) = self.kind_of(api_version, kind).await?;
        let all = self.listing(&self.watching, &api_resource, &capabilities);
        let label = label.to_owned();
        let changes = watcher::watcher(all, watcher::Config::default().labels(&label))
            .default_backoff()
            .filter_map(move |event| {
                let changed = match event {
                    Ok(watcher::Event::Apply(object)) if !written_by_rsync(&object) => {
                        changed(&label, object, false)
                    }
                    Ok(watcher::Event::Delete(object)) => changed(&label, object, true),
                    // The initial list and restarts: what was there, not a change.
                    Ok(_) => None,
                    Err(error) => {
                        tracing::debug!(%error, "watch interrupted; it resumes with backoff");
                        None
                    }
                };
                std::future::ready(changed)
            })
            .boxed();
        Ok(Some(changes))
    }
}

/// Whether the object's last write was rsync's own apply, or only a
/// status update (a controller reporting progress): neither is drift. The
/// last write is the newest entry of its managed fields; an object without
/// them (a server that does not record them) counts as changed, which
/// costs one reconcile that finds nothing to do.
fn written_by_rsync(object: &DynamicObject) -> bool {
    let Some(entries) = object.metadata.managed_fields.as_ref() else {
        return false;
    };
    let Some(newest) = entries.iter().filter_map(|e| e.time.as_ref()).max() else {
        return false;
    };
    entries
        .iter()
        .filter(|entry| entry.time.as_ref() == Some(newest))
        .all(|entry| {
            entry.subresource.as_deref() == Some("status")
                || entry
                    .manager
                    .as_deref()
                    .is_some_and(|m| m.starts_with("wasmco/"))
        })
}

/// What a watch saw of `object`, when it carries `label`.
fn changed(label: &str, object: DynamicObject, deleted: bool) -> Option<Changed> {
    let labels = object.labels();
    Some(Changed {
        owner: labels.get(label)?.clone(),
        owner_key: object.annotations().get(crate::OWNER_ANNOTATION).cloned(),
        app: labels.get(crate::APP_LABEL).cloned(),
        name: object.name_any(),
        namespace: object.namespace(),
        live: (!deleted).then(|| to_value(object)),
    })
}

/// The merge patch that takes rsync's marks off an object.
pub(crate) fn release_patch() -> Value {
    let mut patch = serde_json::json!({"metadata": {"labels": {}, "annotations": {}}});
    for label in [crate::DIG_LABEL, crate::APP_LABEL] {
        patch["metadata"]["labels"][label] = Value::Null;
    }
    for annotation in [crate::OWNER_ANNOTATION, crate::ADOPTED_ANNOTATION] {
        patch["metadata"]["annotations"][annotation] = Value::Null;
    }
    patch
}

/// Whether objects of `kind` are ready as soon as they exist (no status to wait for).
pub fn ready_once_applied(kind: &str) -> bool {
    !matches!(
        kind,
        "Deployment"
            | "StatefulSet"
            | "DaemonSet"
            | "Job"
            | "Pod"
            | "CustomResourceDefinition"
            | "CertificateSigningRequest"
    )
}

/// Readiness as the cluster reports it: workloads rolled out, Jobs complete,
/// Pods ready, CRDs established, certificates issued; anything else once
/// it exists.
///
/// Jobs and CRDs use kube-runtime's own conditions. Its workload
/// conditions do not fit: `is_deployment_completed` reads the Progressing
/// condition's reason, which says a rollout finished, not that the wanted
/// replicas are available, and `is_pod_running` is the phase, not Ready.
pub fn is_ready(kind: &str, object: &Value) -> bool {
    /// The typed object, for kube-runtime's conditions.
    fn typed<K: serde::de::DeserializeOwned>(object: &Value) -> Option<K> {
        serde_json::from_value(object.clone()).ok()
    }
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
        "Job" => conditions::is_job_completed().matches_object(typed::<Job>(object).as_ref()),
        "Pod" => condition("Ready"),
        "CustomResourceDefinition" => conditions::is_crd_established()
            .matches_object(typed::<CustomResourceDefinition>(object).as_ref()),
        // Issued: the signer put the certificate in.
        "CertificateSigningRequest" => status["certificate"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jobs_and_crds_are_ready_by_kube_runtimes_conditions() {
        let crd = |established: &str| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "gadgets.example.com"},
                   "spec": {"group": "example.com", "scope": "Namespaced",
                            "names": {"plural": "gadgets", "kind": "Gadget"}, "versions": []},
                   "status": {"conditions": [{"type": "Established", "status": established}]}})
        };
        assert!(is_ready("CustomResourceDefinition", &crd("True")));
        assert!(!is_ready("CustomResourceDefinition", &crd("False")));
        let job = |conditions: Value| {
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                   "status": {"conditions": conditions}})
        };
        assert!(is_ready(
            "Job",
            &job(json!([{"type": "Complete", "status": "True"}]))
        ));
        assert!(!is_ready(
            "Job",
            &job(json!([{"type": "Failed", "status": "True"}]))
        ));
        assert!(!is_ready(
            "Job",
            &json!({"kind": "Job", "metadata": {"name": "j"}})
        ));
        assert!(is_ready("ConfigMap", &json!({})));
    }

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
