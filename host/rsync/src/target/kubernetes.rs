//! A cluster reached through its kubeconfig, with kube-rs.

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions};
use kube::core::{ApiResource, GroupVersionKind, Selector};
use kube::discovery::{ApiCapabilities, Scope};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

use wasmco_core::resource::Resource;

use super::error::SyncError;
use super::readiness::{is_ready, ready_once_applied};
use super::sync_target::{ApplyAs, Changed, SyncTarget, Watched};
use crate::owner::{APP_LABEL, Labels, OWNER_ANNOTATION, release_patch};

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
    ) -> Result<Option<BoxStream<'static, Watched>>, SyncError> {
        let (api_resource, capabilities) = self.kind_of(api_version, kind).await?;
        let all = self.listing(&self.watching, &api_resource, &capabilities);
        let (label, kind) = (label.to_owned(), kind.to_owned());
        let changes = watcher::watcher(all, watcher::Config::default().labels(&label))
            .default_backoff()
            .filter_map(move |event| {
                let changed = match event {
                    Ok(watcher::Event::Apply(object)) => {
                        let ours = written_by_rsync(&object);
                        // rsync's own write: only readiness lost matters.
                        if ours && ready_once_applied(&kind) {
                            None
                        } else {
                            changed(&label, object, false, ours)
                                .filter(|change| !(ours && ready(&kind, change)))
                                .map(Watched::Changed)
                        }
                    }
                    Ok(watcher::Event::Delete(object)) => {
                        changed(&label, object, true, false).map(Watched::Changed)
                    }
                    Ok(watcher::Event::Init) => Some(Watched::Gap),
                    Ok(watcher::Event::InitDone) => Some(Watched::Listed),
                    // What the list found was there: not a change.
                    Ok(watcher::Event::InitApply(_)) => None,
                    Err(watcher::Error::WatchFailed(kube::Error::SerdeError(error))) => {
                        tracing::debug!(%error, "a watch event could not be read");
                        Some(Watched::Gap)
                    }
                    // It resumes from where it was, missing nothing (a
                    // place the server no longer has makes it list again).
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

/// Whether the object `change` saw is ready as its status says: a
/// workload's readiness changes with status updates only, which are no
/// drift but are to be recorded.
fn ready(kind: &str, change: &Changed) -> bool {
    change
        .live
        .as_ref()
        .is_some_and(|live| is_ready(kind, live))
}

/// What a watch saw of `object`, when it carries `label`.
fn changed(
    label: &str,
    object: DynamicObject,
    deleted: bool,
    status_only: bool,
) -> Option<Changed> {
    let labels = object.labels();
    Some(Changed {
        owner: labels.get(label)?.clone(),
        owner_key: object.annotations().get(OWNER_ANNOTATION).cloned(),
        app: labels.get(APP_LABEL).cloned(),
        name: object.name_any(),
        namespace: object.namespace(),
        live: (!deleted).then(|| to_value(object)),
        status_only,
    })
}
