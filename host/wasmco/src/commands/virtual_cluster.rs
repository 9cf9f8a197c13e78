//! `wasmco virtual-cluster`: Kubernetes-API-compatible clusters in memory,
//! one or many from one process (a fleet for benchmarks and scale tests).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use wasmco_vcluster::{Requests, VirtualCluster};

/// Serve Kubernetes-API-compatible virtual clusters (in memory).
#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on (port 0 picks a free one); with `--count`,
    /// each further cluster takes the next port, or any free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The cluster's name in its kubeconfig; with `--count`, the prefix of
    /// `NAME-0000`, `NAME-0001`, ….
    #[arg(long, default_value = "virtual")]
    name: String,
    /// How many clusters to serve, each on its own port.
    #[arg(long, default_value_t = 1)]
    count: usize,
    /// Where to write a kubeconfig for it (one cluster only).
    #[arg(long, conflicts_with = "kubeconfig_dir")]
    kubeconfig: Option<PathBuf>,
    /// A directory to write each cluster's kubeconfig into, as `NAME.kubeconfig`.
    #[arg(long)]
    kubeconfig_dir: Option<PathBuf>,
    /// Also answer `GET /` here with the requests all the clusters served
    /// so far, by kind (JSON), so a benchmark can tell what a client sent.
    #[arg(long)]
    stats_listen: Option<SocketAddr>,
    /// Milliseconds a workload takes to become ready.
    #[arg(long, default_value_t = 0)]
    ready_after_ms: u64,
    /// Milliseconds added to every request.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.count > 0, "--count must be at least 1");
    anyhow::ensure!(
        args.count == 1 || args.kubeconfig.is_none(),
        "--kubeconfig names one file; with --count use --kubeconfig-dir"
    );
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let clusters = Arc::new(start(&args).await?);
        if let Some(path) = &args.kubeconfig {
            clusters[0]
                .write_kubeconfig(path)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if let Some(dir) = &args.kubeconfig_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for (name, cluster) in names(&args).zip(clusters.iter()) {
                let path = dir.join(format!("{name}.kubeconfig"));
                cluster
                    .write_kubeconfig(&path)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
        let stats = match args.stats_listen {
            Some(listen) => Some(serve_stats(listen, clusters.clone()).await?),
            None => None,
        };
        match (args.count, stats) {
            (1, None) => println!(
                "virtual cluster {} listening on http://{}",
                args.name,
                clusters[0].addr()
            ),
            (count, stats) => println!(
                "{count} virtual clusters listening from http://{}{}",
                clusters[0].addr(),
                stats
                    .map(|s| format!("; stats on http://{s}"))
                    .unwrap_or_default()
            ),
        }
        // They serve until the process is stopped.
        std::future::pending::<()>().await;
        anyhow::Ok(())
    })
}

fn names(args: &Args) -> impl Iterator<Item = String> + '_ {
    (0..args.count).map(move |i| match args.count {
        1 => args.name.clone(),
        _ => format!("{}-{i:04}", args.name),
    })
}

async fn start(args: &Args) -> anyhow::Result<Vec<VirtualCluster>> {
    let behaviour = wasmco_vcluster::Behaviour {
        ready_after: std::time::Duration::from_millis(args.ready_after_ms),
        latency: std::time::Duration::from_millis(args.latency_ms),
        ..Default::default()
    };
    let mut clusters = Vec::new();
    for (offset, name) in names(args).enumerate() {
        let port = match args.listen.port() {
            0 => 0,
            first => u16::try_from(offset)
                .ok()
                .and_then(|offset| first.checked_add(offset))
                .context("--count runs past the last port")?,
        };
        let listen = SocketAddr::new(args.listen.ip(), port);
        let cluster = VirtualCluster::start(&name, listen, behaviour.clone())
            .await
            .with_context(|| format!("listening on {listen}"))?;
        clusters.push(cluster);
    }
    Ok(clusters)
}

/// Serves the clusters' request counts, summed, as JSON on `listen`.
async fn serve_stats(
    listen: SocketAddr,
    clusters: Arc<Vec<VirtualCluster>>,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    let addr = listener.local_addr()?;
    let router = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let clusters = clusters.clone();
            async move {
                let requests: Requests = clusters.iter().map(VirtualCluster::requests).sum();
                let writes: u64 = clusters.iter().map(VirtualCluster::writes).sum();
                axum::Json(serde_json::json!({
                    "clusters": clusters.len(),
                    "requests": requests,
                    "writes": writes,
                }))
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "the virtual clusters' stats stopped");
        }
    });
    Ok(addr)
}
