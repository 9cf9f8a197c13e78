//! `wasmco controller new|build|upload|list|test`: writing a controller,
//! building it to a component, registering it, and trying it without a server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::{Value, json};

use wasmco_orchestrator::draft::DraftContext;
use wasmco_runtime::contract::{
    ActionEdit, ClusterScope, Patch, PlaceApp, PlacementEdit, UnplaceApp,
};
use wasmco_runtime::{ControllerKind, LimitOverrides, Runtime};

use super::CliError;
use super::client::{ApiClient, Upload};
pub use super::languages::Language;
use super::scenario::{ScenarioApp, ScenarioCluster};

/// The target controllers are built for.
pub const WASM_TARGET: &str = "wasm32-wasip2";

/// The wit-bindgen the host's contract was generated with; a template pins it.
pub const WIT_BINDGEN_VERSION: &str = "0.61.1";

const CONTRACT: &str = include_str!("../../../../wit/controller.wit");
const SDK_LIB: &str = include_str!("../../../../sdk/src/lib.rs");
const SDK_TESTING: &str = include_str!("../../../../sdk/src/testing.rs");
const SDK_RECORDS: &str = include_str!("../../../../sdk/src/records.rs");
const SDK_INTENTS: &str = include_str!("../../../../sdk/src/intents.rs");
const SDK_QUANTITY: &str = include_str!("../../../../sdk/src/quantity.rs");
const SDK_PODS: &str = include_str!("../../../../sdk/src/pods.rs");
const SDK_MANIFEST: &str = "[package]\nname = \"wasmco-guest\"\nversion = \"0.1.0\"\n\
    edition = \"2024\"\nrust-version = \"1.95\"\npublish = false\n\n\
    [dependencies]\n\
    serde = { version = \"1\", default-features = false, features = [\"derive\", \"alloc\"], optional = true }\n\
    serde_json = { version = \"1\", default-features = false, features = [\"alloc\"], optional = true }\n\
    base64 = { version = \"0.22\", default-features = false, features = [\"alloc\"], optional = true }\n\n\
    [features]\n\
    intents = [\"serde\", \"dep:base64\"]\n\
    serde = [\"dep:serde\", \"dep:serde_json\"]\n";
const TEMPLATE_MANIFEST: &str = include_str!("../../templates/controller/Cargo.toml.in");
const TEMPLATE_PLACEMENT: &str = include_str!("../../templates/controller/placement.rs");
const TEMPLATE_ACTION: &str = include_str!("../../templates/controller/action.rs");
const TEMPLATE_README: &str = include_str!("../../templates/controller/README.md");
const FIXTURE_PLACEMENT: &str = include_str!("../../templates/controller/fixture-placement.json");
const FIXTURE_ACTION: &str = include_str!("../../templates/controller/fixture-action.json");
const GITIGNORE: &str = include_str!("../../templates/controller/gitignore");
/// The workspace's cargo config: its controller build flags (SIMD, initial
/// memory) come first, its host-only settings after [`HOST_ONLY`].
const CARGO_CONFIG: &str = include_str!("../../../../.cargo/config.toml");
/// The line of the workspace's cargo config after which nothing concerns
/// a controller's build.
const HOST_ONLY: &str = "# Host-only settings";

/// The build flags wasmco's own controllers use, for a new controller.
fn controller_cargo_config() -> String {
    let flags = CARGO_CONFIG
        .split_once(HOST_ONLY)
        .map_or(CARGO_CONFIG, |(flags, _)| flags);
    format!("{}\n", flags.trim_end())
}

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
        Language::Rust => new_crate(dir, name, kind),
        _ => super::languages::new_project(dir, name, kind, language),
    }
}

/// Writes the Rust crate of [`new_project`].
fn new_crate(dir: &Path, name: &str, kind: ControllerKind) -> Result<(), CliError> {
    let crate_name = name.replace('-', "_");
    let fill = |text: &str| {
        text.replace("__NAME__", name)
            .replace("__CRATE__", &crate_name)
            .replace("__TYPE__", &kind.to_string())
            .replace("__WIT_BINDGEN__", WIT_BINDGEN_VERSION)
    };
    let (source, fixture) = match kind {
        ControllerKind::Placement => (TEMPLATE_PLACEMENT, FIXTURE_PLACEMENT),
        ControllerKind::Action => (TEMPLATE_ACTION, FIXTURE_ACTION),
    };
    let files = vec![
        ("Cargo.toml", fill(TEMPLATE_MANIFEST)),
        ("src/lib.rs", fill(source)),
        ("wit/controller.wit", CONTRACT.to_owned()),
        ("sdk/Cargo.toml", SDK_MANIFEST.to_owned()),
        ("sdk/src/lib.rs", SDK_LIB.to_owned()),
        ("sdk/src/testing.rs", SDK_TESTING.to_owned()),
        ("sdk/src/records.rs", SDK_RECORDS.to_owned()),
        ("sdk/src/intents.rs", SDK_INTENTS.to_owned()),
        ("sdk/src/quantity.rs", SDK_QUANTITY.to_owned()),
        ("sdk/src/pods.rs", SDK_PODS.to_owned()),
        ("fixture.json", fixture.to_owned()),
        ("README.md", fill(TEMPLATE_README)),
        (".gitignore", GITIGNORE.to_owned()),
        (".cargo/config.toml", controller_cargo_config()),
    ];
    write_files(dir, files)
}

/// Writes each `(relative path, text)` under `dir`, making directories.
pub(super) fn write_files(dir: &Path, files: Vec<(&str, String)>) -> Result<(), CliError> {
    for (relative, text) in files {
        let path = dir.join(relative);
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)
        };
        write().map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Builds the controller crate in `dir` for [`WASM_TARGET`] (adding the
/// target with rustup when it is missing) and returns the component's path.
pub fn build_crate(dir: &Path) -> Result<PathBuf, CliError> {
    let manifest = dir.join("Cargo.toml");
    if !manifest.exists() {
        return Err(CliError::Usage(format!(
            "{} has no Cargo.toml; `wasmco controller new NAME` makes a controller crate",
            dir.display()
        )));
    }
    ensure_wasm_target()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "--message-format=json-render-diagnostics",
        ])
        .args(["--target", WASM_TARGET])
        .arg("--manifest-path")
        .arg(&manifest)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| CliError::Build(format!("cannot run cargo: {e}")))?;
    if !output.status.success() {
        return Err(CliError::Build(format!(
            "cargo build of {} failed (its errors are above)",
            dir.display()
        )));
    }
    // cargo names every artifact it built; the cdylib's `.wasm` is the component.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut component = None;
    for line in stdout.lines() {
        // Other messages (diagnostics, the build's end) fail to read as an
        // artifact and are passed over.
        let Ok(message) = serde_json::from_str::<CargoArtifact>(line) else {
            continue;
        };
        let is_local = Path::new(&message.manifest_path) == manifest
            || Path::new(&message.manifest_path).canonicalize().ok()
                == manifest.canonicalize().ok();
        if message.reason == "compiler-artifact"
            && is_local
            && let Some(file) = message
                .filenames
                .into_iter()
                .rfind(|f| f.ends_with(".wasm"))
        {
            component = Some(PathBuf::from(file));
        }
    }
    component.ok_or_else(|| {
        CliError::Build(format!(
            "cargo built {} but produced no .wasm; is its lib a `cdylib`?",
            dir.display()
        ))
    })
}

/// Adds the wasm target with rustup when the toolchain lacks it, so a build
/// works even where rustup's automatic install is switched off.
/// The part of a cargo `--message-format json` line that names what a
/// crate's build produced.
#[derive(serde::Deserialize)]
struct CargoArtifact {
    reason: String,
    manifest_path: String,
    #[serde(default)]
    filenames: Vec<String>,
}

fn ensure_wasm_target() -> Result<(), CliError> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    let Ok(installed) = installed else {
        // No rustup: the toolchain manages its own targets; let cargo say.
        return Ok(());
    };
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|t| t.trim() == WASM_TARGET)
    {
        return Ok(());
    }
    let status = Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .status()
        .map_err(|e| CliError::Build(format!("cannot run rustup: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError::Build(format!(
            "`rustup target add {WASM_TARGET}` failed"
        )))
    }
}

/// A component to upload or try: a `.wasm` file, or a project directory
/// (Rust, Python or JavaScript) built first.
pub fn component_bytes(path: &Path) -> Result<(PathBuf, Vec<u8>), CliError> {
    let file = if path.is_dir() {
        super::languages::build(path)?
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
                "the component exports neither the placement nor the action world of \
                 wasmco:controller (0.2.0 or 0.1.0); build it from `wasmco controller new`"
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

/// Runs the component at `wasm` once against `fixture`, in the same sandbox
/// as the server, and describes its edits (clusters by name) and its log.
pub fn test(runtime: &Runtime, wasm: &[u8], fixture: &Fixture) -> Result<Value, CliError> {
    let kind = wasmco_runtime::kind_exported_by(wasm).ok_or_else(|| {
        CliError::Usage("the component exports no wasmco controller world".into())
    })?;
    let controller = runtime
        .load("under-test", kind, wasm, &LimitOverrides::default())
        .map_err(|e| CliError::Usage(format!("the component does not load: {e}")))?;
    let mut draft = fixture_draft(fixture)?;
    let nodes = super::scenario::cluster_nodes(&fixture.clusters);
    let intent = fixture.intent.to_string();
    let names: Vec<String> = draft
        .clusters()
        .iter()
        .map(|c| format!("{}/{}", c.provider, c.name))
        .collect();
    let cluster_names = |indices: &[u32], map: &dyn Fn(u32) -> u32| -> Vec<String> {
        indices
            .iter()
            .map(|&i| {
                names
                    .get(map(i) as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("#{i} (no such cluster)"))
            })
            .collect()
    };
    let failed =
        |e: wasmco_runtime::CallError| CliError::Usage(format!("the controller failed: {e}"));
    let (edits, log) = match kind {
        ControllerKind::Placement => {
            let output = controller
                .place(&draft.placement_request_with_nodes(intent, nodes.as_ref()))
                .map_err(failed)?;
            let edits: Vec<Value> = output
                .value
                .iter()
                .map(|edit| match edit {
                    PlacementEdit::Place(PlaceApp { app, clusters, group }) => json!({
                        "place": {"app": app, "clusters": cluster_names(clusters, &|i| i), "group": group}
                    }),
                    PlacementEdit::Unplace(UnplaceApp { app, clusters }) => json!({
                        "unplace": {"app": app, "clusters": cluster_names(clusters, &|i| i)}
                    }),
                })
                .collect();
            (edits, output.log)
        }
        ControllerKind::Action => {
            draft.settle_placement();
            let (request, used) = draft.action_request_with_nodes(intent, nodes.as_ref());
            let output = controller.act(&request).map_err(failed)?;
            let to_draft = |i: u32| used.get(i as usize).copied().unwrap_or(u32::MAX);
            let scope = |scope: &ClusterScope| match scope {
                ClusterScope::All => json!("all"),
                ClusterScope::Only(clusters) => json!(cluster_names(clusters, &to_draft)),
            };
            let edits: Vec<Value> = output
                .value
                .iter()
                .map(|edit| match edit {
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
                })
                .collect();
            (edits, output.log)
        }
    };
    Ok(json!({"controller": kind, "edits": edits, "log": log.text}))
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

#[cfg(test)]
mod tests {
    #[test]
    fn template_pins_the_contracts_wit_bindgen() {
        let lock = include_str!("../../../../Cargo.lock");
        let pinned = format!(
            "name = \"wit-bindgen\"\nversion = \"{}\"",
            super::WIT_BINDGEN_VERSION
        );
        assert!(
            lock.contains(&pinned),
            "update WIT_BINDGEN_VERSION to Cargo.lock's"
        );
    }
}
