//! `wasmco controller`: write, build, register, list and try controllers.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use wasmco::cli::controller;
use wasmco::cli::resources::{self, Output, Scope};
use wasmco_runtime::{ControllerKind, Runtime, RuntimeConfig};

use super::connect::Connect;

#[derive(clap::Subcommand)]
pub enum ControllerCommand {
    /// Write a new controller project from the template; it builds as is.
    New {
        /// The controller's (and project's) name.
        name: String,
        /// Placement (chooses clusters), action (changes resources) or
        /// gate (lets a rollout's next group go).
        #[arg(long = "type", value_enum)]
        kind: KindArg,
        /// The language: a Rust crate, or a Python or JavaScript project.
        #[arg(long, value_enum, default_value = "rust")]
        lang: LangArg,
        /// Where to write it (default: ./NAME).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Build a controller project (Rust, Python or JavaScript) into a
    /// `.wasm` component with its language's toolchain and print its path.
    Build {
        /// The project's directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Register a controller (or replace it): a `.wasm`, or a project
    /// directory, built first.
    Upload {
        /// The component or crate.
        path: PathBuf,
        /// Its name (default: the file's or directory's name).
        #[arg(long)]
        name: Option<String>,
        /// Placement, action or gate (default: what the component exports).
        #[arg(long = "type", value_enum)]
        kind: Option<KindArg>,
        /// Lower runs first within its kind.
        #[arg(long, default_value_t = 10)]
        priority: u32,
    },
    /// List the registered controllers.
    List,
    /// Run a controller once against a fixture, with no server, and print
    /// its edits.
    Test {
        /// The component, or a project directory, built first.
        wasm: PathBuf,
        /// The fixture (JSON or YAML): clusters, apps, optional placement and
        /// intent; for a gate, clusters, the released groups, status and intent.
        #[arg(long)]
        input: PathBuf,
        /// Where compiled controllers are cached.
        #[arg(long, env = "WASMCO_CACHE_DIR", default_value = ".wasmco/cache")]
        cache_dir: PathBuf,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum LangArg {
    Rust,
    Python,
    Js,
}

impl From<LangArg> for controller::Language {
    fn from(lang: LangArg) -> Self {
        match lang {
            LangArg::Rust => controller::Language::Rust,
            LangArg::Python => controller::Language::Python,
            LangArg::Js => controller::Language::JavaScript,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    Placement,
    Action,
    Gate,
}

impl From<KindArg> for ControllerKind {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Placement => ControllerKind::Placement,
            KindArg::Action => ControllerKind::Action,
            KindArg::Gate => ControllerKind::Gate,
        }
    }
}

pub fn run(connect: &Connect, command: ControllerCommand) -> anyhow::Result<()> {
    let client = || connect.client();
    let out = &mut std::io::stdout().lock();
    match command {
        ControllerCommand::New {
            name,
            kind,
            lang,
            dir,
        } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            controller::new_project(&dir, &name, kind.into(), lang.into())?;
            writeln!(
                out,
                "wrote {}; next: `wasmco controller build {}`",
                dir.display(),
                dir.display()
            )?;
        }
        ControllerCommand::Build { dir } => {
            let wasm = wasmco::cli::languages::build(&dir)?;
            writeln!(out, "{}", wasm.display())?;
        }
        ControllerCommand::Upload {
            path,
            name,
            kind,
            priority,
        } => {
            let name = match name {
                Some(name) => name,
                None => path
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().replace('_', "-")))
                    .context("give the controller's name with --name")?,
            };
            let (file, wasm) = controller::component_bytes(&path)?;
            let registration = controller::Registration {
                name: name.clone(),
                kind: kind.map(ControllerKind::from),
                priority,
            };
            let new = controller::upload(&client()?, &registration, wasm)?;
            writeln!(
                out,
                "{} controller {name} from {}",
                if new { "registered" } else { "replaced" },
                file.display()
            )?;
        }
        ControllerCommand::List => {
            let text = resources::get(
                &client()?,
                "controllers",
                None,
                &Scope::default(),
                Output::Table,
            )?;
            writeln!(out, "{}", text.trim_end())?;
        }
        ControllerCommand::Test {
            wasm,
            input,
            cache_dir,
        } => {
            let (_, bytes) = controller::component_bytes(&wasm)?;
            let text = std::fs::read_to_string(&input)
                .with_context(|| format!("reading {}", input.display()))?;
            let fixture: serde_json::Value = serde_norway::from_str(&text)
                .with_context(|| format!("{} is not JSON or YAML", input.display()))?;
            let runtime =
                Runtime::new(RuntimeConfig::new(cache_dir)).context("starting the wasm runtime")?;
            let report = controller::test(&runtime, &bytes, fixture)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        }
    }
    Ok(())
}
