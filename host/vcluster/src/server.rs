//! The HTTP side of a virtual cluster: discovery, object paths, verbs and
//! content types as the Kubernetes API server has them, and watches.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::behaviour::{Behaviour, ready_status};
use super::catalog::ResourceType;
use super::objects::{Event, KubeError, Objects, PatchKind, Selector};
use super::signer::Signer;

/// What every request of one virtual cluster shares.
pub(super) struct Shared {
    objects: Mutex<Objects>,
    events: broadcast::Sender<Event>,
    address: String,
    behaviour: Mutex<Behaviour>,
    /// Made on first use: most virtual clusters never sign anything.
    signer: std::sync::OnceLock<Option<Signer>>,
    /// Requests served, all and `/version` (a health probe's) alone.
    pub(super) requests: std::sync::atomic::AtomicU64,
    pub(super) version_requests: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// The shared state of the cluster `name`, with the Nodes `behaviour`
    /// asks for.
    pub(super) fn new(name: &str, address: String, behaviour: Behaviour) -> Self {
        let mut objects = Objects::default();
        if let Some(ty) = objects.find("", "v1", "nodes").cloned() {
            for node in behaviour.nodes.objects(name) {
                if let Err(error) = objects.create(&ty, "", node) {
                    tracing::warn!(%error, "virtual cluster could not add a node");
                }
            }
        }
        Shared {
            objects: Mutex::new(objects),
            events: broadcast::channel(4096).0,
            address,
            behaviour: Mutex::new(behaviour),
            signer: std::sync::OnceLock::new(),
            requests: Default::default(),
            version_requests: Default::default(),
        }
    }

    pub(super) fn signer(&self) -> Option<&Signer> {
        self.signer
            .get_or_init(|| match Signer::new(&self.address) {
                Ok(signer) => Some(signer),
                Err(error) => {
                    tracing::error!(%error, "virtual cluster could not make its CA");
                    None
                }
            })
            .as_ref()
    }

    pub(super) fn behaviour(&self) -> MutexGuard<'_, Behaviour> {
        self.behaviour.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn objects(&self) -> MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, event: Event) {
        // No watcher is not an error.
        let _ = self.events.send(event);
    }
}

/// Publishes a write's event and, for a workload created or changed, makes
/// it ready after the configured delay (if it has not changed again by then).
fn record(shared: &Arc<Shared>, ty: &ResourceType, event: Event) {
    let becomes_ready = event.kind != "DELETED" && ready_status(&event.object).is_some();
    if becomes_ready {
        let shared = shared.clone();
        let ty = ty.clone();
        let object = event.object.clone();
        let delay = shared.behaviour().ready_after;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let meta = &object["metadata"];
            let (namespace, name) = (
                meta["namespace"].as_str().unwrap_or(""),
                meta["name"].as_str().unwrap_or(""),
            );
            let mut objects = shared.objects();
            let Ok(current) = objects.get(&ty, namespace, name) else {
                return;
            };
            if current["metadata"]["generation"] != meta["generation"] {
                return;
            }
            let Some(status) = ready_status(&current) else {
                return;
            };
            if let Ok((_, event)) = objects.set_status(&ty, namespace, name, status) {
                drop(objects);
                shared.publish(event);
            }
        });
    }
    shared.publish(event);
}

/// The router of one virtual cluster.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(dispatch).with_state(shared)
}

fn json_response(code: StatusCode, body: &Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn failure(error: &KubeError) -> Response {
    json_response(
        StatusCode::from_u16(error.code).unwrap_or(StatusCode::BAD_REQUEST),
        &error.status(),
    )
}

/// Query parameters the API server understands (the rest are ignored, as it does).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Params {
    label_selector: Option<String>,
    watch: Option<String>,
    timeout_seconds: Option<u64>,
    field_manager: Option<String>,
    force: Option<bool>,
    resource_version: Option<String>,
}

/// Who writes: the `fieldManager` given, else (as the API server does) the
/// client's user agent up to its first `/`.
fn manager(params: &Params, headers: &HeaderMap) -> String {
    if let Some(manager) = params.field_manager.as_deref().filter(|m| !m.is_empty()) {
        return manager.to_owned();
    }
    headers
        .get(header::USER_AGENT)
        .and_then(|agent| agent.to_str().ok())
        .and_then(|agent| agent.split('/').next())
        .filter(|agent| !agent.is_empty())
        .unwrap_or("unknown")
        .to_owned()
}

/// A parsed object path.
struct Target {
    ty: ResourceType,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Subresource,
}

/// The part of an object a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subresource {
    /// The whole object.
    None,
    /// `…/status`.
    Status,
    /// `…/approval`, of a CertificateSigningRequest.
    Approval,
}

async fn dispatch(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    use std::sync::atomic::Ordering;
    shared.requests.fetch_add(1, Ordering::Relaxed);
    if uri.path() == "/version" {
        shared.version_requests.fetch_add(1, Ordering::Relaxed);
    }
    let (latency, fail_with) = {
        let behaviour = shared.behaviour();
        (behaviour.latency, behaviour.fail_with)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(code) = fail_with {
        return injected_failure(code);
    }
    let segments: Vec<&str> = uri
        .path()
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    if method == Method::GET
        && let Some(discovery) = discovery(&shared, &segments)
    {
        return json_response(StatusCode::OK, &discovery);
    }
    let target = match target(&shared, &segments) {
        Ok(target) => target,
        Err(error) => return failure(&error),
    };
    match handle(&shared, &method, &target, &params, &headers, &body).await {
        Ok(response) => response,
        Err(error) => failure(&error),
    }
}

/// The answer of an injected fault: 429 asks to retry after a second.
fn injected_failure(code: u16) -> Response {
    let (reason, message) = match code {
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        ),
        _ => (
            "InternalError",
            "an error on the server (injected by the virtual cluster) has prevented the request from succeeding",
        ),
    };
    let status = KubeError {
        code,
        reason,
        message: message.into(),
    };
    let mut response = failure(&status);
    if code == 429 {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    response
}

fn discovery(shared: &Shared, segments: &[&str]) -> Option<Value> {
    let objects = shared.objects();
    let resources = |group: &str, version: &str| {
        let list: Vec<Value> = objects
            .types()
            .iter()
            .filter(|t| t.group == group && t.version == version)
            .map(ResourceType::discovery)
            .collect();
        let group_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        (!list.is_empty()).then(|| json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list}))
    };
    let group_entry = |group: &str| {
        let versions: Vec<Value> = objects
            .types()
            .iter()
            .filter(|t| t.group == group)
            .map(|t| t.version.clone())
            .fold(Vec::<String>::new(), |mut seen, v| {
                if !seen.contains(&v) {
                    seen.push(v);
                }
                seen
            })
            .into_iter()
            .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
            .collect();
        let preferred = versions.first().cloned()?;
        Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
    };
    match segments {
        ["version"] => Some(
            json!({"major": "1", "minor": "31", "gitVersion": "v1.31.0-wasmco", "platform": "linux/amd64"}),
        ),
        ["api"] => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.address}]})),
        ["api", "v1"] => resources("", "v1"),
        ["apis"] => {
            let mut groups: Vec<&str> = objects
                .types()
                .iter()
                .map(|t| t.group.as_str())
                .filter(|g| !g.is_empty())
                .collect();
            groups.sort_unstable();
            groups.dedup();
            let groups: Vec<Value> = groups.into_iter().filter_map(group_entry).collect();
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["apis", group] => group_entry(group).map(|mut g| {
            g["kind"] = json!("APIGroup");
            g["apiVersion"] = json!("v1");
            g
        }),
        ["apis", group, version] => resources(group, version),
        _ => None,
    }
}

fn target(shared: &Shared, segments: &[&str]) -> Result<Target, KubeError> {
    let not_found = || KubeError {
        code: 404,
        reason: "NotFound",
        message: "the server could not find the requested resource".into(),
    };
    let (group, version, rest) = match segments {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found()),
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => {
            (Some((*namespace).to_owned()), rest)
        }
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, Subresource::None),
        [plural, name] => (*plural, Some((*name).to_owned()), Subresource::None),
        [plural, name, "status"] => (*plural, Some((*name).to_owned()), Subresource::Status),
        ["certificatesigningrequests", name, "approval"] if group == "certificates.k8s.io" => (
            "certificatesigningrequests",
            Some((*name).to_owned()),
            Subresource::Approval,
        ),
        _ => return Err(not_found()),
    };
    let ty = shared
        .objects()
        .find(group, version, plural)
        .cloned()
        .ok_or_else(not_found)?;
    if namespace.is_some() && !ty.namespaced {
        return Err(not_found());
    }
    Ok(Target {
        ty,
        namespace,
        name,
        subresource,
    })
}

fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<(Value, Option<PatchKind>), KubeError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = content_type.split(';').next().unwrap_or_default().trim();
    let patch = match media {
        "application/apply-patch+yaml" => Some(PatchKind::Apply),
        "application/merge-patch+json" => Some(PatchKind::Merge),
        "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
        "application/json-patch+json" => Some(PatchKind::Json),
        "application/json" | "application/yaml" | "*/*" | "" => None,
        other => return Err(KubeError::unsupported_media_type(other)),
    };
    let text =
        std::str::from_utf8(body).map_err(|_| KubeError::bad_request("the body is not UTF-8"))?;
    let value = if media.ends_with("yaml") {
        serde_norway::from_str(text)
            .map_err(|e| KubeError::bad_request(format!("the body is not YAML: {e}")))?
    } else {
        serde_json::from_str(text)
            .map_err(|e| KubeError::bad_request(format!("the body is not JSON: {e}")))?
    };
    Ok((value, patch))
}

async fn handle(
    shared: &Arc<Shared>,
    method: &Method,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, KubeError> {
    let ty = &target.ty;
    let namespace = target.namespace.as_deref().unwrap_or("");
    let ok = |code: StatusCode, value: Value| Ok(json_response(code, &value));
    if let (Subresource::Approval, Some(name), "PUT" | "PATCH") =
        (target.subresource, &target.name, method.as_str())
    {
        let (value, _) = parse_body(headers, body)?;
        let conditions = value["status"]["conditions"].clone();
        if !conditions.is_array() {
            return Err(KubeError::bad_request(
                "status.conditions: Required value: an approval sets the request's conditions",
            ));
        }
        let signer = shared.signer().ok_or_else(|| {
            KubeError::bad_request("the cluster has no CA to sign certificates with")
        })?;
        let mut objects = shared.objects();
        let current = objects.get(ty, namespace, name)?;
        let status = signer.after_approval(&current, conditions);
        let (object, event) = objects.set_status(ty, namespace, name, status)?;
        drop(objects);
        shared.publish(event);
        return ok(StatusCode::OK, object);
    }
    match (method.as_str(), &target.name) {
        ("GET", None) => {
            let selector = Selector::parse(params.label_selector.as_deref().unwrap_or(""))?;
            if matches!(params.watch.as_deref(), Some("true" | "1")) {
                return Ok(watch(shared, target, selector, params));
            }
            ok(
                StatusCode::OK,
                shared
                    .objects()
                    .list(ty, target.namespace.as_deref(), &selector),
            )
        }
        ("GET", Some(name)) => ok(StatusCode::OK, shared.objects().get(ty, namespace, name)?),
        ("POST", None) => {
            let (value, _) = parse_body(headers, body)?;
            let mut objects = shared.objects();
            let (object, event) = objects.create(ty, namespace, value)?;
            objects.updated_by(ty, &manager(params, headers), None, &object);
            drop(objects);
            record(shared, ty, event);
            ok(StatusCode::CREATED, object)
        }
        ("PUT", Some(name)) => {
            let (value, _) = parse_body(headers, body)?;
            let (object, event) = if target.subresource == Subresource::Status {
                shared
                    .objects()
                    .set_status(ty, namespace, name, value["status"].clone())?
            } else {
                let mut objects = shared.objects();
                let before = objects.get(ty, namespace, name).ok();
                let (object, event) = objects.replace(ty, namespace, name, value)?;
                objects.updated_by(ty, &manager(params, headers), before.as_ref(), &object);
                (object, event)
            };
            record(shared, ty, event);
            ok(StatusCode::OK, object)
        }
        ("PATCH", Some(name)) => {
            let (value, kind) = parse_body(headers, body)?;
            let kind = kind.ok_or_else(|| KubeError::unsupported_media_type("application/json"))?;
            if kind == PatchKind::Apply && params.field_manager.as_deref().is_none_or(str::is_empty)
            {
                return Err(KubeError::bad_request(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ));
            }
            if target.subresource == Subresource::Status {
                let (object, event) =
                    shared
                        .objects()
                        .set_status(ty, namespace, name, value["status"].clone())?;
                shared.publish(event);
                return ok(StatusCode::OK, object);
            }
            let manager = manager(params, headers);
            let mut objects = shared.objects();
            let (object, event, created) = if kind == PatchKind::Apply {
                let force = params.force.unwrap_or(false);
                objects.apply(ty, namespace, name, value, &manager, force)?
            } else {
                let before = objects.get(ty, namespace, name).ok();
                let answer = objects.patch(ty, namespace, name, kind, value)?;
                objects.updated_by(ty, &manager, before.as_ref(), &answer.0);
                answer
            };
            drop(objects);
            record(shared, ty, event);
            ok(
                if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                },
                object,
            )
        }
        ("DELETE", Some(name)) => {
            // DeleteOptions, when sent: only its uid precondition matters here.
            let options: Value = serde_json::from_slice(body).unwrap_or_default();
            let uid = options["preconditions"]["uid"].as_str();
            let (object, event) = shared.objects().delete(ty, namespace, name, uid)?;
            shared.publish(event);
            ok(StatusCode::OK, object)
        }
        (other, _) => Err(KubeError::method_not_allowed(other)),
    }
}

/// A watch: newline-separated `{"type", "object"}` events, starting with the
/// objects that exist unless a resourceVersion other than 0 is given.
fn watch(shared: &Arc<Shared>, target: &Target, selector: Selector, params: &Params) -> Response {
    let receiver = shared.events.subscribe();
    let initial: Vec<Value> = match params.resource_version.as_deref() {
        None | Some("") | Some("0") => {
            shared
                .objects()
                .list(&target.ty, target.namespace.as_deref(), &selector)["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        }
        Some(_) => Vec::new(),
    };
    let resource = (target.ty.group.clone(), target.ty.plural.clone());
    let namespace = target.namespace.clone();
    let timeout = Duration::from_secs(params.timeout_seconds.unwrap_or(1800));
    let deadline = tokio::time::Instant::now() + timeout;
    let line = |kind: &str, object: &Value| {
        Bytes::from(format!("{}\n", json!({"type": kind, "object": object})))
    };
    let first: Vec<Result<Bytes, Infallible>> =
        initial.iter().map(|o| Ok(line("ADDED", o))).collect();
    let live = futures_util::stream::unfold(receiver, move |mut receiver| {
        let resource = resource.clone();
        let namespace = namespace.clone();
        let selector = selector.clone();
        async move {
            loop {
                let event = match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Err(_) | Ok(Err(broadcast::error::RecvError::Closed)) => return None,
                    Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
                    Ok(Ok(event)) => event,
                };
                let in_namespace = namespace
                    .as_deref()
                    .is_none_or(|ns| event.object["metadata"]["namespace"].as_str() == Some(ns));
                if event.resource == resource
                    && in_namespace
                    && selector.matches(&event.object["metadata"]["labels"])
                {
                    let bytes = Bytes::from(format!(
                        "{}\n",
                        json!({"type": event.kind, "object": event.object})
                    ));
                    return Some((Ok::<_, Infallible>(bytes), receiver));
                }
            }
        }
    });
    let stream = futures_util::StreamExt::chain(futures_util::stream::iter(first), live);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Binds `listen` and serves the virtual cluster until the runtime stops.
pub(super) async fn bind(
    listen: SocketAddr,
) -> std::io::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}
