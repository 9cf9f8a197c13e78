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
//! Service as the server's cluster holds it (a NodePort's port on the
//! address of the cluster's first node, or a LoadBalancer's ingress
//! address) once every resource of the server app there is ready. Each
//! client cluster that is not a server cluster then gets a Service of that
//! name without a selector, and its Endpoints, in the DIG's namespace, as
//! a context of their own under [`mirror_key`], deployed by rsync like any
//! other. It is written again only when what it holds changes, which also
//! follows an update (clusters that no longer hold a client lose it) and
//! a host restart (rsync's first reconcile tells again); a terminate of
//! the DIG terminates it too.
//!
//! Where EMCO differs: its sds waits on a goroutine that a restart loses,
//! leaves the objects of an update's old clients behind, builds objects
//! without a name when the Service is missing and drops the ports'
//! protocol on the Endpoints; it also takes any Service of that name.
//! Here the Service must be one the server app deploys, every server
//! cluster's address goes into the one Endpoints, and why nothing was made
//! (yet) is in the DIG's status.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};

use serde_json::{Value, json};

use wasmco_core::ClusterRef;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{
    self as stored, ContextMeta, DeployState, Readiness, ReconcileListener, ServiceMirror,
    StoredApp, StoredContext,
};

use super::deploy::{DEPLOYED, Orchestrator, SyncedContext};
use super::dig::{DigRef, OrchestratorError};
use super::locks::TargetGuard;

/// The app of the context it makes, as EMCO names it.
pub const MIRROR_APP: &str = "service-discovery";

/// The segments of the intents it reads: a traffic group's inbound
/// intents and their clients.
const TRAFFIC_GROUPS: &str = "traffic-group-intents";
const INBOUND: &str = "inbound-intents";
const CLIENTS: &str = "clients";

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

/// Where a server cluster serves the Service.
struct Served {
    address: String,
    /// `spec.ports` of the Service, as the cluster holds it.
    ports: Vec<Value>,
}

/// What one pass found.
enum Found {
    /// Every server cluster serves it.
    Served(Vec<Served>),
    /// Not yet: the server is not ready, or its load balancer has no
    /// address; the next reconcile looks again.
    Waiting(String),
    /// It cannot be made known, and why.
    Refused(String),
}

impl Orchestrator {
    /// Makes the DIG's services known to their clients as its context
    /// now asks: does nothing until the servers are ready, and writes
    /// the mirror context only when what it holds changes.
    pub fn mirror_services(&self, dig: &DigRef) -> Result<(), OrchestratorError> {
        let key = dig.key();
        let state = self.contexts.state(&key)?;
        if !DEPLOYED.contains(&state.state) {
            return Ok(());
        }
        let context = self.contexts.read(&key, state.revision)?;
        if context.meta.service_mirrors.is_empty() {
            return Ok(());
        }
        // The clusters are asked without the DIG's lock, which actions on it
        // would otherwise wait for; what was found is written under it.
        let statuses = self.contexts.statuses(&key, state.revision)?;
        let mut per_cluster: BTreeMap<ClusterRef, Vec<Resource>> = BTreeMap::new();
        let mut notes = Vec::new();
        let mut waiting = false;
        for wanted in &context.meta.service_mirrors {
            let made = match self.served(&context, &statuses, wanted) {
                Found::Served(served) => mirrored(&context.meta, &wanted.service, &served),
                Found::Waiting(why) => {
                    waiting = true;
                    Err(why)
                }
                Found::Refused(why) => Err(why),
            };
            let made = match made {
                Ok(made) => made,
                Err(why) => {
                    notes.push(format!("{}: {why}", wanted.origin));
                    continue;
                }
            };
            let servers: Vec<&ClusterRef> = placed(&context, &wanted.server_app).collect();
            for app in &wanted.client_apps {
                for cluster in placed(&context, app).filter(|c| !servers.contains(c)) {
                    let objects = per_cluster.entry(cluster.clone()).or_default();
                    // Two client apps on one cluster need it once.
                    if !objects.iter().any(|o| o.key.name == wanted.service) {
                        objects.extend(made.iter().cloned());
                    }
                }
            }
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
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        self.contexts.put_note(&mirror_key(dig), note.as_deref())?;
        if let Some(note) = &note {
            tracing::info!(dig = %key, %note, "services not (yet) made known");
        }
        // Until every server is there (after an update, say), the clients
        // keep what they have rather than lose it for a while.
        if waiting {
            return Ok(());
        }
        let apps = [StoredApp::spread(
            MIRROR_APP,
            per_cluster.into_iter().collect(),
        )];
        self.write_mirror(dig, &context.meta, &apps, &guard)
    }

    /// Whether and where `wanted`'s server serves its Service, on every
    /// cluster of the server app.
    fn served(
        &self,
        context: &StoredContext,
        statuses: &BTreeMap<(String, ClusterRef, String), stored::ResourceStatus>,
        wanted: &ServiceMirror,
    ) -> Found {
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
            let Some(service) = resources.iter().find(|r| {
                r.key.kind == "Service" && r.api_version == "v1" && r.key.name == wanted.service
            }) else {
                return Found::Refused(format!(
                    "server app {} puts no Service {} on cluster {cluster}",
                    server.name, wanted.service
                ));
            };
            let namespace = service
                .namespace
                .clone()
                .unwrap_or_else(|| context.meta.access.namespace().to_owned());
            match self.serving_address(cluster, &wanted.service, &namespace) {
                Ok(Some(found)) => served.push(found),
                Ok(None) => {
                    return Found::Waiting(format!(
                        "waiting for the load balancer of Service {} on cluster {cluster} to \
                         get an address",
                        wanted.service
                    ));
                }
                Err(why) => return Found::Refused(why),
            }
        }
        if served.is_empty() {
            return Found::Waiting(format!("server app {} is placed nowhere", server.name));
        }
        Found::Served(served)
    }

    /// The address and ports `cluster` serves Service `name` on: a
    /// NodePort's on its first node's address (as EMCO takes it), a
    /// LoadBalancer's on its ingress address (`None` until it has one).
    fn serving_address(
        &self,
        cluster: &ClusterRef,
        name: &str,
        namespace: &str,
    ) -> Result<Option<Served>, String> {
        let asked = json!({"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": name, "namespace": namespace}});
        let service = self
            .sync
            .object(cluster, &asked)
            .map_err(|e| format!("Service {name} on cluster {cluster} cannot be read: {e}"))?
            .ok_or_else(|| format!("cluster {cluster} has no Service {namespace}/{name}"))?;
        let ports = service["spec"]["ports"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let address = match service["spec"]["type"].as_str().unwrap_or("ClusterIP") {
            "NodePort" => {
                let nodes = self
                    .sync
                    .nodes(cluster)
                    .map_err(|e| format!("the nodes of cluster {cluster} cannot be read: {e}"))?;
                nodes
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|node| node["addresses"].as_array().into_iter().flatten())
                    .filter_map(|a| a["address"].as_str())
                    .find(|a| a.parse::<IpAddr>().is_ok())
                    .ok_or_else(|| format!("no node of cluster {cluster} has an IP address"))?
                    .to_owned()
            }
            "LoadBalancer" => {
                let ingress = service["status"]["loadBalancer"]["ingress"].as_array();
                let Some(ip) = ingress
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i["ip"].as_str())
                    .find(|ip| !ip.is_empty())
                else {
                    return Ok(None);
                };
                ip.to_owned()
            }
            other => {
                return Err(format!(
                    "Service {name} on cluster {cluster} is of type {other}; only a NodePort or \
                     LoadBalancer Service can be reached from other clusters"
                ));
            }
        };
        Ok(Some(Served { address, ports }))
    }

    /// Writes `apps` as the mirror context's next revision, unless its
    /// deployed revision holds them already.
    fn write_mirror(
        &self,
        dig: &DigRef,
        parent: &ContextMeta,
        apps: &[StoredApp],
        guard: &TargetGuard,
    ) -> Result<(), OrchestratorError> {
        let key = mirror_key(dig);
        let mut state = self.contexts.state(&key)?;
        let deployed = DEPLOYED.contains(&state.state);
        if deployed && self.contexts.read(&key, state.revision)?.apps == apps {
            return Ok(());
        }
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
        let next = if deployed {
            DeployState::Updated
        } else {
            DeployState::Instantiated
        };
        state.enter(next, revision);
        self.contexts
            .write(&key, &meta, apps, &state, guard.fence())?;
        tracing::info!(dig = %dig.key(), revision, "services made known to their clients");
        self.sync.changed(&key);
        Ok(())
    }

    /// Terminates `dig`'s mirror context, if deployed: the DIG was
    /// terminated, or its new revision makes nothing known. The caller
    /// holds the DIG's action lock.
    pub(super) fn terminate_mirror(
        &self,
        dig: &DigRef,
        guard: &TargetGuard,
    ) -> Result<(), OrchestratorError> {
        let key = mirror_key(dig);
        let state = self.contexts.state(&key)?;
        if DEPLOYED.contains(&state.state) {
            self.mark_terminated(&dig.describe(), &key, state, guard)?;
        }
        self.contexts.put_note(&key, None)?;
        Ok(())
    }

    /// What the mirror context of `dig` holds and why it holds no more,
    /// for the DIG's status.
    pub(super) fn mirror_status(
        &self,
        dig: &DigRef,
    ) -> Result<(Option<SyncedContext>, Option<String>), OrchestratorError> {
        let key = mirror_key(dig);
        let (state, synced) = self.synced(&key)?;
        let synced = synced.filter(|_| state.state != DeployState::Created);
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
/// cluster at every server cluster's address, on the Service's ports
/// (each named by its number, as EMCO names them).
fn mirrored(meta: &ContextMeta, name: &str, served: &[Served]) -> Result<Vec<Resource>, String> {
    let ports = &served[0].ports;
    if served.iter().any(|s| &s.ports != ports) {
        return Err(format!(
            "the server's clusters expose Service {name} on different ports"
        ));
    }
    let port_of = |port: &Value| -> Result<(u64, String), String> {
        let number = port["port"]
            .as_u64()
            .ok_or_else(|| format!("Service {name} has a port without a number"))?;
        let protocol = port["protocol"].as_str().unwrap_or("TCP").to_owned();
        Ok((number, protocol))
    };
    let ports: Vec<(u64, String)> = ports.iter().map(port_of).collect::<Result<_, _>>()?;
    if ports.is_empty() {
        return Err(format!("Service {name} has no ports"));
    }
    let namespace = meta.access.namespace();
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterIP": "None",
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ports": ports.iter().map(|(port, protocol)| json!({
                "name": port.to_string(), "protocol": protocol, "port": port,
                "targetPort": port,
            })).collect::<Vec<_>>(),
        },
    });
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": name, "namespace": namespace},
        "subsets": [{
            "addresses": served.iter().map(|s| json!({"ip": s.address})).collect::<Vec<_>>(),
            "ports": ports.iter().map(|(port, protocol)| json!({
                "name": port.to_string(), "port": port, "protocol": protocol,
            })).collect::<Vec<_>>(),
        }],
    });
    [endpoints, service]
        .into_iter()
        .map(|manifest| Resource::from_manifest(manifest).map_err(|e| e.to_string()))
        .collect()
}

/// Hears rsync's finished reconciles and makes the services of the DIGs
/// that ask for it known, one DIG at a time each, off rsync's workers.
pub struct FollowUps {
    orchestrator: Orchestrator,
    /// The DIGs being worked on, and whether another reconcile ended
    /// since the work began (then it runs once more).
    busy: Mutex<HashMap<String, bool>>,
    myself: Weak<FollowUps>,
}

impl FollowUps {
    /// Listening to `orchestrator`'s sync engine for as long as the
    /// returned value is kept.
    pub fn start(orchestrator: &Orchestrator) -> Arc<FollowUps> {
        let follow_ups = Arc::new_cyclic(|myself| FollowUps {
            orchestrator: orchestrator.clone(),
            busy: Mutex::default(),
            myself: myself.clone(),
        });
        let listener: Weak<dyn ReconcileListener> = Arc::downgrade(&follow_ups) as _;
        orchestrator.sync.listen(listener);
        follow_ups
    }

    fn run(&self, dig: DigRef) {
        let key = dig.key();
        loop {
            if let Err(error) = self.orchestrator.mirror_services(&dig) {
                tracing::warn!(dig = %key, %error, "could not make the services known");
            }
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            match busy.get_mut(&key) {
                Some(again) if *again => *again = false,
                _ => {
                    busy.remove(&key);
                    return;
                }
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
        let Some(this) = self.myself.upgrade() else {
            return;
        };
        // It takes locks and asks clusters, which block.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || this.run(dig))),
            Err(_) => drop(std::thread::spawn(move || this.run(dig))),
        }
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

    #[test]
    fn the_mirror_points_at_every_server_address_on_the_ports_named_by_number() {
        let ports = vec![
            json!({"port": 30083, "targetPort": 3333, "nodePort": 30083, "protocol": "TCP"}),
            json!({"port": 53, "protocol": "UDP"}),
        ];
        let served = [
            Served {
                address: "10.0.0.2".into(),
                ports: ports.clone(),
            },
            Served {
                address: "10.0.1.2".into(),
                ports,
            },
        ];
        let made = mirrored(&meta(), "http-service", &served).unwrap();
        let endpoints = &made[0].manifest;
        assert_eq!(endpoints["metadata"]["namespace"], "ns1");
        assert_eq!(
            endpoints["subsets"][0]["addresses"],
            json!([{"ip": "10.0.0.2"}, {"ip": "10.0.1.2"}])
        );
        assert_eq!(
            endpoints["subsets"][0]["ports"][1],
            json!({"name": "53", "port": 53, "protocol": "UDP"})
        );
        let service = &made[1].manifest;
        assert_eq!(service["spec"]["clusterIP"], "None");
        assert!(service["spec"].get("selector").is_none());
        assert_eq!(
            service["spec"]["ports"][0],
            json!({"name": "30083", "protocol": "TCP", "port": 30083, "targetPort": 30083})
        );
    }

    #[test]
    fn servers_exposing_other_ports_are_refused() {
        let served = [
            Served {
                address: "10.0.0.2".into(),
                ports: vec![json!({"port": 80})],
            },
            Served {
                address: "10.0.1.2".into(),
                ports: vec![json!({"port": 81})],
            },
        ];
        assert!(
            mirrored(&meta(), "svc", &served)
                .unwrap_err()
                .contains("different ports")
        );
    }
}
