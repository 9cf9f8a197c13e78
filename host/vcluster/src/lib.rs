//! A Kubernetes-API-compatible endpoint, so tests, the dev server and
//! benchmarks have clusters without Kubernetes. It follows the API's
//! conventions (paths, content types, status codes, `Status` objects,
//! resourceVersion, watches) closely enough for kube-rs and kubectl.
//!
//! Workloads become ready after a configurable delay (Pods that are not
//! restarted, and Jobs, complete), it has Nodes of a configurable capacity,
//! and a test can make the cluster refuse connections, answer 500 or 429,
//! or add latency.

mod behaviour;
pub mod catalog;
pub mod objects;
mod server;
mod signer;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

pub use behaviour::{Behaviour, Nodes};
pub use signer::CLIENT_SIGNER;

/// Requests a virtual cluster served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Requests {
    /// All of them.
    pub all: u64,
    /// `/version`: what a health probe asks.
    pub version: u64,
    /// Watches opened (a watch's events, bookmarks among them, are not requests).
    pub watches: u64,
}

impl Requests {
    /// Neither probes nor watches: lists, reads and writes.
    pub fn others(&self) -> u64 {
        self.all
            .saturating_sub(self.version)
            .saturating_sub(self.watches)
    }
}

impl std::ops::Add for Requests {
    type Output = Requests;
    fn add(self, other: Requests) -> Requests {
        Requests {
            all: self.all + other.all,
            version: self.version + other.version,
            watches: self.watches + other.watches,
        }
    }
}

impl std::iter::Sum for Requests {
    fn sum<I: Iterator<Item = Requests>>(all: I) -> Requests {
        all.fold(Requests::default(), |sum, one| sum + one)
    }
}

impl std::ops::Sub for Requests {
    type Output = Requests;
    fn sub(self, earlier: Requests) -> Requests {
        Requests {
            all: self.all.saturating_sub(earlier.all),
            version: self.version.saturating_sub(earlier.version),
            watches: self.watches.saturating_sub(earlier.watches),
        }
    }
}

/// A running virtual cluster.
pub struct VirtualCluster {
    addr: SocketAddr,
    name: String,
    shared: Arc<server::Shared>,
    task: tokio::task::JoinHandle<()>,
    tls: Option<TlsConfig>,
}

type TlsConfig = Arc<rustls::ServerConfig>;

fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<server::Shared>,
    tls: Option<TlsConfig>,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let router = server::router(shared);
    let Some(tls) = tls else {
        return Ok(tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::error!(%error, "virtual cluster stopped");
            }
        }));
    };
    let server = axum_server::from_tcp_rustls(
        listener.into_std()?,
        axum_server::tls_rustls::RustlsConfig::from_config(tls),
    )?;
    Ok(tokio::spawn(async move {
        if let Err(error) = server.serve(router.into_make_service()).await {
            tracing::error!(%error, "virtual cluster stopped");
        }
    }))
}

impl VirtualCluster {
    /// Starts a virtual cluster called `name` on `listen` (port 0 picks one)
    /// on the current tokio runtime.
    pub async fn start(
        name: &str,
        listen: SocketAddr,
        behaviour: Behaviour,
    ) -> std::io::Result<Self> {
        Self::start_with(name, listen, behaviour, None).await
    }

    /// [`Self::start`] over HTTPS with `tls` (serving certificate, and the
    /// CA client certificates must come from), as a real API server with
    /// x509 client auth: a client without a certificate from that CA is
    /// refused in the handshake.
    pub async fn start_tls(
        name: &str,
        listen: SocketAddr,
        behaviour: Behaviour,
        tls: TlsConfig,
    ) -> std::io::Result<Self> {
        Self::start_with(name, listen, behaviour, Some(tls)).await
    }

    async fn start_with(
        name: &str,
        listen: SocketAddr,
        behaviour: Behaviour,
        tls: Option<TlsConfig>,
    ) -> std::io::Result<Self> {
        let (listener, addr) = server::bind(listen).await?;
        let shared = Arc::new(server::Shared::new(name, addr.to_string(), behaviour));
        let task = serve(listener, shared.clone(), tls.clone())?;
        Ok(VirtualCluster {
            addr,
            name: name.to_owned(),
            shared,
            task,
            tls,
        })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many writes (creates, updates, applies, deletes) it has taken:
    /// its resourceVersion counter.
    pub fn writes(&self) -> u64 {
        self.shared.objects().writes()
    }

    /// How many requests it has served, by what they asked.
    pub fn requests(&self) -> Requests {
        use std::sync::atomic::Ordering;
        // `all` last: a request counted between the loads is then in it.
        let version = self.shared.version_requests.load(Ordering::Relaxed);
        let watches = self.shared.watch_requests.load(Ordering::Relaxed);
        Requests {
            all: self.shared.requests.load(Ordering::Relaxed),
            version,
            watches,
        }
    }

    /// The CA its approved client CertificateSigningRequests are signed by,
    /// as PEM.
    pub fn ca_certificate(&self) -> Option<String> {
        self.shared.signer().map(|s| s.certificate().to_owned())
    }

    /// Changes how it behaves from the next request on.
    pub fn set_behaviour(&self, behaviour: Behaviour) {
        *self.shared.behaviour() = behaviour;
    }

    /// Stops accepting connections (they are refused) until [`Self::reopen`];
    /// its objects are kept.
    pub async fn refuse_connections(&mut self) {
        self.task.abort();
        // The aborted server's socket closes asynchronously; wait until it has.
        let _ = (&mut self.task).await;
    }

    /// Accepts connections again on the same address.
    pub async fn reopen(&mut self) -> std::io::Result<()> {
        let (listener, _) = server::bind(self.addr).await?;
        self.task = serve(listener, self.shared.clone(), self.tls.clone())?;
        Ok(())
    }

    /// A kubeconfig that reaches it (plain HTTP on loopback).
    pub fn kubeconfig(&self) -> String {
        let name = &self.name;
        let admin = format!("{name}-admin");
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": format!("http://{}", self.addr)}}],
            "users": [{"name": admin, "user": {"token": "wasmco-virtual-cluster"}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": admin, "namespace": "default"}}],
            "current-context": name,
        });
        serde_norway::to_string(&config).unwrap_or_default()
    }

    /// Writes [`Self::kubeconfig`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// Serves until the process is stopped.
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for VirtualCluster {
    fn drop(&mut self) {
        self.task.abort();
    }
}
