//! Controllers in Rust: the crate `wasmco controller new --lang rust`
//! writes, with the guest SDK beside it, and its build with cargo.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wasmco_runtime::ControllerKind;

use super::error::CliError;
use super::project::write_files;

/// The target controllers are built for.
pub const WASM_TARGET: &str = "wasm32-wasip2";

/// The wit-bindgen the host's contract was generated with; a template pins it.
pub const WIT_BINDGEN_VERSION: &str = "0.61.1";

const CONTRACT: &str = include_str!("../../../../wit/controller.wit");
/// The guest SDK's sources, copied into every new crate: a new file of
/// `sdk/src` belongs here too.
const SDK_SOURCES: &[(&str, &str)] = &[
    ("sdk/src/lib.rs", include_str!("../../../../sdk/src/lib.rs")),
    (
        "sdk/src/clusters.rs",
        include_str!("../../../../sdk/src/clusters.rs"),
    ),
    (
        "sdk/src/columns.rs",
        include_str!("../../../../sdk/src/columns.rs"),
    ),
    (
        "sdk/src/nodes.rs",
        include_str!("../../../../sdk/src/nodes.rs"),
    ),
    (
        "sdk/src/one_call.rs",
        include_str!("../../../../sdk/src/one_call.rs"),
    ),
    (
        "sdk/src/placement.rs",
        include_str!("../../../../sdk/src/placement.rs"),
    ),
    (
        "sdk/src/scan.rs",
        include_str!("../../../../sdk/src/scan.rs"),
    ),
    (
        "sdk/src/strings.rs",
        include_str!("../../../../sdk/src/strings.rs"),
    ),
    (
        "sdk/src/testing.rs",
        include_str!("../../../../sdk/src/testing.rs"),
    ),
    (
        "sdk/src/records.rs",
        include_str!("../../../../sdk/src/records.rs"),
    ),
    (
        "sdk/src/intents.rs",
        include_str!("../../../../sdk/src/intents.rs"),
    ),
    (
        "sdk/src/quantity.rs",
        include_str!("../../../../sdk/src/quantity.rs"),
    ),
    (
        "sdk/src/pods.rs",
        include_str!("../../../../sdk/src/pods.rs"),
    ),
];
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
const TEMPLATE_GATE: &str = include_str!("../../templates/controller/gate.rs");
const TEMPLATE_README: &str = include_str!("../../templates/controller/README.md");
const FIXTURE_PLACEMENT: &str = include_str!("../../templates/controller/fixture-placement.json");
const FIXTURE_ACTION: &str = include_str!("../../templates/controller/fixture-action.json");
const FIXTURE_GATE: &str = include_str!("../../templates/controller/fixture-gate.json");
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

/// Writes the Rust crate of [`super::controller::new_project`].
pub fn new_crate(dir: &Path, name: &str, kind: ControllerKind) -> Result<(), CliError> {
    let crate_name = name.replace('-', "_");
    let fill = |text: &str| {
        text.replace("__USE__", super::project::how_to_use(kind))
            .replace("__NAME__", name)
            .replace("__CRATE__", &crate_name)
            .replace("__TYPE__", &kind.to_string())
            .replace("__WIT_BINDGEN__", WIT_BINDGEN_VERSION)
    };
    let (source, fixture) = match kind {
        ControllerKind::Placement => (TEMPLATE_PLACEMENT, FIXTURE_PLACEMENT),
        ControllerKind::Action => (TEMPLATE_ACTION, FIXTURE_ACTION),
        ControllerKind::Gate => (TEMPLATE_GATE, FIXTURE_GATE),
    };
    let mut files = vec![
        ("Cargo.toml", fill(TEMPLATE_MANIFEST)),
        ("src/lib.rs", fill(source)),
        ("wit/controller.wit", CONTRACT.to_owned()),
        ("sdk/Cargo.toml", SDK_MANIFEST.to_owned()),
        ("fixture.json", fixture.to_owned()),
        ("README.md", fill(TEMPLATE_README)),
        (".gitignore", GITIGNORE.to_owned()),
        (".cargo/config.toml", controller_cargo_config()),
    ];
    files.extend(
        SDK_SOURCES
            .iter()
            .map(|&(path, text)| (path, text.to_owned())),
    );
    write_files(dir, files)
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

/// The part of a cargo `--message-format json` line that names what a
/// crate's build produced.
#[derive(serde::Deserialize)]
struct CargoArtifact {
    reason: String,
    manifest_path: String,
    #[serde(default)]
    filenames: Vec<String>,
}

/// Adds the wasm target with rustup when the toolchain lacks it, so a build
/// works even where rustup's automatic install is switched off.
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

#[cfg(test)]
mod tests {
    use super::{SDK_SOURCES, WIT_BINDGEN_VERSION};

    #[test]
    fn template_pins_the_contracts_wit_bindgen() {
        let lock = include_str!("../../../../Cargo.lock");
        let pinned = format!("name = \"wit-bindgen\"\nversion = \"{WIT_BINDGEN_VERSION}\"");
        assert!(
            lock.contains(&pinned),
            "update WIT_BINDGEN_VERSION to Cargo.lock's"
        );
    }

    #[test]
    fn a_new_crate_gets_every_source_of_the_sdk() {
        let sdk = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/src");
        for entry in std::fs::read_dir(sdk).expect("the SDK's sources") {
            let name = entry.expect("an SDK source").file_name();
            let path = format!("sdk/src/{}", name.to_string_lossy());
            assert!(
                SDK_SOURCES.iter().any(|&(copied, _)| copied == path),
                "add {path} to SDK_SOURCES"
            );
        }
    }
}
