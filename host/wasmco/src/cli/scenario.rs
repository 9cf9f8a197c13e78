//! `wasmco run`: runs controllers against a scenario file, with no server.
//!
//! A scenario names clusters, apps with their manifests, and the controllers
//! to run with their intents (built-in ones by name, others by `.wasm` path).
//! It prints where each app lands and the manifests each cluster gets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use wasmco_core::resource::{ManifestError, Resource};
use wasmco_orchestrator::draft::{AppDraft, ClusterInfo, ClusterNodes, DraftContext, NodeInfo};
use wasmco_orchestrator::{ControllerRun, Step, run_controllers};
use wasmco_runtime::builtin;
use wasmco_runtime::{
    CallError, Controller, ControllerKind, LimitOverrides, RegistrationError, Runtime,
};

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Candidate clusters.
    pub clusters: Vec<ScenarioCluster>,
    /// Apps in app order.
    pub apps: Vec<ScenarioApp>,
    /// Controllers in the order they run.
    pub controllers: Vec<ScenarioController>,
}

/// A cluster of the scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioCluster {
    /// Its provider.
    pub provider: String,
    /// Its name.
    pub name: String,
    /// Its labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Its key/value pairs.
    #[serde(default)]
    pub kv: BTreeMap<String, String>,
    /// Its nodes, for a controller that asks for them; none when left out.
    #[serde(default)]
    pub nodes: Vec<ScenarioNode>,
}

/// A node of a scenario's cluster.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioNode {
    /// Its name.
    pub name: String,
    /// Its labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// What it has free per resource, in whole units (cores, bytes,
    /// devices).
    #[serde(default)]
    pub available: BTreeMap<String, i64>,
}

/// An app of the scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioApp {
    /// Its name.
    pub name: String,
    /// Its Kubernetes objects.
    pub manifests: Vec<serde_json::Value>,
}

/// A controller step of the scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioController {
    /// A built-in controller's name, or any name for one given by `wasm`.
    pub name: String,
    /// Path of a `.wasm` component, relative to the scenario file.
    #[serde(default)]
    pub wasm: Option<PathBuf>,
    /// Placement or action; needed with `wasm`.
    #[serde(default, rename = "type")]
    pub kind: Option<ControllerKind>,
    /// The intent addressed to it.
    pub intent: serde_json::Value,
}

/// Why a scenario could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a scenario.
    #[error("{path} is not a valid scenario: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An app's manifest is not a Kubernetes object.
    #[error("app {app}, manifest {index}: {source}")]
    Manifest {
        /// The app.
        app: String,
        /// The manifest's position.
        index: usize,
        /// Why.
        source: ManifestError,
    },
    /// A controller step names something that does not exist.
    #[error("controller {name}: {reason}")]
    Controller {
        /// The step's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A controller was refused by the sandbox.
    #[error("controller {name}: {source}")]
    Registration {
        /// The step's name.
        name: String,
        /// Why.
        source: RegistrationError,
    },
    /// A controller failed.
    #[error(transparent)]
    Call(#[from] CallError),
}

/// The outcome of a scenario.
#[derive(Debug)]
pub struct ScenarioOutcome {
    /// The worked-out context.
    pub context: DraftContext,
    /// What each controller did.
    pub runs: Vec<ControllerRun>,
}

impl Scenario {
    /// Reads a scenario from a YAML or JSON file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: path.to_owned(),
            source,
        })?;
        serde_norway::from_str(&text).map_err(|e| ScenarioError::Parse {
            path: path.to_owned(),
            reason: e.to_string(),
        })
    }

    /// Loads the controllers and runs them over the scenario's apps and clusters.
    pub fn run(
        &self,
        runtime: &Runtime,
        base_dir: &Path,
    ) -> Result<ScenarioOutcome, ScenarioError> {
        let apps = app_drafts(&self.apps)?;
        let clusters = cluster_infos(&self.clusters);
        let controllers = self
            .controllers
            .iter()
            .map(|step| load_controller(runtime, step, base_dir))
            .collect::<Result<Vec<_>, _>>()?;
        let nodes = cluster_nodes(&self.clusters);
        let steps: Vec<Step<'_>> = controllers
            .iter()
            .zip(&self.controllers)
            .map(|(controller, step)| Step {
                controller,
                intent: step.intent.to_string(),
                nodes: nodes.as_ref(),
            })
            .collect();
        let mut context = DraftContext::new(apps, clusters);
        let runs = run_controllers(&mut context, &steps)?;
        Ok(ScenarioOutcome { context, runs })
    }
}

/// The apps as drafts: each manifest checked as a Kubernetes object.
pub fn app_drafts(apps: &[ScenarioApp]) -> Result<Vec<AppDraft>, ScenarioError> {
    apps.iter()
        .map(|app| {
            let resources = app
                .manifests
                .iter()
                .enumerate()
                .map(|(index, manifest)| {
                    Resource::from_manifest(manifest.clone()).map_err(|source| {
                        ScenarioError::Manifest {
                            app: app.name.clone(),
                            index,
                            source,
                        }
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok(AppDraft::new(app.name.clone(), resources))
        })
        .collect()
}

/// The clusters' nodes by cluster index, when any cluster lists some.
pub fn cluster_nodes(clusters: &[ScenarioCluster]) -> Option<ClusterNodes> {
    if clusters.iter().all(|c| c.nodes.is_empty()) {
        return None;
    }
    let node = |n: &ScenarioNode| NodeInfo {
        name: n.name.clone(),
        labels: n
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        available: n.available.iter().map(|(r, a)| (r.clone(), *a)).collect(),
    };
    Some(
        clusters
            .iter()
            .map(|c| c.nodes.iter().map(node).collect())
            .collect(),
    )
}

/// The clusters as the draft knows them.
pub fn cluster_infos(clusters: &[ScenarioCluster]) -> Vec<ClusterInfo> {
    clusters
        .iter()
        .map(|c| ClusterInfo {
            provider: c.provider.clone(),
            name: c.name.clone(),
            labels: c.labels.clone(),
            kv: c.kv.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        })
        .collect()
}

fn load_controller(
    runtime: &Runtime,
    step: &ScenarioController,
    base_dir: &Path,
) -> Result<Controller, ScenarioError> {
    let fail = |reason: String| ScenarioError::Controller {
        name: step.name.clone(),
        reason,
    };
    let (kind, wasm): (ControllerKind, std::borrow::Cow<'static, [u8]>) = match &step.wasm {
        None => {
            let builtin = builtin::builtin(&step.name).ok_or_else(|| {
                let known: Vec<&str> = builtin::BUILTINS.iter().map(|b| b.name).collect();
                fail(format!(
                    "no built-in controller of that name (built-in: {}); give `wasm` and `type` for your own",
                    known.join(", ")
                ))
            })?;
            (builtin.kind, builtin.wasm.into())
        }
        Some(path) => {
            let kind = step.kind.ok_or_else(|| {
                fail("`type` (placement or action) is required with `wasm`".into())
            })?;
            let path = base_dir.join(path);
            let bytes = std::fs::read(&path)
                .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
            (kind, bytes.into())
        }
    };
    runtime
        .load(&step.name, kind, &wasm, &LimitOverrides::default())
        .map_err(|source| ScenarioError::Registration {
            name: step.name.clone(),
            source,
        })
}

/// Writes the outcome the way `wasmco run` shows it: placement, then each
/// cluster's manifests as YAML documents.
pub fn render(outcome: &ScenarioOutcome) -> String {
    let context = &outcome.context;
    let mut out = String::new();
    for run in &outcome.runs {
        out.push_str(&format!(
            "# controller {}: {} edit(s)\n",
            run.controller, run.edits
        ));
        for line in run.log.text.lines() {
            out.push_str(&format!("#   | {line}\n"));
        }
    }
    for app in context.apps() {
        for cluster in app.clusters() {
            let info = &context.clusters()[cluster as usize];
            out.push_str(&format!(
                "# app {} on cluster {}/{}\n",
                app.name, info.provider, info.name
            ));
            for resource in app.resources_on(cluster) {
                out.push_str("---\n");
                out.push_str(&serde_norway::to_string(&resource.manifest).unwrap_or_default());
            }
        }
    }
    out
}
