//! Everything an instantiate reads from the resource database: the apps
//! and their rendered manifests, their order, the clusters, and the
//! controllers with their intents.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use wasmco_core::files::{AppFileKind, Profile};
use wasmco_core::specs::{AppProfileSpec, DependencySpec, DigSpec};
use wasmco_core::{ClusterRef, Kind};
use wasmco_runtime::Controller;
use wasmco_runtime::helm::HelmRenderer;
use wasmco_store::appcontext::{Access, AppDependency};
use wasmco_store::db::{DbError, ResourceDb};

use super::render::{Release, render_chart, render_manifests};
use super::steps::{DeclaredInputs, PlannedStep, steps};
use crate::clusters::clusters;
use crate::draft::{AppDraft, ClusterInfo};
use crate::error::{OrchestratorError, input};
use crate::intents::{ClusterFacts, IntentCatalog};
use crate::registry::ControllerRegistry;
use crate::target::DigRef;

/// What a DIG's inputs are read with, besides the database.
pub(crate) struct Sources<'a> {
    /// The controllers, by name.
    pub(crate) registry: &'a ControllerRegistry,
    /// Called for generic placement intents.
    pub(crate) generic: &'a Arc<Controller>,
    /// Renders the apps that are Helm charts.
    pub(crate) helm: &'a HelmRenderer,
    /// The intent kinds the stored controllers declare.
    pub(crate) intents: &'a IntentCatalog,
}

/// What [`gather`] read.
pub(crate) struct Inputs {
    pub(crate) release: String,
    pub(crate) apps: Vec<AppDraft>,
    pub(crate) app_order: Vec<String>,
    pub(crate) dependencies: BTreeMap<String, Vec<AppDependency>>,
    pub(crate) clusters: Vec<ClusterInfo>,
    pub(crate) steps: Vec<PlannedStep>,
}

/// Where a DIG deploys (see `Build::deployment_scope`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    /// As whom, and into which namespace.
    pub(crate) access: Access,
    /// The clusters placement may choose from; `None` is every cluster.
    pub(crate) clusters: Option<BTreeSet<ClusterRef>>,
    /// Clusters placement may not choose now (the failover intent's).
    pub(crate) avoid: BTreeSet<ClusterRef>,
    /// The logical cloud's labels (its namespace's), for controllers.
    pub(crate) cloud_labels: BTreeMap<String, String>,
}

/// An app's overrides: `Kind/name` merge patches, or a chart's values.
type Overrides = Vec<serde_json::Map<String, Value>>;

/// Reads the DIG's inputs; renders its apps (charts into the scope's
/// namespace) and offers placement the scope's clusters.
pub(crate) fn gather(
    db: &ResourceDb,
    sources: &Sources<'_>,
    facts: &dyn ClusterFacts,
    dig: &DigRef,
    scope: Scope,
) -> Result<Inputs, OrchestratorError> {
    let spec: DigSpec = db.spec(&dig.id())?;
    let release = Release {
        name: spec.version.clone(),
        namespace: scope.access.namespace().to_owned(),
    };
    let Apps {
        apps,
        app_order,
        dependencies,
    } = apps(db, sources.helm, dig, &spec, &release)?;
    let mut clusters = clusters(db)?;
    clusters.retain(|c| {
        let cluster = ClusterRef::new(&c.provider, &c.name);
        scope.clusters.as_ref().is_none_or(|a| a.contains(&cluster))
            && !scope.avoid.contains(&cluster)
    });
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
        catalog: sources.intents.current(db)?,
        group,
        apps: apps.iter().map(|a| a.name.clone()).collect(),
        clusters: &clusters,
        facts,
        nodes: std::cell::OnceCell::new(),
    };
    let steps = steps(db, sources.registry, sources.generic, dig, &declared)?;
    Ok(Inputs {
        release: spec.version,
        apps,
        app_order,
        dependencies,
        clusters,
        steps,
    })
}

/// The composite app's apps, rendered, in app order.
struct Apps {
    apps: Vec<AppDraft>,
    app_order: Vec<String>,
    dependencies: BTreeMap<String, Vec<AppDependency>>,
}

/// The composite app's apps, rendered with the DIG's profiles and
/// override values, in app order; with that order and their dependencies.
fn apps(
    db: &ResourceDb,
    helm: &HelmRenderer,
    dig: &DigRef,
    spec: &DigSpec,
    release: &Release,
) -> Result<Apps, OrchestratorError> {
    let version_path = dig.version_path();
    let mut profiles = profiles(db, &version_path, &spec.composite_profile)?;
    let mut overrides: BTreeMap<String, Overrides> = BTreeMap::new();
    for entry in &spec.override_values {
        overrides
            .entry(entry.app.clone())
            .or_default()
            .push(entry.values.clone());
    }
    let mut apps = Vec::new();
    let mut dependencies = BTreeMap::new();
    // Each in one scan: every read is a round trip on etcd.
    let mut files = db.files_under(Kind::App, &version_path)?;
    let mut all_dependencies = all_dependencies(db, &version_path)?;
    for (id, _) in db.list(Kind::App, &version_path)? {
        let name = id.path.last().cloned().unwrap_or_default();
        let file = files
            .remove(&id)
            .ok_or_else(|| input(format!("app {name} has no manifests")))?;
        let profile = profiles.remove(&name);
        let app_overrides = overrides.remove(&name).unwrap_or_default();
        let app = match wasmco_core::files::app_file_kind(&file) {
            AppFileKind::Chart => {
                render_chart(helm, &name, file, profile, &app_overrides, release)?
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
    Ok(Apps {
        apps,
        app_order,
        dependencies,
    })
}

/// The composite profile's app profiles, by app.
fn profiles(
    db: &ResourceDb,
    version_path: &[String],
    composite_profile: &str,
) -> Result<BTreeMap<String, Profile>, OrchestratorError> {
    let mut profiles: BTreeMap<String, Profile> = BTreeMap::new();
    let mut profile_path = version_path.to_vec();
    profile_path.push(composite_profile.to_owned());
    for (id, profile) in db.list_specs::<AppProfileSpec>(Kind::AppProfile, &profile_path)? {
        let Some(file) = db.file(&id)? else { continue };
        let read = wasmco_core::files::read_profile(&file)
            .map_err(|e| input(format!("{}: {e}", id.describe())))?;
        profiles.insert(profile.app, read);
    }
    Ok(profiles)
}

/// Every app's dependencies, by app.
fn all_dependencies(
    db: &ResourceDb,
    version_path: &[String],
) -> Result<BTreeMap<String, Vec<AppDependency>>, OrchestratorError> {
    let mut all_dependencies: BTreeMap<String, Vec<AppDependency>> = BTreeMap::new();
    for (id, body) in db.list_under(Kind::AppDependency, version_path)? {
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
    Ok(all_dependencies)
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
