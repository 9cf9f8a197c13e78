//! The `wasmco` binary.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use wasmco::cli::scenario::{Scenario, render};
use wasmco::runtime::{Runtime, RuntimeConfig};

#[derive(Parser)]
#[command(
    name = "wasmco",
    version,
    about = "Multi-cluster orchestration with WebAssembly controllers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run controllers against a scenario file and print where apps land and
    /// the manifests each cluster gets.
    Run {
        /// The scenario (YAML or JSON).
        scenario: PathBuf,
        /// Where compiled controllers are cached.
        #[arg(long, env = "WASMCO_CACHE_DIR", default_value = ".wasmco/cache")]
        cache_dir: PathBuf,
    },
    /// Serve the REST API (`/v2`) with its data in one directory.
    Serve {
        /// Where the resource database and the controller cache live.
        #[arg(long, env = "WASMCO_DATA_DIR", default_value = ".wasmco")]
        data_dir: PathBuf,
        /// Address to listen on.
        #[arg(long, env = "WASMCO_LISTEN", default_value = "127.0.0.1:9015")]
        listen: std::net::SocketAddr,
        /// Write deployments as YAML files under this directory (one folder
        /// per cluster) instead of applying them: dry runs and GitOps.
        #[arg(long)]
        sync_to_directory: Option<PathBuf>,
    },
    /// Serve a Kubernetes-API-compatible virtual cluster (in memory).
    VirtualCluster {
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// The cluster's name in its kubeconfig.
        #[arg(long, default_value = "virtual")]
        name: String,
        /// Where to write a kubeconfig for it.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Milliseconds a workload takes to become ready.
        #[arg(long, default_value_t = 0)]
        ready_after_ms: u64,
        /// Milliseconds added to every request.
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run {
            scenario,
            cache_dir,
        } => {
            let loaded = Scenario::load(&scenario)?;
            let runtime =
                Runtime::new(RuntimeConfig::new(cache_dir)).context("starting the wasm runtime")?;
            let base_dir = scenario.parent().unwrap_or(std::path::Path::new("."));
            let outcome = loaded.run(&runtime, base_dir)?;
            print!("{}", render(&outcome));
            Ok(())
        }
        Command::VirtualCluster {
            listen,
            name,
            kubeconfig,
            ready_after_ms,
            latency_ms,
        } => {
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            runtime.block_on(async {
                let behaviour = wasmco::vcluster::Behaviour {
                    ready_after: std::time::Duration::from_millis(ready_after_ms),
                    latency: std::time::Duration::from_millis(latency_ms),
                    ..Default::default()
                };
                let cluster = wasmco::vcluster::VirtualCluster::start(&name, listen, behaviour)
                    .await
                    .with_context(|| format!("listening on {listen}"))?;
                if let Some(path) = &kubeconfig {
                    cluster
                        .write_kubeconfig(path)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
                println!(
                    "virtual cluster {name} listening on http://{}",
                    cluster.addr()
                );
                cluster.wait().await;
                anyhow::Ok(())
            })
        }
        Command::Serve {
            data_dir,
            listen,
            sync_to_directory,
        } => {
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            let rsync = wasmco::rsync::RsyncConfig {
                directory: sync_to_directory,
                ..Default::default()
            };
            let state = wasmco::api::open_state(&data_dir, Some((runtime.handle().clone(), rsync)))
                .with_context(|| format!("opening the data directory {}", data_dir.display()))?;
            runtime.block_on(async {
                let listener = wasmco::api::bind(listen).await?;
                // Tests and scripts read the address (port 0 picks a free one).
                println!("wasmco API listening on http://{}", listener.local_addr()?);
                wasmco::api::serve(state, listener).await
            })?;
            Ok(())
        }
    }
}
