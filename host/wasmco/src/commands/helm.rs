//! `wasmco helm-prepare`: compiles the Helm renderer into the machine's
//! cache now, rather than in the background when a server starts.

use std::path::PathBuf;

use wasmco_runtime::helm::{HelmConfig, HelmRenderer};

/// Where the renderer is cached.
#[derive(clap::Args)]
pub struct Args {
    /// The cache (default: `$XDG_CACHE_HOME/wasmco` or `~/.cache/wasmco`).
    #[arg(long, env = "WASMCO_HELM_CACHE")]
    cache: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut config = HelmConfig::default();
    if let Some(cache) = args.cache {
        config.cache_dir = cache;
    }
    let cache_dir = config.cache_dir.clone();
    let took = HelmRenderer::new(config).prepare()?;
    println!(
        "Helm renderer ready in {} ({took:.1?})",
        cache_dir.display()
    );
    Ok(())
}
