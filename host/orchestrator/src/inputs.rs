//! Everything an instantiate reads from the resource database: the apps and
//! their rendered manifests, their order, the clusters, and the controllers
//! with their intents.
//!
//! Rendering: an app profile's file and the DIG's `overrideValues` are maps
//! from `Kind/name` to an RFC 7386 merge patch for that resource of the app,
//! applied in that order (profile, then override values).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::resource::Resource;
use wasmco_core::specs::{
    AppProfileSpec, ControllerSpec, DependencySpec, DigIntentSpec, DigSpec, GENERIC_PLACEMENT_KEY,
    KvPairSpec,
};
use wasmco_runtime::{Controller, ControllerKind};
use wasmco_store::appcontext::AppDependency;
use wasmco_store::db::{ResourceDb, ResourceId};

use super::dig::{DigRef, OrchestratorError};
use super::registry::ControllerRegistry;
use crate::draft::{AppDraft, ClusterInfo};

/// A controller to run, with its intent and priority.
pub struct PlannedStep {
    pub controller: Arc<Controller>,
    pub intent: String,
    pub priority: u32,
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

/// Reads the DIG's inputs.
pub fn gather(
    db: &ResourceDb,
    registry: &ControllerRegistry,
    generic: &Arc<Controller>,
    dig: &DigRef,
) -> Result<Inputs, OrchestratorError> {
    let spec: DigSpec = db.spec(&dig.id())?;
    let version_path = dig.version_path();

    let mut patches: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    let mut profile_path = version_path.clone();
    profile_path.push(spec.composite_profile);
    for (id, profile) in db.list_specs::<AppProfileSpec>(Kind::AppProfile, &profile_path)? {
        let Some(file) = db.file(&id)? else { continue };
        let text = String::from_utf8_lossy(&file);
        let values: Value = serde_norway::from_str(&text)
            .map_err(|e| input(format!("{}: not YAML: {e}", id.describe())))?;
        if let Value::Object(map) = values {
            patches.entry(profile.app).or_default().extend(map);
        }
    }
    for entry in spec.override_values {
        patches.entry(entry.app).or_default().extend(entry.values);
    }

    let mut apps = Vec::new();
    let mut dependencies = BTreeMap::new();
    for (id, _) in names(db, Kind::App, &version_path)? {
        let name = id.path.last().cloned().unwrap_or_default();
        let file = db
            .file(&id)?
            .ok_or_else(|| input(format!("app {name} has no manifests")))?;
        let mut resources = wasmco_core::files::parse_manifests(&file)
            .map_err(|e| input(format!("app {name}: {e}")))?;
        for (target, patch) in patches.remove(&name).unwrap_or_default() {
            render(&name, &mut resources, &target, &patch)?;
        }
        let deps = db
            .list_specs::<DependencySpec>(Kind::AppDependency, &id.path)?
            .into_iter()
            .map(|(_, dependency)| AppDependency {
                app: dependency.app,
                op_status: dependency.op_status,
                wait: dependency.wait,
            })
            .collect();
        dependencies.insert(name.clone(), deps);
        apps.push(AppDraft::new(name, resources));
    }
    if apps.is_empty() {
        return Err(input("the composite app has no apps"));
    }
    if let Some(app) = patches.keys().next() {
        return Err(input(format!(
            "override values name app {app}, which the composite app does not have"
        )));
    }
    let app_order = app_order(&apps, &dependencies)?;
    apps.sort_by_key(|a| app_order.iter().position(|n| *n == a.name));

    let clusters = clusters(db)?;
    let steps = steps(db, registry, generic, dig)?;
    Ok(Inputs {
        release: spec.version,
        apps,
        app_order,
        dependencies,
        clusters,
        steps,
    })
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

/// Every registered cluster with its labels and key/value pairs.
fn clusters(db: &ResourceDb) -> Result<Vec<ClusterInfo>, OrchestratorError> {
    let mut clusters = Vec::new();
    for (provider, _) in names(db, Kind::ClusterProvider, &[])? {
        for (cluster, _) in names(db, Kind::Cluster, &provider.path)? {
            let labels = names(db, Kind::ClusterLabel, &cluster.path)?
                .into_iter()
                .filter_map(|(_, body)| body["clusterLabel"].as_str().map(str::to_owned))
                .collect();
            let mut kv = Vec::new();
            for (_, pairs) in db.list_specs::<KvPairSpec>(Kind::ClusterKvPair, &cluster.path)? {
                for (key, value) in pairs.kv.into_iter().flatten() {
                    // The API admits strings only.
                    if let Value::String(value) = value {
                        kv.push((key, value));
                    }
                }
            }
            clusters.push(ClusterInfo {
                provider: cluster.path[0].clone(),
                name: cluster.path[1].clone(),
                labels,
                kv,
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
    gpi_path.push(gpi);
    let app_intents: Vec<Value> = names(db, Kind::GenericAppIntent, &gpi_path)?
        .into_iter()
        .map(|(_, body)| json!({"app": body["spec"]["app"], "intent": body["spec"]["intent"]}))
        .collect();
    let mut placement = Vec::new();
    let mut action = Vec::new();
    for (name, intent_name) in intents {
        let controller = registry
            .get(&name)
            .ok_or_else(|| input(format!("controller {name} is not loaded; upload it again")))?;
        let priority = db
            .spec::<ControllerSpec>(&ResourceId::new(Kind::Controller, vec![name.clone()]))?
            .priority;
        let mut intent_path = dig_path.clone();
        intent_path.push(intent_name);
        let intent =
            db.get(&ResourceId::new(Kind::ControllerIntent, intent_path))?["spec"].to_string();
        let step = PlannedStep {
            controller,
            intent,
            priority,
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
    }];
    steps.extend(placement);
    steps.extend(action);
    Ok(steps)
}
