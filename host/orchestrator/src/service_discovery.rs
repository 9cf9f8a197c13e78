//! Service discovery, EMCO dtc's sds: once a deployed server app is ready,
//! its clients' clusters learn where to reach its Service.
//!
//! What to make known comes from the traffic group intents the DIG hands
//! its dtc controller: each inbound intent names a server app and its
//! `serviceName`, and its clients name client apps. They are read when the
//! context is built and kept in its meta ([`ServiceMirror`]).
//!
//! The work is done after the deploy, each time rsync finishes reconciling
//! the DIG (it tells [`FollowUps`], as EMCO's rsync tells sds through its
//! ready notifications), since it needs what only the clusters know: the
//! Service as the server's cluster holds it (a NodePort's node port on the
//! first IP address of the cluster's first node, or a LoadBalancer's port
//! on its ingress address) once every resource of the server app there is
//! ready. Each client cluster that is not a server cluster then gets a
//! Service of that name without a selector, and its Endpoints, in the
//! DIG's namespace and with the DIG's access, as a context of its own under
//! [`mirror_key`], deployed by rsync like any other. It is written again
//! only when what it holds changes, which also follows an update (clusters
//! that no longer hold a client lose it) and a host restart (rsync's first
//! reconcile tells again); a terminate or stop of the DIG does the same to
//! it.
//!
//! A server that cannot be read for a while (its cluster unreachable, a
//! rollout under way) keeps what its clients have; only what cannot work
//! (a Service of another type, one the server app does not deploy) takes
//! it away. Either way the reason is in the DIG's status.
//!
//! Where EMCO differs: its sds waits on a goroutine that a restart loses,
//! leaves the objects of an update's old clients behind, builds objects
//! without a name when the Service is missing, points the Endpoints at the
//! Service's port where a NodePort is served on its node port, and drops
//! the ports' protocol; it also takes any Service of that name. Here the
//! Service must be one the server app deploys, and every server cluster is
//! a subset of the one Endpoints.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak, mpsc};

use serde_json::{Value, json};

use wasmco_core::ClusterRef;
use wasmco_core::resource::Resource;
use wasmco_core::wire::DigAction;
use wasmco_store::appcontext::{
    self as stored, ContextMeta, DeployState, Readiness, ReconcileListener, ServiceMirror,
    StoredApp, StoredContext,
};

use super::deploy::{Orchestrator, SyncedContext};
use super::dig::{DigRef, OrchestratorError};
use super::locks::TargetGuard;

/// The app of the context it makes, as EMCO names it.
pub const MIRROR_APP: &str = "service-discovery";

/// The segments of the intents it reads: a traffic group's inbound
/// intents and their clients.
const TRAFFIC_GROUPS: &str = "traffic-group-intents";
const INBOUND: &str = "inbound-intents";
const CLIENTS: &str = "clients";

/// How many DIGs' passes run at once: each asks clusters and waits.
const PASSES_AT_ONCE: usize = 2;

/// The key of the context that makes `dig`'s services known: `_` starts
/// no composite app's name, so it is no DIG's or other context's key.
pub fn mirror_key(dig: &DigRef) -> String {
    format!(
        "{}/_service-discovery/{}/{}/{}",
        dig.project, dig.composite_app, dig.version, dig.name
    )
}

/// The services to make known, from the intent trees handed to the
/// deployment's action controllers: every inbound intent of a traffic
/// group that names its app and `serviceName` and has clients that name
/// theirs (EMCO's sds skips the others too).
pub(crate) fn mirrors_in<'a>(trees: impl Iterator<Item = &'a str>) -> Vec<ServiceMirror> {
    let mut mirrors = Vec::new();
    // Most controllers are handed no traffic group: no need to parse theirs.
    for tree in trees.filter(|tree| tree.contains(TRAFFIC_GROUPS)) {
        let Ok(tree) = serde_json::from_str::<Value>(tree) else {
            continue;
        };
        let groups = tree["intents"].as_array().into_iter().flatten();
        for group in groups.filter(|g| g["kind"] == TRAFFIC_GROUPS) {
            for inbound in children(group, INBOUND) {
                let (Some(server_app), Some(service)) = (
                    text(&inbound["spec"]["app"]),
                    text(&inbound["spec"]["serviceName"]),
                ) else {
                    continue;
                };
                let mut client_apps: Vec<String> = children(inbound, CLIENTS)
                    .filter_map(|client| text(&client["spec"]["app"]))
                    .map(str::to_owned)
                    .collect();
                client_apps.sort();
                client_apps.dedup();
                if client_apps.is_empty() {
                    continue;
                }
                mirrors.push(ServiceMirror {
                    origin: format!(
                        "inbound intent {} of traffic group intent {}",
                        inbound["metadata"]["name"].as_str().unwrap_or_default(),
                        group["metadata"]["name"].as_str().unwrap_or_default()
                    ),
                    server_app: server_app.to_owned(),
                    service: service.to_owned(),
                    client_apps,
                });
            }
        }
    }
    mirrors
}

fn children<'a>(node: &'a Value, segment: &str) -> impl Iterator<Item = &'a Value> {
    node["children"][segment].as_array().into_iter().flatten()
}

fn text(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.is_empty())
}

/// One port of the server's Service, and where a server cluster serves it.
#[derive(Debug, Clone, PartialEq)]
struct ServedPort {
    /// The Service's port, which clients are told.
    port: u64,
    protocol: String,
    /// Where it is reached on the cluster's address: the node port of a
    /// NodePort Service, the port of a LoadBalancer's.
    reached_on: u64,
}

/// Where one server cluster serves the Service.
#[derive(Debug)]
struct Served {
    address: String,
    ports: Vec<ServedPort>,
}

/// Where a DIG's mirror context goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follow {
    Terminate,
    Stop,
}

/// What one pass found of one service.
enum Found<T> {
    /// What was looked for.
    Here(T),
    /// Not now (the server is not ready, its cluster does not answer, its
    /// load balancer has no address yet): its clients keep what they have.
    Waiting(String),
    /// It cannot be reached from other clusters, and why.
    Refused(String),
}

impl<T> Found<T> {
    fn and_then<U>(self, next: impl FnOnce(T) -> Found<U>) -> Found<U> {
        match self {
            Found::Here(found) => next(found),
            Found::Waiting(why) => Found::Waiting(why),
            Found::Refused(why) => Found::Refused(why),
        }
    }
}

impl Orchestrator {
    /// Makes the DIG's services known to their clients as its context
    /// now asks. The clusters are asked without the DIG's lock, which
    /// actions on it would otherwise wait for; the mirror context is
    /// written under it, and only when what it holds changes.
    pub fn mirror_services(&self, dig: &DigRef) -> Result<(), OrchestratorError> {
        let key = dig.key();
        let state = self.contexts.state(&key)?;
        if !state.state.is_deployed() {
            return Ok(());
        }
        let context = self.contexts.read(&key, state.revision)?;
        if context.meta.service_mirrors.is_empty() {
            return Ok(());
        }
        let statuses = self.contexts.statuses(&key, state.revision)?;
        let mirror = mirror_key(dig);
        let mirror_state = self.contexts.state(&mirror)?;
        let previous = match mirror_state.state.is_deployed() {
            true => Some(self.contexts.read(&mirror, mirror_state.revision)?),
            false => None,
        };
        let mut per_cluster: BTreeMap<ClusterRef, Vec<Resource>> = BTreeMap::new();
        let mut notes = Vec::new();
        let mut services = BTreeSet::new();
        for wanted in &context.meta.service_mirrors {
            let mut note = |why: String| notes.push(format!("{}: {why}", wanted.origin));
            if !services.insert(wanted.service.as_str()) {
                note(format!(
                    "Service {} is made known by an earlier inbound intent already",
                    wanted.service
                ));
                continue;
            }
            let servers: Vec<&ClusterRef> = placed(&context, &wanted.server_app).collect();
            let mut clients = BTreeSet::new();
            for app in &wanted.client_apps {
                if !context.apps.iter().any(|a| &a.name == app) {
                    note(format!("client app {app} is not part of this deployment"));
                }
                clients.extend(placed(&context, app).filter(|c| !servers.contains(c)));
            }
            let found = self
                .served(&context, &statuses, wanted)
                .and_then(|served| mirrored(&context.meta, &wanted.service, &served));
            let made = match found {
                Found::Here(made) => made,
                Found::Waiting(why) => {
                    note(why);
                    // What its clients had stays until the server is back.
                    for cluster in clients {
                        let kept = previous
                            .iter()
                            .flat_map(|p| p.apps.iter())
                            .flat_map(|app| app.resources_on(cluster))
                            .filter(|r| r.key.name == wanted.service)
                            .cloned();
                        per_cluster.entry(cluster.clone()).or_default().extend(kept);
                    }
                    continue;
                }
                Found::Refused(why) => {
                    note(why);
                    continue;
                }
            };
            for cluster in clients {
                per_cluster
                    .entry(cluster.clone())
                    .or_default()
                    .extend(made.iter().cloned());
            }
        }
        per_cluster.retain(|_, objects| !objects.is_empty());
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        let apps = [StoredApp::spread(
            MIRROR_APP,
            per_cluster.into_iter().collect(),
        )];
        let holds = match &previous {
            Some(previous) => previous.apps == apps,
            None => apps[0].placement.is_empty(),
        };
        if holds && self.contexts.note(&mirror)? == note {
            return Ok(());
        }
        let guard = self
            .actions
            .lock(&key)
            .map_err(stored::ContextError::from)?;
        let now = self.contexts.state(&key)?;
        if now.state != state.state || now.revision != state.revision {
            // An action came between: the reconcile it starts tells again.
            return Ok(());
        }
        let written = if holds {
            Ok(())
        } else {
            self.write_mirror(dig, &context.meta, &apps, &guard)
        };
        let note = match (&written, note) {
            (Err(error), note) => Some(
                note.into_iter()
                    .chain([format!("the objects cannot be deployed: {error}")])
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            (Ok(()), note) => note,
        };
        self.contexts.put_note(&mirror, note.as_deref())?;
        if let Some(note) = &note {
            tracing::info!(dig = %key, %note, "services not (all) made known");
        }
        written
    }

    /// Whether and where `wanted`'s server serves its Service, on every
    /// cluster of the server app.
    fn served(
        &self,
        context: &StoredContext,
        statuses: &BTreeMap<(String, ClusterRef, String), stored::ResourceStatus>,
        wanted: &ServiceMirror,
    ) -> Found<Vec<Served>> {
        let Some(server) = context.apps.iter().find(|a| a.name == wanted.server_app) else {
            return Found::Refused(format!(
                "server app {} is not part of this deployment",
                wanted.server_app
            ));
        };
        let mut served = Vec::new();
        for placement in &server.placement {
            let cluster = &placement.cluster;
            let resources = server.resources_on(cluster);
            let Some(service) = resources.iter().find(|r| {
                r.key.kind == "Service" && r.api_version == "v1" && r.key.name == wanted.service
            }) else {
                return Found::Refused(format!(
                    "server app {} puts no Service {} on cluster {cluster}",
                    server.name, wanted.service
                ));
            };
            let not_ready = resources.iter().find(|r| {
                statuses
                    .get(&(server.name.clone(), cluster.clone(), r.key.to_string()))
                    .is_none_or(|s| s.ready != Readiness::Ready)
            });
            if let Some(resource) = not_ready {
                return Found::Waiting(format!(
                    "waiting for server app {} to be ready on cluster {cluster} ({} {} is not)",
                    server.name, resource.key.kind, resource.key.name
                ));
            }
            let namespace = service
                .namespace
                .clone()
                .unwrap_or_else(|| context.meta.access.namespace().to_owned());
            match self.serving(cluster, &wanted.service, &namespace) {
                Found::Here(one) => served.push(one),
                Found::Waiting(why) => return Found::Waiting(why),
                Found::Refused(why) => return Found::Refused(why),
            }
        }
        if served.is_empty() {
            return Found::Waiting(format!("server app {} is placed nowhere", server.name));
        }
        Found::Here(served)
    }

    /// Where `cluster` serves its Service `name`: a NodePort on its
    /// first node's first IP address (as EMCO takes it), a LoadBalancer on
    /// its ingress address.
    fn serving(&self, cluster: &ClusterRef, name: &str, namespace: &str) -> Found<Served> {
        let asked = json!({"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": name, "namespace": namespace}});
        let service = match self.sync.object(cluster, &asked) {
            Ok(Some(service)) => service,
            Ok(None) => {
                return Found::Waiting(format!(
                    "cluster {cluster} has no Service {namespace}/{name} (yet)"
                ));
            }
            Err(error) => {
                return Found::Waiting(format!(
                    "Service {name} on cluster {cluster} cannot be read: {error}"
                ));
            }
        };
        let service_type = service["spec"]["type"].as_str().unwrap_or("ClusterIP");
        let node_port = service_type == "NodePort";
        let address = match service_type {
            "NodePort" => match self.sync.node_addresses(cluster) {
                Ok(addresses) => match addresses.into_iter().next() {
                    Some(address) => address,
                    None => {
                        return Found::Waiting(format!(
                            "no node of cluster {cluster} has an IP address"
                        ));
                    }
                },
                Err(error) => {
                    return Found::Waiting(format!(
                        "the nodes of cluster {cluster} cannot be read: {error}"
                    ));
                }
            },
            "LoadBalancer" => {
                let ingress = service["status"]["loadBalancer"]["ingress"].as_array();
                let ingress: Vec<&Value> = ingress.into_iter().flatten().collect();
                match ingress.iter().filter_map(|i| text(&i["ip"])).next() {
                    Some(ip) => ip.to_owned(),
                    None if ingress.iter().any(|i| text(&i["hostname"]).is_some()) => {
                        return Found::Refused(format!(
                            "the load balancer of Service {name} on cluster {cluster} has a \
                             host name only; Endpoints take IP addresses"
                        ));
                    }
                    None => {
                        return Found::Waiting(format!(
                            "waiting for the load balancer of Service {name} on cluster \
                             {cluster} to get an address"
                        ));
                    }
                }
            }
            other => {
                return Found::Refused(format!(
                    "Service {name} on cluster {cluster} is of type {other}; only a NodePort \
                     or LoadBalancer Service can be reached from other clusters"
                ));
            }
        };
        let mut ports = Vec::new();
        for port in service["spec"]["ports"].as_array().into_iter().flatten() {
            let Some(number) = port["port"].as_u64() else {
                return Found::Refused(format!("Service {name} has a port without a number"));
            };
            let reached_on = match node_port {
                true => match port["nodePort"].as_u64() {
                    Some(node_port) => node_port,
                    None => {
                        return Found::Waiting(format!(
                            "Service {name} on cluster {cluster} has no node port for {number} yet"
                        ));
                    }
                },
                false => number,
            };
            ports.push(ServedPort {
                port: number,
                protocol: port["protocol"].as_str().unwrap_or("TCP").to_owned(),
                reached_on,
            });
        }
        if ports.is_empty() {
            return Found::Refused(format!("Service {name} on cluster {cluster} has no ports"));
        }
        Found::Here(Served { address, ports })
    }

    /// Writes `apps` as the mirror context's next revision: Instantiated
    /// the first time, Updated after. The caller holds the DIG's lock.
    fn write_mirror(
        &self,
        dig: &DigRef,
        parent: &ContextMeta,
        apps: &[StoredApp],
        guard: &TargetGuard,
    ) -> Result<(), OrchestratorError> {
        let key = mirror_key(dig);
        let mut state = self.contexts.state(&key)?;
        let revision = state.latest + 1;
        let confinement = match parent.confinement {
            Some(_) => Some(self.confine(&dig.project, &parent.access, apps)?),
            None => None,
        };
        let meta = ContextMeta {
            composite_app: MIRROR_APP.to_owned(),
            revision,
            created: stored::now(),
            app_order: vec![MIRROR_APP.to_owned()],
            dependencies: BTreeMap::new(),
            adopt_from: None,
            confinement,
            service_mirrors: Vec::new(),
            ..parent.clone()
        };
        let next = match state.state.is_deployed() {
            true => DeployState::Updated,
            false => DeployState::Instantiated,
        };
        state.enter(next, revision);
        self.contexts
            .write(&key, &meta, apps, &state, guard.fence())?;
        tracing::info!(dig = %dig.key(), revision, "services made known to their clients");
        self.sync.changed(&key);
        Ok(())
    }

    /// Takes `dig`'s mirror context where the DIG went: terminated (or
    /// asking for nothing to be made known any more), or stopped. The
    /// caller holds the DIG's action lock.
    pub(super) fn mirror_follows(
        &self,
        dig: &DigRef,
        follow: Follow,
        guard: &TargetGuard,
    ) -> Result<(), OrchestratorError> {
        let key = mirror_key(dig);
        let state = self.contexts.state(&key)?;
        // The mirror follows where its table lets it, and stays otherwise.
        let action = match follow {
            Follow::Terminate => DigAction::Terminate,
            Follow::Stop => DigAction::Stop,
        };
        if state.state.after(action).is_ok() {
            self.mark(action, &dig.describe(), &key, state, guard)?;
        }
        if follow == Follow::Terminate {
            self.contexts.put_note(&key, None)?;
        }
        Ok(())
    }

    /// What the deployed mirror context of `dig` holds, and why it holds
    /// no more, for the DIG's status.
    pub(super) fn mirror_status(
        &self,
        dig: &DigRef,
    ) -> Result<(Option<SyncedContext>, Option<String>), OrchestratorError> {
        let key = mirror_key(dig);
        let (state, synced) = self.synced(&key)?;
        let synced = synced.filter(|_| state.state.is_deployed());
        Ok((synced, self.contexts.note(&key)?))
    }
}

/// The clusters `app` is placed on.
fn placed<'a>(context: &'a StoredContext, app: &str) -> impl Iterator<Item = &'a ClusterRef> {
    context
        .apps
        .iter()
        .filter(move |a| a.name == app)
        .flat_map(|a| a.placement.iter().map(|p| &p.cluster))
}

/// The Service without a selector and its Endpoints that point a client
/// cluster at every server cluster (a subset each), on the Service's ports
/// named by their numbers as EMCO names them (with the protocol too where
/// a number has two).
fn mirrored(meta: &ContextMeta, name: &str, served: &[Served]) -> Found<Vec<Resource>> {
    let first = &served[0].ports;
    let same = |s: &Served| {
        s.ports.len() == first.len()
            && s.ports
                .iter()
                .zip(first)
                .all(|(a, b)| a.port == b.port && a.protocol == b.protocol)
    };
    if !served.iter().all(same) {
        return Found::Waiting(format!(
            "the server's clusters expose Service {name} on different ports (a rollout?)"
        ));
    }
    let port_name = |port: &ServedPort| {
        let shared = first.iter().filter(|p| p.port == port.port).count() > 1;
        match shared {
            true => format!("{}-{}", port.port, port.protocol.to_lowercase()),
            false => port.port.to_string(),
        }
    };
    let namespace = meta.access.namespace();
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterIP": "None",
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ports": first.iter().map(|p| json!({
                "name": port_name(p), "protocol": p.protocol, "port": p.port,
                "targetPort": p.port,
            })).collect::<Vec<_>>(),
        },
    });
    let subsets: Vec<Value> = served
        .iter()
        .map(|s| {
            json!({
                "addresses": [{"ip": s.address}],
                "ports": s.ports.iter().map(|p| json!({
                    "name": port_name(p), "port": p.reached_on, "protocol": p.protocol,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": name, "namespace": namespace},
        "subsets": subsets,
    });
    let made: Result<Vec<Resource>, String> = [endpoints, service]
        .into_iter()
        .map(|manifest| Resource::from_manifest(manifest).map_err(|e| e.to_string()))
        .collect();
    match made {
        Ok(made) => Found::Here(made),
        Err(why) => Found::Refused(format!("Service {name} cannot be mirrored: {why}")),
    }
}

/// Hears rsync's finished reconciles and makes the services of the DIGs
/// that ask for it known: off rsync's workers, on a few threads of its
/// own, one pass per DIG at a time (another reconcile ending during a pass
/// makes one more).
pub struct FollowUps {
    /// DIGs to work on; the threads end when it is dropped.
    queue: Mutex<mpsc::Sender<DigRef>>,
    /// The DIGs queued or being worked on, and whether another reconcile
    /// ended since the pass began.
    busy: Arc<Mutex<HashMap<String, bool>>>,
}

impl FollowUps {
    /// Listening to `orchestrator`'s sync engine for as long as the
    /// returned value is kept.
    pub fn start(orchestrator: &Orchestrator) -> Arc<FollowUps> {
        let (queue, queued) = mpsc::channel::<DigRef>();
        let queued = Arc::new(Mutex::new(queued));
        let busy: Arc<Mutex<HashMap<String, bool>>> = Arc::default();
        for _ in 0..PASSES_AT_ONCE {
            let (orchestrator, queued, busy) = (orchestrator.clone(), queued.clone(), busy.clone());
            std::thread::spawn(move || {
                loop {
                    let next = queued.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok(dig) = next else {
                        return;
                    };
                    passes(&orchestrator, &busy, &dig);
                }
            });
        }
        let follow_ups = Arc::new(FollowUps {
            queue: Mutex::new(queue),
            busy,
        });
        let listener: Weak<dyn ReconcileListener> = Arc::downgrade(&follow_ups) as _;
        orchestrator.sync.listen(listener);
        follow_ups
    }
}

/// Runs `dig`'s passes until no reconcile ended during the last one; a
/// pass that panics is a failed pass, and the DIG is free again.
fn passes(orchestrator: &Orchestrator, busy: &Mutex<HashMap<String, bool>>, dig: &DigRef) {
    let key = dig.key();
    loop {
        let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            orchestrator.mirror_services(dig)
        }));
        match pass {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(dig = %key, %error, "could not make the services known");
            }
            Err(_) => tracing::error!(dig = %key, "making the services known panicked"),
        }
        let mut busy = busy.lock().unwrap_or_else(|p| p.into_inner());
        match busy.get_mut(&key) {
            Some(again) if *again => *again = false,
            _ => {
                busy.remove(&key);
                return;
            }
        }
    }
}

impl ReconcileListener for FollowUps {
    fn reconciled(&self, _key: &str, context: &StoredContext) {
        if context.meta.service_mirrors.is_empty() {
            return;
        }
        let meta = &context.meta;
        let dig = DigRef {
            project: meta.project.clone(),
            composite_app: meta.composite_app.clone(),
            version: meta.composite_app_version.clone(),
            name: meta.deployment_intent_group.clone(),
        };
        {
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(again) = busy.get_mut(&dig.key()) {
                *again = true;
                return;
            }
            busy.insert(dig.key(), false);
        }
        // The threads end only with the sender: a send cannot fail here.
        let _ = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(dig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(inbound: Value) -> String {
        json!({"name": "testdtc", "intents": [{
            "kind": "traffic-group-intents", "metadata": {"name": "testdtc"}, "spec": {},
            "children": {"inbound-intents": [inbound]},
        }]})
        .to_string()
    }

    #[test]
    fn an_inbound_intent_with_clients_asks_for_its_service_once_per_client_app() {
        let trees = [tree(json!({
            "kind": "inbound-intents", "metadata": {"name": "serverin"},
            "spec": {"app": "http-server", "serviceName": "http-service"},
            "children": {"clients": [
                {"metadata": {"name": "a"}, "spec": {"app": "http-client"}},
                {"metadata": {"name": "b"}, "spec": {"app": "http-client"}},
            ]},
        }))];
        let mirrors = mirrors_in(trees.iter().map(String::as_str));
        assert_eq!(
            mirrors,
            [ServiceMirror {
                origin: "inbound intent serverin of traffic group intent testdtc".into(),
                server_app: "http-server".into(),
                service: "http-service".into(),
                client_apps: vec!["http-client".into()],
            }]
        );
    }

    #[test]
    fn without_a_service_name_or_clients_nothing_is_asked() {
        let trees = [
            tree(json!({"metadata": {"name": "s"}, "spec": {"app": "server"},
                        "children": {"clients": [{"spec": {"app": "client"}}]}})),
            tree(
                json!({"metadata": {"name": "s"}, "spec": {"app": "server", "serviceName": "svc"},
                        "children": {}}),
            ),
            tree(
                json!({"metadata": {"name": "s"}, "spec": {"app": "server", "serviceName": "svc"},
                        "children": {"clients": [{"spec": {"app": ""}}]}}),
            ),
        ];
        assert!(mirrors_in(trees.iter().map(String::as_str)).is_empty());
    }

    fn meta() -> ContextMeta {
        ContextMeta {
            project: "p".into(),
            composite_app: "ca".into(),
            composite_app_version: "v1".into(),
            deployment_intent_group: "d".into(),
            release: "r1".into(),
            revision: 1,
            created: String::new(),
            app_order: Vec::new(),
            dependencies: BTreeMap::new(),
            access: stored::Access {
                namespace: "ns1".into(),
                cloud_user: None,
            },
            adopt_from: None,
            confinement: None,
            service_mirrors: Vec::new(),
        }
    }

    fn port(port: u64, protocol: &str, reached_on: u64) -> ServedPort {
        ServedPort {
            port,
            protocol: protocol.into(),
            reached_on,
        }
    }

    fn made(found: Found<Vec<Resource>>) -> Vec<Resource> {
        match found {
            Found::Here(made) => made,
            Found::Waiting(why) | Found::Refused(why) => panic!("{why}"),
        }
    }

    #[test]
    fn each_server_cluster_is_a_subset_reached_on_its_node_port() {
        let ports = |node_port| vec![port(30083, "TCP", node_port)];
        let served = [
            Served {
                address: "10.0.0.2".into(),
                ports: ports(30083),
            },
            Served {
                address: "10.0.1.2".into(),
                ports: ports(31000),
            },
        ];
        let made = made(mirrored(&meta(), "http-service", &served));
        let endpoints = &made[0].manifest;
        assert_eq!(endpoints["metadata"]["namespace"], "ns1");
        assert_eq!(
            endpoints["subsets"],
            json!([
                {"addresses": [{"ip": "10.0.0.2"}],
                 "ports": [{"name": "30083", "port": 30083, "protocol": "TCP"}]},
                {"addresses": [{"ip": "10.0.1.2"}],
                 "ports": [{"name": "30083", "port": 31000, "protocol": "TCP"}]},
            ])
        );
        let service = &made[1].manifest;
        assert_eq!(service["spec"]["clusterIP"], "None");
        assert!(service["spec"].get("selector").is_none());
        assert_eq!(
            service["spec"]["ports"],
            json!([{"name": "30083", "protocol": "TCP", "port": 30083, "targetPort": 30083}])
        );
    }

    #[test]
    fn a_port_number_served_on_two_protocols_gets_two_names() {
        let served = [Served {
            address: "10.0.0.2".into(),
            ports: vec![port(53, "TCP", 53), port(53, "UDP", 53)],
        }];
        let made = made(mirrored(&meta(), "dns", &served));
        let names: Vec<&Value> = made[1].manifest["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["name"])
            .collect();
        assert_eq!(names, [&json!("53-tcp"), &json!("53-udp")]);
    }

    #[test]
    fn servers_exposing_other_ports_are_waited_for() {
        let served = [
            Served {
                address: "10.0.0.2".into(),
                ports: vec![port(80, "TCP", 80)],
            },
            Served {
                address: "10.0.1.2".into(),
                ports: vec![port(81, "TCP", 81)],
            },
        ];
        assert!(matches!(
            mirrored(&meta(), "svc", &served),
            Found::Waiting(why) if why.contains("different ports")
        ));
    }
}
