//! `wasmco dev`: the development orchestrator.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;

use wasmco::cli::dev;

/// Start a development orchestrator: the API on 127.0.0.1:9015, the
/// built-in controllers, three virtual clusters, and hot reload of
/// `.wasm` controllers.
#[derive(clap::Args)]
pub struct Args {
    /// Where its data lives between runs.
    #[arg(long, env = "WASMCO_DATA_DIR", default_value = ".wasmco")]
    data_dir: PathBuf,
    /// Keep nothing: data in a temporary directory removed at exit.
    #[arg(long)]
    ephemeral: bool,
    /// The API's address; the clusters take the next three ports.
    #[arg(long, default_value = "127.0.0.1:9015")]
    listen: std::net::SocketAddr,
    /// Milliseconds a workload takes to become ready in the clusters.
    #[arg(long, default_value_t = 1500)]
    ready_after_ms: u64,
    /// The directory of `.wasm` controllers to hot-reload
    /// (default: DATA_DIR/controllers).
    #[arg(long)]
    controllers: Option<PathBuf>,
    /// Apply this example (a name under examples/, or a directory) and
    /// show its status.
    #[arg(long)]
    example: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let example = args.example.as_deref().map(dev::find_example).transpose()?;
    let options = dev::DevOptions {
        data_dir: (!args.ephemeral).then_some(args.data_dir),
        listen: args.listen,
        ready_after: std::time::Duration::from_millis(args.ready_after_ms),
        controllers_dir: args.controllers,
        example,
        progress: std::io::stderr().is_terminal(),
    };
    let console: dev::Console = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(dev::run(options, console))?;
    Ok(())
}
