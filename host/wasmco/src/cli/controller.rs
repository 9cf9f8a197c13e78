//! `wasmco controller new|build|upload|list|test`: writing a controller,
//! building it to a component, registering it, and trying it without a server.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use wasmco_orchestrator::draft::DraftContext;
use wasmco_runtime::contract::{
    ActionEdit, ClusterScope, Patch, PlaceApp, PlacementEdit, UnplaceApp,
};
use wasmco_runtime::{ControllerKind, LimitOverrides, Runtime};

use super::client::{ApiClient, Upload};
use super::error::CliError;
use super::languages;
pub use super::languages::Language;
pub use super::rust::{WASM_TARGET, WIT_BINDGEN_VERSION, build_crate};
use super::scenario::{ScenarioApp, ScenarioCluster};

/// Writes a new controller project called `name` into `dir` (which must not
/// exist yet): the contract, the guest SDK of `language`, an example
/// controller of `kind`, and a fixture for `wasmco controller test`.
pub fn new_project(
    dir: &Path,
    name: &str,
    kind: ControllerKind,
    language: Language,
) -> Result<(), CliError> {
    // A controller name (EMCO's rule), and a package name in every language.
    let usable = wasmco_core::names::is_valid_name(name)
        && !name.contains('.')
        && name.starts_with(|c: char| c.is_ascii_alphabetic());
    if !usable {
        return Err(CliError::Usage(format!(
            "`{name}` cannot name a controller: use letters, digits, '-' and '_', \
             starting with a letter"
        )));
    }
    if dir.exists() {
        return Err(CliError::Usage(format!(
            "{} already exists; pick another name or --dir",
            dir.display()
        )));
    }
    match language {
        Language::Rust => super::rust::new_crate(dir, name, kind),
        _ => languages::new_project(dir, name, kind, language),
    }
}

/// A component to upload or try: a `.wasm` file, or a project directory
/// (Rust, Python or JavaScript) built first.
pub fn component_bytes(path: &Path) -> Result<(PathBuf, Vec<u8>), CliError> {
    let file = if path.is_dir() {
        languages::build(path)?
    } else {
        path.to_owned()
    };
    let bytes = std::fs::read(&file).map_err(|source| CliError::Io {
        path: file.clone(),
        source,
    })?;
    Ok((file, bytes))
}

/// How to register a controller.
#[derive(Debug, Clone)]
pub struct Registration {
    /// Its name.
    pub name: String,
    /// Placement or action; read from the component when not given.
    pub kind: Option<ControllerKind>,
    /// Lower runs first.
    pub priority: u32,
}

/// Registers (or replaces) a controller; returns whether it was new.
pub fn upload(
    client: &ApiClient,
    registration: &Registration,
    wasm: Vec<u8>,
) -> Result<bool, CliError> {
    let kind = match registration.kind {
        Some(kind) => kind,
        None => wasmco_runtime::kind_exported_by(&wasm).ok_or_else(|| {
            CliError::Usage(
                "the component exports none of the placement, action and gate worlds of \
                 wasmco:controller (0.2.0, or 0.1.0 without gates); build it from \
                 `wasmco controller new`"
                    .into(),
            )
        })?,
    };
    let document = json!({
        "metadata": {"name": registration.name},
        "spec": {"type": kind, "priority": registration.priority},
    });
    let file = Upload {
        part: "file",
        file_name: format!("{}.wasm", registration.name),
        bytes: wasm,
    };
    Ok(client.create_or_replace(
        "v2/controllers",
        &format!("v2/controllers/{}", registration.name),
        &document,
        true,
        vec![file],
    )?)
}

/// The input of `wasmco controller test`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    /// Candidate clusters.
    pub clusters: Vec<ScenarioCluster>,
    /// Apps in app order.
    pub apps: Vec<ScenarioApp>,
    /// Where each app is placed before the controller runs, by cluster
    /// name (`provider/name` or `name`); every app on every cluster when
    /// left out.
    #[serde(default)]
    pub placement: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// The controller's intent.
    pub intent: Value,
}

/// Runs the component at `wasm` once against `fixture` (a [`Fixture`], or
/// for a gate a [`super::gate_fixture::GateFixture`]), in the same sandbox
/// as the server, and describes its answer (clusters by name) and its log.
pub fn test(runtime: &Runtime, wasm: &[u8], fixture: Value) -> Result<Value, CliError> {
    let kind = wasmco_runtime::kind_exported_by(wasm).ok_or_else(|| {
        CliError::Usage("the component exports no wasmco controller world".into())
    })?;
    let controller = runtime
        .load("under-test", kind, wasm, &LimitOverrides::default())
        .map_err(|e| CliError::Usage(format!("the component does not load: {e}")))?;
    if kind == ControllerKind::Gate {
        return super::gate_fixture::check(&controller, fixture);
    }
    let fixture: Fixture = serde_json::from_value(fixture)
        .map_err(|e| CliError::Usage(format!("the fixture: {e}")))?;
    let mut draft = fixture_draft(&fixture)?;
    let nodes = super::scenario::cluster_nodes(&fixture.clusters);
    let intent = fixture.intent.to_string();
    let names = ClusterNames(
        draft
            .clusters()
            .iter()
            .map(|c| format!("{}/{}", c.provider, c.name))
            .collect(),
    );
    let failed =
        |e: wasmco_runtime::CallError| CliError::Usage(format!("the controller failed: {e}"));
    let (edits, log) = if kind == ControllerKind::Placement {
        let output = controller
            .place(&draft.placement_request_with_nodes(intent, nodes.as_ref()))
            .map_err(failed)?;
        let edits = output
            .value
            .iter()
            .map(|edit| names.placement_edit(edit))
            .collect();
        (edits, output.log)
    } else {
        draft.settle_placement();
        let (request, used) = draft.action_request_with_nodes(intent, nodes.as_ref());
        let output = controller.act(&request).map_err(failed)?;
        let edits = output
            .value
            .iter()
            .map(|edit| names.action_edit(edit, &used))
            .collect::<Vec<Value>>();
        (edits, output.log)
    };
    Ok(json!({"controller": kind, "edits": edits, "log": log.text}))
}

/// The draft's clusters as `provider/name`, by index, to describe edits with.
struct ClusterNames(Vec<String>);

impl ClusterNames {
    /// The names of `indices`, each mapped to a draft index by `map`.
    fn of(&self, indices: &[u32], map: impl Fn(u32) -> u32) -> Vec<String> {
        indices
            .iter()
            .map(|&i| {
                self.0
                    .get(map(i) as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("#{i} (no such cluster)"))
            })
            .collect()
    }

    fn placement_edit(&self, edit: &PlacementEdit) -> Value {
        match edit {
            PlacementEdit::Place(PlaceApp {
                app,
                clusters,
                group,
            }) => json!({
                "place": {"app": app, "clusters": self.of(clusters, |i| i), "group": group}
            }),
            PlacementEdit::Unplace(UnplaceApp { app, clusters }) => json!({
                "unplace": {"app": app, "clusters": self.of(clusters, |i| i)}
            }),
        }
    }

    /// An action edit, whose clusters are indices into `used` (the request's
    /// clusters, as draft indices).
    fn action_edit(&self, edit: &ActionEdit, used: &[u32]) -> Value {
        let to_draft = |i: u32| used.get(i as usize).copied().unwrap_or(u32::MAX);
        let scope = |scope: &ClusterScope| match scope {
            ClusterScope::All => json!("all"),
            ClusterScope::Only(clusters) => json!(self.of(clusters, to_draft)),
        };
        match edit {
            ActionEdit::Add(add) => json!({"add": {
                "app": add.app, "clusters": scope(&add.scope),
                "manifest": serde_json::from_str::<Value>(&add.manifest).unwrap_or(json!(add.manifest)),
            }}),
            ActionEdit::Patch(patch) => {
                let (kind, text) = match &patch.patch {
                    Patch::JsonPatch(text) => ("jsonPatch", text),
                    Patch::MergePatch(text) => ("mergePatch", text),
                };
                json!({"patch": {
                    "app": patch.app, "clusters": scope(&patch.scope),
                    "target": format!("{}/{}", patch.target.kind, patch.target.name),
                    kind: serde_json::from_str::<Value>(text).unwrap_or(json!(text)),
                }})
            }
            ActionEdit::Remove(remove) => json!({"remove": {
                "app": remove.app, "clusters": scope(&remove.scope),
                "target": format!("{}/{}", remove.target.kind, remove.target.name),
            }}),
        }
    }
}

fn fixture_draft(fixture: &Fixture) -> Result<DraftContext, CliError> {
    let apps = super::scenario::app_drafts(&fixture.apps)
        .map_err(|e| CliError::Usage(format!("the fixture's {e}")))?;
    let clusters = super::scenario::cluster_infos(&fixture.clusters);
    let index_of = |wanted: &str| {
        clusters
            .iter()
            .position(|c| wanted == c.name || wanted == format!("{}/{}", c.provider, c.name))
    };
    let mut edits = Vec::new();
    for app in &fixture.apps {
        let on: Vec<u32> = match fixture.placement.as_ref().map(|p| p.get(&app.name)) {
            None => (0..clusters.len() as u32).collect(),
            Some(None) => continue,
            Some(Some(names)) => names
                .iter()
                .map(|n| {
                    index_of(n).map(|i| i as u32).ok_or_else(|| {
                        CliError::Usage(format!(
                            "placement.{}: no cluster `{n}` in the fixture",
                            app.name
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        edits.push(PlacementEdit::Place(PlaceApp {
            app: app.name.clone(),
            clusters: on,
            group: None,
        }));
    }
    let mut draft = DraftContext::new(apps, clusters);
    draft
        .apply_placement(&edits)
        .map_err(|e| CliError::Usage(format!("placement: {}", e.reason)))?;
    Ok(draft)
}
