//! `wasmco run`: the built-in controllers against a scenario file, no server.

use std::path::PathBuf;

use anyhow::Context;

use wasmco::cli::scenario::{Scenario, render};
use wasmco_runtime::{Runtime, RuntimeConfig};

/// Run controllers against a scenario file and print where apps land and
/// the manifests each cluster gets.
#[derive(clap::Args)]
pub struct Args {
    /// The scenario (YAML or JSON).
    scenario: PathBuf,
    /// Where compiled controllers are cached.
    #[arg(long, env = "WASMCO_CACHE_DIR", default_value = ".wasmco/cache")]
    cache_dir: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let loaded = Scenario::load(&args.scenario)?;
    let runtime =
        Runtime::new(RuntimeConfig::new(args.cache_dir)).context("starting the wasm runtime")?;
    let base_dir = args.scenario.parent().unwrap_or(std::path::Path::new("."));
    let outcome = loaded.run(&runtime, base_dir)?;
    print!("{}", render(&outcome));
    Ok(())
}
