//! A Kubernetes-API-compatible endpoint, so tests, the dev server and
//! benchmarks have clusters without Kubernetes. It follows the API's
//! conventions (paths, content types, status codes, `Status` objects,
//! resourceVersion, watches) closely enough for kube-rs and kubectl.
//!
//! Not yet: simulated readiness delays and fault injection (issue #5).

pub mod catalog;
pub mod objects;
mod server;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// A running virtual cluster.
pub struct VirtualCluster {
    addr: SocketAddr,
    name: String,
    task: tokio::task::JoinHandle<()>,
}

impl VirtualCluster {
    /// Starts a virtual cluster called `name` on `listen` (port 0 picks one)
    /// on the current tokio runtime.
    pub async fn start(name: &str, listen: SocketAddr) -> std::io::Result<Self> {
        let (listener, addr) = server::bind(listen).await?;
        let shared = Arc::new(server::Shared::new(addr.to_string()));
        let router = server::router(shared);
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::error!(%error, "virtual cluster stopped");
            }
        });
        Ok(VirtualCluster {
            addr,
            name: name.to_owned(),
            task,
        })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A kubeconfig that reaches it (plain HTTP on loopback).
    pub fn kubeconfig(&self) -> String {
        let name = &self.name;
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: http://{addr}\nusers:\n- name: {name}-admin\n  user:\n    token: wasmco-virtual-cluster\ncontexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}-admin\n    namespace: default\ncurrent-context: {name}\n",
            addr = self.addr
        )
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
