//! Everything an instantiate reads from the resource database: the apps and
//! their rendered manifests, their order, the clusters, and the controllers
//! with their intents.
//!
//! Rendering a plain-manifest app: its profile's file and the DIG's
//! `overrideValues` are maps from `Kind/name` to an RFC 7386 merge patch
//! for that resource of the app, applied in that order (profile, then
//! override values).
//!
//! Rendering a Helm chart app: Helm's own engine (see
//! [`wasmco_runtime::helm`]) renders it with release name = the DIG's
//! `spec.version` and namespace = its logical cloud's (else `default`);
//! values are the chart's, then the profile's values file, then the DIG's
//! `overrideValues` as `--set` strings.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use wasmco_core::files::{AppFileKind, Profile};
use wasmco_core::hooks::{Hook, HookDeletePolicy, HookEvent};
use wasmco_core::intents::{Need, ReferenceTarget};
use wasmco_core::resource::Resource;
use wasmco_core::specs::{
    AppProfileSpec, ControllerSpec, DependencySpec, DigIntentSpec, DigSpec, GENERIC_PLACEMENT_KEY,
    KvPairSpec,
};
use wasmco_core::{ClusterRef, Kind};
use wasmco_runtime::contract::ContractVersion;
use wasmco_runtime::helm::{HelmError, HelmRenderer, RenderRequest};
use wasmco_runtime::{Controller, ControllerKind};
use wasmco_store::appcontext::{Access, AppDependency};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

use super::dig::{DigRef, OrchestratorError};
use super::intents::{Catalog, ClusterFacts, GroupIntents, IntentSources};
use super::registry::{ControllerRegistry, LoadError};
use crate::draft::{AppDraft, ClusterInfo, ClusterNodes, NodeInfo};

/// A controller to run, with its intent and priority.
pub struct PlannedStep {
    pub controller: Arc<Controller>,
    pub intent: String,
    pub priority: u32,
    /// The clusters' nodes, when its declaration asks for them.
    pub nodes: Option<Arc<ClusterNodes>>,
}

/// What [`gather`] read.
pub struct Inputs {
    pub release: String,
    pub apps: Vec<AppDraft>,
    pub app_order: Vec<String>,
    pub dependencies: BTreeMap<String, Vec<AppDependency>>,
    pub clusters: Vec<ClusterInfo>,
    pub steps: Vec<PlannedStep>,
}

fn input(message: impl Into<String>) -> OrchestratorError {
    OrchestratorError::Input(message.into())
}

fn names(
    db: &ResourceDb,
    kind: Kind,
    parent: &[String],
) -> Result<Vec<(ResourceId, Value)>, OrchestratorError> {
    Ok(db.list(kind, parent)?)
}

/// Where a DIG deploys (see `Orchestrator::deployment_scope`).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// As whom, and into which namespace.
    pub access: Access,
    /// The clusters placement may choose from; `None` is every cluster.
    pub clusters: Option<BTreeSet<ClusterRef>>,
    /// The logical cloud's labels (its namespace's), for controllers.
    pub cloud_labels: BTreeMap<String, String>,
}

/// Reads the DIG's inputs; renders its apps (charts into the scope's
/// namespace) and offers placement the scope's clusters.
pub fn gather(
    db: &ResourceDb,
    registry: &ControllerRegistry,
    sources: IntentSources<'_>,
    generic: &Arc<Controller>,
    helm: &HelmRenderer,
    dig: &DigRef,
    scope: Scope,
) -> Result<Inputs, OrchestratorError> {
    let spec: DigSpec = db.spec(&dig.id())?;
    let version_path = dig.version_path();

    let mut profiles: BTreeMap<String, Profile> = BTreeMap::new();
    let mut profile_path = version_path.clone();
    profile_path.push(spec.composite_profile.clone());
    for (id, profile) in db.list_specs::<AppProfileSpec>(Kind::AppProfile, &profile_path)? {
        let Some(file) = db.file(&id)? else { continue };
        let read = wasmco_core::files::read_profile(&file)
            .map_err(|e| input(format!("{}: {e}", id.describe())))?;
        profiles.insert(profile.app, read);
    }
    let mut overrides: BTreeMap<String, Vec<serde_json::Map<String, Value>>> = BTreeMap::new();
    for entry in &spec.override_values {
        overrides
            .entry(entry.app.clone())
            .or_default()
            .push(entry.values.clone());
    }
    let release = Release {
        name: spec.version.clone(),
        namespace: scope.access.namespace().to_owned(),
    };

    let mut apps = Vec::new();
    let mut dependencies = BTreeMap::new();
    // Each in one scan: every read is a round trip on etcd.
    let mut files = db.files_under(Kind::App, &version_path)?;
    let mut all_dependencies: BTreeMap<String, Vec<AppDependency>> = BTreeMap::new();
    for (id, body) in db.list_under(Kind::AppDependency, &version_path)? {
        let dependency: DependencySpec =
            wasmco_core::read_spec(&body["spec"]).map_err(|e| DbError::Corrupt {
                id: id.clone(),
                reason: e.to_string(),
            })?;
        if let Some(app) = id.path.get(version_path.len()) {
            all_dependencies
                .entry(app.clone())
                .or_default()
                .push(AppDependency {
                    app: dependency.app,
                    op_status: dependency.op_status,
                    wait: dependency.wait,
                });
        }
    }
    for (id, _) in names(db, Kind::App, &version_path)? {
        let name = id.path.last().cloned().unwrap_or_default();
        let file = files
            .remove(&id)
            .ok_or_else(|| input(format!("app {name} has no manifests")))?;
        let profile = profiles.remove(&name);
        let app_overrides = overrides.remove(&name).unwrap_or_default();
        let app = match wasmco_core::files::app_file_kind(&file) {
            AppFileKind::Chart => {
                render_chart(helm, &name, file, profile, &app_overrides, &release)?
            }
            AppFileKind::Manifests => render_manifests(&name, &file, profile, app_overrides)?,
        };
        let deps = all_dependencies.remove(&name).unwrap_or_default();
        dependencies.insert(name.clone(), deps);
        apps.push(app);
    }
    if apps.is_empty() {
        return Err(input("the composite app has no apps"));
    }
    if let Some(app) = overrides.keys().next() {
        return Err(input(format!(
            "override values name app {app}, which the composite app does not have"
        )));
    }
    let app_order = app_order(&apps, &dependencies)?;
    apps.sort_by_key(|a| app_order.iter().position(|n| *n == a.name));

    let mut clusters = clusters(db)?;
    if let Some(allowed) = &scope.clusters {
        clusters.retain(|c| allowed.contains(&ClusterRef::new(&c.provider, &c.name)));
    }
    let group = json!({
        "project": dig.project,
        "compositeApp": dig.composite_app,
        "compositeAppVersion": dig.version,
        "name": dig.name,
        "logicalCloud": spec.logical_cloud.clone().unwrap_or_default(),
        "logicalCloudLabels": scope.cloud_labels,
        "namespace": release.namespace,
    });
    let declared = DeclaredInputs {
        catalog: sources.catalog.current(db)?,
        group,
        apps: apps.iter().map(|a| a.name.clone()).collect(),
        clusters: &clusters,
        facts: sources.facts,
        nodes: std::cell::OnceCell::new(),
    };
    let steps = steps(db, registry, generic, dig, &declared)?;
    Ok(Inputs {
        release: spec.version,
        apps,
        app_order,
        dependencies,
        clusters,
        steps,
    })
}

/// The Helm release a DIG's charts are rendered as.
struct Release {
    name: String,
    namespace: String,
}

/// A plain-manifest app: its manifests with the profile's and the DIG's
/// `Kind/name` merge patches applied.
fn render_manifests(
    name: &str,
    file: &[u8],
    profile: Option<Profile>,
    overrides: Vec<serde_json::Map<String, Value>>,
) -> Result<AppDraft, OrchestratorError> {
    let mut resources =
        wasmco_core::files::parse_manifests(file).map_err(|e| input(format!("app {name}: {e}")))?;
    let mut patches = match profile {
        None => serde_json::Map::new(),
        Some(Profile::Map(map)) => map,
        Some(Profile::HelmValues(_)) => {
            return Err(input(format!(
                "app {name} is not a Helm chart, so its profile's Helm values do not apply to it; \
                 give it a profile of Kind/name merge patches"
            )));
        }
    };
    for map in overrides {
        patches.extend(map);
    }
    for (target, patch) in patches {
        render(name, &mut resources, &target, &patch)?;
    }
    Ok(AppDraft::new(name, resources))
}

/// A chart app, rendered by Helm's engine; its hooks kept apart.
fn render_chart(
    helm: &HelmRenderer,
    name: &str,
    chart: Vec<u8>,
    profile: Option<Profile>,
    overrides: &[serde_json::Map<String, Value>],
    release: &Release,
) -> Result<AppDraft, OrchestratorError> {
    let value_files = match profile {
        None => Vec::new(),
        Some(Profile::HelmValues(files)) => files,
        // A plain YAML profile of a chart is a values file.
        Some(Profile::Map(map)) => vec![Value::Object(map).to_string()],
    };
    let mut set = Vec::new();
    for map in overrides {
        for (key, value) in map {
            let value = match value {
                Value::String(text) => text.clone(),
                Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
                _ => {
                    return Err(input(format!(
                        "app {name}: override value {key:?} must be a string, number or boolean \
                         (a chart's override values are Helm --set values)"
                    )));
                }
            };
            set.push(format!("{key}={value}"));
        }
    }
    wasmco_core::specs::check_dns_label("spec.version", &release.name).map_err(|e| {
        input(format!(
            "app {name} is a Helm chart, so the release name (the DIG's {}) must be a DNS label: {}",
            e.field, e.reason
        ))
    })?;
    let chart = wasmco_core::files::chart_for_app(&chart, name)
        .map_err(|e| input(format!("app {name}: {e}")))?
        .into_owned();
    let request = RenderRequest {
        chart,
        value_files,
        set,
        release: release.name.clone(),
        namespace: release.namespace.clone(),
        kube_version: None,
    };
    let rendered = helm.render(&request).map_err(|e| match e {
        busy @ HelmError::Busy { .. } => OrchestratorError::Busy(busy.to_string()),
        e => input(format!("app {name}: Helm could not render the chart: {e}")),
    })?;
    let mut resources = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for manifest in &rendered.manifests {
        let parsed = wasmco_core::files::parse_manifests(manifest.content.as_bytes())
            .map_err(|e| input(format!("app {name}: {}: {}", manifest.source, e.reason)))?;
        for resource in parsed {
            if !seen.insert(resource.key.clone()) {
                return Err(input(format!(
                    "app {name}: {}: {} appears twice in the chart",
                    manifest.source, resource.key
                )));
            }
            resources.push(resource);
        }
    }
    let mut hooks = Vec::new();
    for hook in &rendered.hooks {
        let resource = wasmco_core::files::parse_manifests(hook.content.as_bytes())
            .map_err(|e| input(format!("app {name}: hook {}: {}", hook.source, e.reason)))?
            .into_iter()
            .next()
            .ok_or_else(|| input(format!("app {name}: hook {} is empty", hook.source)))?;
        let events: Vec<HookEvent> = hook
            .events
            .iter()
            .filter_map(|e| HookEvent::parse(e))
            .collect();
        if events.is_empty() {
            continue;
        }
        hooks.push(Hook {
            resource,
            events,
            weight: hook.weight,
            delete_policies: hook
                .delete_policies
                .iter()
                .filter_map(|p| HookDeletePolicy::parse(p))
                .collect(),
        });
    }
    tracing::debug!(
        app = name,
        chart = %rendered.chart.name,
        resources = resources.len(),
        hooks = hooks.len(),
        render = ?rendered.timings.render,
        instantiate = ?rendered.timings.instantiate,
        "chart rendered"
    );
    let mut app = AppDraft::new(name, resources);
    app.hooks = hooks;
    Ok(app)
}

/// Applies one `Kind/name` merge patch to an app's resources.
fn render(
    app: &str,
    resources: &mut [Resource],
    target: &str,
    patch: &Value,
) -> Result<(), OrchestratorError> {
    let (kind, name) = target.split_once('/').ok_or_else(|| {
        input(format!(
            "app {app}: override key {target:?} must be Kind/name naming one of its resources"
        ))
    })?;
    let resource = resources
        .iter_mut()
        .find(|r| r.key.kind == kind && r.key.name == name)
        .ok_or_else(|| {
            input(format!(
                "app {app}: override names {target}, which the app does not have"
            ))
        })?;
    let mut manifest = resource.manifest.clone();
    json_patch::merge(&mut manifest, patch);
    let patched = Resource::from_manifest(manifest).map_err(|e| {
        input(format!(
            "app {app}: override of {target} makes it invalid: {e}"
        ))
    })?;
    if patched.key != resource.key {
        return Err(input(format!(
            "app {app}: override of {target} may not change its kind or name"
        )));
    }
    *resource = patched;
    Ok(())
}

/// Apps with their dependencies first; otherwise in name order.
fn app_order(
    apps: &[AppDraft],
    deps: &BTreeMap<String, Vec<AppDependency>>,
) -> Result<Vec<String>, OrchestratorError> {
    let mut order: Vec<String> = Vec::new();
    let mut names: Vec<&str> = apps.iter().map(|a| a.name.as_str()).collect();
    names.sort_unstable();
    while order.len() < names.len() {
        let ready = names.iter().find(|name| {
            !order.iter().any(|o| o == *name)
                && deps
                    .get(**name)
                    .into_iter()
                    .flatten()
                    .all(|d| order.contains(&d.app))
        });
        match ready {
            Some(name) => order.push((*name).to_owned()),
            None => {
                let stuck: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|n| !order.iter().any(|o| o == n))
                    .collect();
                return Err(input(format!(
                    "app dependencies form a cycle among {}",
                    stuck.join(", ")
                )));
            }
        }
    }
    Ok(order)
}

/// Every registered cluster with its labels and key/value pairs: a few
/// scans per provider, not per cluster (each is a round trip on etcd).
pub(crate) fn clusters(db: &ResourceDb) -> Result<Vec<ClusterInfo>, OrchestratorError> {
    let mut clusters = Vec::new();
    for (provider, _) in names(db, Kind::ClusterProvider, &[])? {
        let mut labels: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (label, body) in db.list_under(Kind::ClusterLabel, &provider.path)? {
            if let (Some(cluster), Some(label)) = (label.path.get(1), body["clusterLabel"].as_str())
            {
                labels
                    .entry(cluster.clone())
                    .or_default()
                    .push(label.to_owned());
            }
        }
        let mut kv: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (id, body) in db.list_under(Kind::ClusterKvPair, &provider.path)? {
            let Some(cluster) = id.path.get(1) else {
                continue;
            };
            let pairs: KvPairSpec =
                wasmco_core::read_spec(&body["spec"]).map_err(|e| DbError::Corrupt {
                    id: id.clone(),
                    reason: e.to_string(),
                })?;
            for (key, value) in pairs.kv.into_iter().flatten() {
                // The API admits strings only.
                if let Value::String(value) = value {
                    kv.entry(cluster.clone()).or_default().push((key, value));
                }
            }
        }
        for (cluster, _) in names(db, Kind::Cluster, &provider.path)? {
            let name = &cluster.path[1];
            clusters.push(ClusterInfo {
                provider: cluster.path[0].clone(),
                name: name.clone(),
                labels: labels.remove(name).unwrap_or_default(),
                kv: kv.remove(name).unwrap_or_default(),
            });
        }
    }
    Ok(clusters)
}

/// Generic placement first, then the DIG's placement controllers and then
/// its action controllers, each by priority (lower first), then name.
fn steps(
    db: &ResourceDb,
    registry: &ControllerRegistry,
    generic: &Arc<Controller>,
    dig: &DigRef,
    declared: &DeclaredInputs<'_>,
) -> Result<Vec<PlannedStep>, OrchestratorError> {
    let dig_path = dig.id().path;
    let mut intents: BTreeMap<String, String> = BTreeMap::new();
    for (_, dig_intent) in db.list_specs::<DigIntentSpec>(Kind::DigIntent, &dig_path)? {
        intents.extend(dig_intent.intent);
    }
    let gpi = intents.remove(GENERIC_PLACEMENT_KEY).ok_or_else(|| {
        input("the deployment intent group has no genericPlacementIntent in its intents")
    })?;
    let mut gpi_path = dig_path.clone();
    gpi_path.push(gpi.clone());
    // Intents are named by the DIG's intents document, which may come
    // before them (as in EMCO's files): missing ones are found here.
    let missing = |kind: Kind, name: &str| {
        input(format!(
            "the deployment intent group's intents name {} {name}, which it does not have",
            kind.info().title
        ))
    };
    if !db.exists(&ResourceId::new(
        Kind::GenericPlacementIntent,
        gpi_path.clone(),
    ))? {
        return Err(missing(Kind::GenericPlacementIntent, &gpi));
    }
    let app_intents: Vec<Value> = names(db, Kind::GenericAppIntent, &gpi_path)?
        .into_iter()
        .map(|(_, body)| json!({"app": body["spec"]["app"], "intent": body["spec"]["intent"]}))
        .collect();
    let mut placement = Vec::new();
    let mut action = Vec::new();
    // Read once, and only when a declaring controller is named.
    let mut group_intents: Option<GroupIntents> = None;
    for (name, intent_name) in intents {
        let controller = registry
            .current(&name, db)
            .map_err(|error| match error {
                LoadError::Db(error) => OrchestratorError::Db(error),
                error => input(error.to_string()),
            })?
            .ok_or_else(|| input(format!("controller {name} is not stored; upload it")))?;
        let priority = db
            .spec::<ControllerSpec>(&ResourceId::new(Kind::Controller, vec![name.clone()]))?
            .priority;
        let mut intent_path = dig_path.clone();
        intent_path.push(intent_name.clone());
        let intent_id = ResourceId::new(Kind::ControllerIntent, intent_path);
        // A controller-intents document of that name is handed over as it
        // is, as before the controller declared kinds of its own.
        let (intent, nodes) = match (db.exists(&intent_id)?, declared.catalog.of(&name)) {
            (true, _) => (db.get(&intent_id)?["spec"].to_string(), None),
            (false, Some(declaration)) => {
                let group = match &mut group_intents {
                    Some(group) => group,
                    None => group_intents.insert(GroupIntents::read(db, &dig_path)?),
                };
                declared.tree(db, group, declaration, &intent_name, controller.contract())?
            }
            (false, None) => return Err(missing(Kind::ControllerIntent, &intent_name)),
        };
        let step = PlannedStep {
            controller,
            intent,
            priority,
            nodes,
        };
        match step.controller.kind() {
            ControllerKind::Placement => placement.push(step),
            ControllerKind::Action => action.push(step),
        }
    }
    for group in [&mut placement, &mut action] {
        group.sort_by(|a, b| {
            (a.priority, a.controller.name()).cmp(&(b.priority, b.controller.name()))
        });
    }
    let mut steps = vec![PlannedStep {
        controller: generic.clone(),
        intent: json!({ "appIntents": app_intents }).to_string(),
        priority: 0,
        nodes: None,
    }];
    steps.extend(placement);
    steps.extend(action);
    Ok(steps)
}

/// What a declaring controller's tree is built from.
struct DeclaredInputs<'a> {
    catalog: Arc<Catalog>,
    /// The group's identity, as the tree carries it.
    group: Value,
    apps: BTreeSet<String>,
    clusters: &'a [ClusterInfo],
    facts: &'a dyn ClusterFacts,
    /// The clusters' nodes, read the first time a controller asks.
    nodes: std::cell::OnceCell<ReadNodes>,
}

/// The clusters' nodes as read for the controllers that ask for them.
struct ReadNodes {
    /// By cluster index, for the node table of a 0.2.0 request.
    table: Arc<ClusterNodes>,
    /// By `provider+cluster`, as 0.1.0 controllers get them in the tree's
    /// `facts`; a cluster that could not be read is left out.
    json: serde_json::Map<String, Value>,
}

impl DeclaredInputs<'_> {
    /// The tree `declared` gets for the intents named `name` (and the
    /// clusters' nodes, for a 0.2.0 controller that asks for them), once every
    /// reference in it resolves (a 422 naming each that does not, as EMCO
    /// refuses at instantiate).
    fn tree(
        &self,
        db: &ResourceDb,
        group: &GroupIntents,
        declared: &super::intents::Declared,
        name: &str,
        contract: ContractVersion,
    ) -> Result<(String, Option<Arc<ClusterNodes>>), OrchestratorError> {
        let project = self.group["project"].as_str().unwrap_or_default();
        let exists = |to: ReferenceTarget, target: &str, provider: Option<&str>| {
            let id = match to {
                ReferenceTarget::App => return Ok(self.apps.contains(target)),
                ReferenceTarget::ClusterProvider => {
                    ResourceId::new(Kind::ClusterProvider, vec![target.to_owned()])
                }
                ReferenceTarget::Cluster => ResourceId::new(
                    Kind::Cluster,
                    vec![provider.unwrap_or_default().to_owned(), target.to_owned()],
                ),
                ReferenceTarget::LogicalCloud => ResourceId::new(
                    Kind::LogicalCloud,
                    vec![project.to_owned(), target.to_owned()],
                ),
            };
            db.exists(&id)
        };
        let broken = group.broken_references(declared, &exists)?;
        if !broken.is_empty() {
            return Err(input(format!(
                "controller {}'s intents name what does not exist: {}",
                declared.controller,
                broken.join("; ")
            )));
        }
        let mut facts = json!({});
        let mut nodes = None;
        if declared.declaration.needs.contains(&Need::Nodes) {
            let read = self.nodes();
            match contract {
                ContractVersion::V0_2 => nodes = Some(read.table.clone()),
                ContractVersion::V0_1 => facts["nodes"] = Value::Object(read.json.clone()),
            }
        }
        let mut tree = group.tree(declared, name, self.group.clone(), facts);
        let across = &declared.declaration.reads_across;
        if !across.is_empty() {
            tree["others"] = Value::Array(self.other_groups(db, across)?);
        }
        Ok((tree.to_string(), nodes))
    }

    /// The clusters' nodes, read once for every controller that asks.
    fn nodes(&self) -> &ReadNodes {
        self.nodes.get_or_init(|| {
            let references: Vec<_> = self.clusters.iter().map(|c| c.reference()).collect();
            let answers = self.facts.nodes_of(&references);
            let mut table = Vec::with_capacity(references.len());
            let mut json = serde_json::Map::new();
            for (reference, answer) in references.iter().zip(answers) {
                match answer {
                    Ok(found) => {
                        table.push(NodeInfo::list_from_json(&found));
                        json.insert(reference.to_string(), found);
                    }
                    // Placement decides without them: a cluster it cannot
                    // read has no capacity it can count on.
                    Err(reason) => {
                        tracing::warn!(cluster = %reference, %reason, "cannot read the cluster's nodes");
                        table.push(Vec::new());
                    }
                }
            }
            ReadNodes {
                table: Arc::new(table),
                json,
            }
        })
    }

    /// The intents of `segments` in the project's other deployment intent
    /// groups, each group with its identity; groups without any are left out.
    fn other_groups(
        &self,
        db: &ResourceDb,
        segments: &[String],
    ) -> Result<Vec<Value>, OrchestratorError> {
        let project = self.group["project"].as_str().unwrap_or_default();
        let mut others = Vec::new();
        for (id, _) in db.list_under(Kind::DeploymentIntentGroup, &[project.to_owned()])? {
            let [_, composite_app, version, name] = id.path.as_slice() else {
                continue;
            };
            let this = self.group["compositeApp"] == composite_app.as_str()
                && self.group["compositeAppVersion"] == version.as_str()
                && self.group["name"] == name.as_str();
            if this {
                continue;
            }
            let intents = GroupIntents::read(db, &id.path)?.top_of(segments);
            if !intents.is_empty() {
                others.push(json!({
                    "compositeApp": composite_app,
                    "compositeAppVersion": version,
                    "name": name,
                    "intents": intents,
                }));
            }
        }
        Ok(others)
    }
}
