//! Controllers in Python and JavaScript: the projects `wasmco controller new
//! --lang python|js` writes, and their builds with each language's own
//! toolchain (componentize-py, ComponentizeJS). A Rust project is a crate,
//! built with cargo (`rust.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use wasmco_runtime::ControllerKind;

use super::error::CliError;
use super::project::{how_to_use, write_files};
use super::rust::build_crate;

/// The componentize-py the Python SDK is written and tested against.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
/// The ComponentizeJS a new JavaScript project pins.
pub const COMPONENTIZE_JS_VERSION: &str = "0.23.0";

/// What a Python or JavaScript project says of itself, in
/// [`PROJECT_FILE`]; a Rust crate needs none (its exports say its kind).
const PROJECT_FILE: &str = "controller.json";

const CONTRACT: &str = include_str!("../../../../wit/controller.wit");
const PYTHON_SDK: &str = include_str!("../../../../sdk/python/wasmco_controller/__init__.py");
const PYTHON_PLACEMENT: &str = include_str!("../../templates/python/placement.py");
const PYTHON_ACTION: &str = include_str!("../../templates/python/action.py");
const PYTHON_GATE: &str = include_str!("../../templates/python/gate.py");
const PYTHON_README: &str = include_str!("../../templates/python/README.md");
const PYTHON_GITIGNORE: &str = include_str!("../../templates/python/gitignore");
const JS_SDK: &str = include_str!("../../../../sdk/js/wasmco_controller.js");
const JS_PLACEMENT: &str = include_str!("../../templates/js/placement.js");
const JS_ACTION: &str = include_str!("../../templates/js/action.js");
const JS_GATE: &str = include_str!("../../templates/js/gate.js");
const JS_PACKAGE: &str = include_str!("../../templates/js/package.json.in");
const JS_README: &str = include_str!("../../templates/js/README.md");
const JS_GITIGNORE: &str = include_str!("../../templates/js/gitignore");
const FIXTURE_PLACEMENT: &str = include_str!("../../templates/controller/fixture-placement.json");
const FIXTURE_ACTION: &str = include_str!("../../templates/controller/fixture-action.json");
const FIXTURE_GATE: &str = include_str!("../../templates/controller/fixture-gate.json");

/// A language controllers are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// A crate on `wasmco-guest`, built with cargo.
    Rust,
    /// `app.py` on the `wasmco_controller` package, built with componentize-py.
    Python,
    /// `app.js` on `wasmco_controller.js`, built with ComponentizeJS.
    #[serde(rename = "js")]
    JavaScript,
}

/// [`PROJECT_FILE`]'s content.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Project {
    name: String,
    #[serde(rename = "type")]
    kind: ControllerKind,
    language: Language,
    /// The contract's directory, relative to the project; `wit` when left
    /// out. A project that lives beside the contract (the repository's
    /// examples) names it rather than keeping a copy that can go stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wit: Option<PathBuf>,
    /// The directory holding the SDK (`wasmco_controller/` or
    /// `wasmco_controller.js`), relative to the project; the project itself
    /// when left out. Python finds it on the search path; JavaScript
    /// imports it by its relative path, and ComponentizeJS, which reads no
    /// file outside the directory it runs in, then runs from the directory
    /// holding both the project and the SDK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sdk: Option<PathBuf>,
}

/// Writes a Python or JavaScript project called `name` into `dir` (checked
/// by the caller): the controller, the SDK, the contract and a fixture.
pub fn new_project(
    dir: &Path,
    name: &str,
    kind: ControllerKind,
    language: Language,
) -> Result<(), CliError> {
    let fill = |text: &str| {
        text.replace("__USE__", how_to_use(kind))
            .replace("__NAME__", name)
            // npm takes lower-case package names only.
            .replace("__PACKAGE__", &name.to_ascii_lowercase())
            .replace("__TYPE__", &kind.to_string())
            .replace("__COMPONENTIZE_JS__", COMPONENTIZE_JS_VERSION)
    };
    let fixture = match kind {
        ControllerKind::Placement => FIXTURE_PLACEMENT,
        ControllerKind::Action => FIXTURE_ACTION,
        ControllerKind::Gate => FIXTURE_GATE,
    };
    let project = Project {
        name: name.to_owned(),
        kind,
        language,
        wit: None,
        sdk: None,
    };
    let manifest =
        serde_json::to_string_pretty(&project).map_err(|e| CliError::Build(e.to_string()))?;
    let mut files: Vec<(&str, String)> = vec![
        (PROJECT_FILE, manifest + "\n"),
        ("wit/controller.wit", CONTRACT.to_owned()),
        ("fixture.json", fixture.to_owned()),
    ];
    match language {
        Language::Python => files.extend([
            (
                "app.py",
                fill(match kind {
                    ControllerKind::Placement => PYTHON_PLACEMENT,
                    ControllerKind::Action => PYTHON_ACTION,
                    ControllerKind::Gate => PYTHON_GATE,
                }),
            ),
            ("wasmco_controller/__init__.py", PYTHON_SDK.to_owned()),
            ("README.md", fill(PYTHON_README)),
            (".gitignore", PYTHON_GITIGNORE.to_owned()),
        ]),
        Language::JavaScript => files.extend([
            (
                "app.js",
                fill(match kind {
                    ControllerKind::Placement => JS_PLACEMENT,
                    ControllerKind::Action => JS_ACTION,
                    ControllerKind::Gate => JS_GATE,
                }),
            ),
            ("wasmco_controller.js", JS_SDK.to_owned()),
            ("package.json", fill(JS_PACKAGE)),
            ("README.md", fill(JS_README)),
            (".gitignore", JS_GITIGNORE.to_owned()),
        ]),
        Language::Rust => {
            return Err(CliError::Usage(
                "a Rust controller is a crate: `wasmco controller new NAME --lang rust`".into(),
            ));
        }
    }
    write_files(dir, files)
}

/// What the [`PROJECT_FILE`] in `dir` says; `None` for a Rust crate.
fn project_in(dir: &Path) -> Result<Option<Project>, CliError> {
    if dir.join("Cargo.toml").exists() {
        return Ok(None);
    }
    let path = dir.join(PROJECT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::Usage(format!(
                "{} is not a controller project (no Cargo.toml, no {PROJECT_FILE}); \
                 `wasmco controller new NAME --type placement|action|gate --lang rust|python|js` makes one",
                dir.display()
            )));
        }
        Err(source) => return Err(CliError::Io { path, source }),
    };
    let project: Project = serde_json::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "{}: {e} (it says {{\"name\", \"type\": placement|action|gate, \"language\": python|js}})",
            path.display()
        ))
    })?;
    Ok(Some(project))
}

/// Builds the controller project in `dir`, whatever its language, and
/// returns the component's path.
pub fn build(dir: &Path) -> Result<PathBuf, CliError> {
    match project_in(dir)? {
        Some(project) if project.language != Language::Rust => {
            let language = project.language;
            let out = format!("{}.wasm", project.name);
            // Kept until the tool has run.
            let mut staged = None;
            let mut command = match language {
                Language::Python => python_build(dir, &project, &out, &mut staged)?,
                _ => js_build(dir, &project, &out)?,
            };
            let (tool, install) = match language {
                Language::Python => (
                    "componentize-py",
                    format!(
                        "install it with `pip install componentize-py=={COMPONENTIZE_PY_VERSION}` \
                         (Python 3.10 or later), or set WASMCO_COMPONENTIZE_PY to it"
                    ),
                ),
                _ => (
                    "componentize-js",
                    "run `npm install` in the project (Node.js 20 and npm), \
                     or set WASMCO_COMPONENTIZE_JS to an installed componentize-js"
                        .to_owned(),
                ),
            };
            // What the tool says goes to stderr: stdout is the component's
            // path (build) or the report (test).
            let status = command
                .stdout(Stdio::from(std::io::stderr()))
                .status()
                .map_err(|error| {
                    CliError::Build(if error.kind() == std::io::ErrorKind::NotFound {
                        format!("{tool} was not found: {install}")
                    } else {
                        format!("cannot run {tool}: {error}")
                    })
                })?;
            if !status.success() {
                return Err(CliError::Build(format!(
                    "{tool} could not build {} (its errors are above)",
                    dir.display()
                )));
            }
            Ok(dir.join(out))
        }
        // A crate; or a project file saying Rust, whose missing Cargo.toml
        // the crate build names.
        _ => build_crate(dir),
    }
}

/// The contract's directory of `project`, as [`Project::wit`] says.
fn wit_dir(project: &Project) -> &Path {
    project.wit.as_deref().unwrap_or(Path::new("wit"))
}

/// componentize-py, from `WASMCO_COMPONENTIZE_PY` or the PATH, run in `dir`
/// and making `out` there from `app.py` and the packages beside it (and
/// the SDK's, when the project names its directory: staged into `staged`).
fn python_build(
    dir: &Path,
    project: &Project,
    out: &str,
    staged: &mut Option<tempfile::TempDir>,
) -> Result<Command, CliError> {
    let tool =
        std::env::var_os("WASMCO_COMPONENTIZE_PY").unwrap_or_else(|| "componentize-py".into());
    let mut command = Command::new(tool);
    command
        .current_dir(dir)
        .arg("-d")
        .arg(wit_dir(project))
        .args(["-w", project.kind.world(), "componentize", "app", "-p", "."]);
    if let Some(sdk) = &project.sdk {
        // componentize-py writes `__pycache__` beside every module it
        // imports, whatever PYTHONDONTWRITEBYTECODE says: it gets a copy
        // of the SDK, so that a build leaves the SDK's directory as it was.
        let stage = tempfile::tempdir().map_err(|source| CliError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
        copy_sources(&dir.join(sdk), stage.path())?;
        command.arg("-p").arg(stage.path());
        *staged = Some(stage);
    }
    command.arg("-o").arg(out);
    Ok(command)
}

/// Copies the tree at `from` into `to`, but for Python's bytecode caches.
fn copy_sources(from: &Path, to: &Path) -> Result<(), CliError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| CliError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(io(&source))?.is_dir() {
            if entry.file_name() != "__pycache__" {
                copy_sources(&source, &target)?;
            }
        } else {
            std::fs::copy(&source, &target).map_err(io(&source))?;
        }
    }
    Ok(())
}

/// ComponentizeJS, from `WASMCO_COMPONENTIZE_JS` or the project's
/// `node_modules` (installed with npm first when missing), making `out` in
/// `dir` from `app.js` and the modules it imports. wasi:http, which
/// controllers may not import, is left out of the component.
fn js_build(dir: &Path, project: &Project, out: &str) -> Result<Command, CliError> {
    let canonical = |path: &Path| {
        path.canonicalize().map_err(|source| CliError::Io {
            path: path.to_owned(),
            source,
        })
    };
    let dir = canonical(dir)?;
    // ComponentizeJS reads the modules `app.js` imports only under the
    // directory it runs in: the project's, or the one holding the SDK too.
    let root = match &project.sdk {
        Some(sdk) => {
            let sdk = canonical(&dir.join(sdk))?;
            dir.ancestors()
                .find(|ancestor| sdk.starts_with(ancestor))
                .unwrap_or(&dir)
                .to_owned()
        }
        None => dir.clone(),
    };
    let tool = match std::env::var_os("WASMCO_COMPONENTIZE_JS") {
        Some(tool) => PathBuf::from(tool),
        None => {
            let installed = dir.join("node_modules/.bin/componentize-js");
            if !installed.exists() {
                let status = Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund"])
                    .current_dir(&dir)
                    .stdout(Stdio::from(std::io::stderr()))
                    .status()
                    .map_err(|error| {
                        CliError::Build(if error.kind() == std::io::ErrorKind::NotFound {
                            "npm was not found: install Node.js 20 and npm (Debian: \
                             `apt-get install nodejs npm`), then build again"
                                .into()
                        } else {
                            format!("cannot run npm: {error}")
                        })
                    })?;
                if !status.success() {
                    return Err(CliError::Build(format!(
                        "`npm install` failed in {} (its errors are above)",
                        dir.display()
                    )));
                }
            }
            installed
        }
    };
    let mut command = Command::new(tool);
    // Absolute paths: ComponentizeJS runs in `root`, which may be above `dir`.
    command
        .current_dir(&root)
        .arg(dir.join("app.js"))
        .arg("--wit")
        .arg(dir.join(wit_dir(project)))
        .args([
            "-n",
            project.kind.world(),
            "-d",
            "http",
            "fetch-event",
            "-o",
        ])
        .arg(dir.join(out));
    Ok(command)
}
