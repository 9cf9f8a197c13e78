//! `wasmco virtual-cluster`: a Kubernetes-API-compatible cluster in memory.

use std::path::PathBuf;

use anyhow::Context;

/// Serve a Kubernetes-API-compatible virtual cluster (in memory).
#[derive(clap::Args)]
pub struct Args {
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
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let behaviour = wasmco_vcluster::Behaviour {
            ready_after: std::time::Duration::from_millis(args.ready_after_ms),
            latency: std::time::Duration::from_millis(args.latency_ms),
            ..Default::default()
        };
        let cluster = wasmco_vcluster::VirtualCluster::start(&args.name, args.listen, behaviour)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        if let Some(path) = &args.kubeconfig {
            cluster
                .write_kubeconfig(path)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        println!(
            "virtual cluster {} listening on http://{}",
            args.name,
            cluster.addr()
        );
        cluster.wait().await;
        anyhow::Ok(())
    })
}
