//! The dev server's virtual clusters, and their registration (with the
//! built-in controllers) through the API.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use wasmco_runtime::builtin::BUILTINS;
use wasmco_vcluster::{Behaviour, VirtualCluster};

use super::options::DevOptions;
use crate::cli::apply::{RunOptions, apply};
use crate::cli::client::ApiClient;
use crate::cli::controller::{Registration, upload};
use crate::cli::emcoctl::Document;
use crate::cli::error::CliError;

/// A dev cluster: name, labels, capacity (kv-pairs).
pub type DevCluster = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// The clusters `wasmco dev` starts.
pub const DEV_CLUSTERS: [DevCluster; 3] = [
    (
        "dev-1",
        &["edge", "east"],
        &[("cpu", "8"), ("memory", "16Gi")],
    ),
    (
        "dev-2",
        &["edge", "west"],
        &[("cpu", "4"), ("memory", "8Gi")],
    ),
    (
        "dev-3",
        &["core", "west"],
        &[("cpu", "32"), ("memory", "128Gi"), ("nvidia.com/gpu", "2")],
    ),
];

/// The provider of the dev clusters.
pub const DEV_PROVIDER: &str = "dev";

/// Starts the dev clusters next to the API's port (or anywhere, when that
/// port is busy) and writes their kubeconfigs into `clusters_dir`.
pub async fn start_clusters(
    options: &DevOptions,
    clusters_dir: &Path,
) -> Result<Vec<(VirtualCluster, PathBuf)>, CliError> {
    let behaviour = Behaviour {
        ready_after: options.ready_after,
        ..Default::default()
    };
    let mut clusters = Vec::new();
    for (offset, (name, _, _)) in DEV_CLUSTERS.iter().enumerate() {
        let port = match options.listen.port() {
            0 => 0,
            base => base.saturating_add(offset as u16 + 1),
        };
        let preferred = SocketAddr::new(options.listen.ip(), port);
        // A fixed port keeps kubeconfigs valid across restarts; a busy one
        // is no reason not to start.
        let cluster = match VirtualCluster::start(name, preferred, behaviour.clone()).await {
            Ok(cluster) => cluster,
            Err(_) => {
                VirtualCluster::start(
                    name,
                    SocketAddr::new(options.listen.ip(), 0),
                    behaviour.clone(),
                )
                .await?
            }
        };
        let kubeconfig = clusters_dir.join(format!("{name}.kubeconfig"));
        cluster
            .write_kubeconfig(&kubeconfig)
            .map_err(|source| CliError::Io {
                path: kubeconfig.clone(),
                source,
            })?;
        clusters.push((cluster, kubeconfig));
    }
    Ok(clusters)
}

/// The provider, the clusters with their labels and capacity, and the
/// built-in controllers, through the API like any client; a second start
/// replaces what the first registered.
pub fn register(client: &ApiClient, kubeconfigs: &[PathBuf]) -> Result<(), CliError> {
    let document =
        |anchor: String, metadata: serde_json::Value, spec, file: Option<PathBuf>| Document {
            origin: "wasmco dev".into(),
            anchor,
            metadata: Some(metadata),
            spec: Some(spec),
            cluster_label: None,
            files: file.into_iter().collect(),
            many: false,
            unsupported: None,
        };
    let mut documents = vec![document(
        "cluster-providers".into(),
        json!({"name": DEV_PROVIDER, "description": "virtual clusters of wasmco dev"}),
        json!({}),
        None,
    )];
    for ((name, labels, kv), kubeconfig) in DEV_CLUSTERS.iter().zip(kubeconfigs) {
        let clusters = format!("cluster-providers/{DEV_PROVIDER}/clusters");
        documents.push(document(
            clusters.clone(),
            json!({"name": name}),
            json!({}),
            Some(kubeconfig.clone()),
        ));
        for label in labels.iter() {
            documents.push(Document {
                cluster_label: Some((*label).to_owned()),
                metadata: None,
                spec: None,
                ..document(
                    format!("{clusters}/{name}/labels"),
                    json!({}),
                    json!({}),
                    None,
                )
            });
        }
        let pairs: Vec<_> = kv.iter().map(|(k, v)| json!({ *k: v })).collect();
        documents.push(document(
            format!("{clusters}/{name}/kv-pairs"),
            json!({"name": "capacity"}),
            json!({"kv": pairs}),
            None,
        ));
    }
    let mut report = Vec::new();
    let options = RunOptions {
        stop_on_error: true,
        terminate_timeout: Duration::ZERO,
    };
    apply(client, &documents, options, &mut report).map_err(|e| {
        CliError::Usage(format!(
            "registering the dev clusters failed: {e}\n{}",
            String::from_utf8_lossy(&report)
        ))
    })?;
    for builtin in BUILTINS.iter().filter(|b| b.name != "generic-placement") {
        let registration = Registration {
            name: builtin.name.to_owned(),
            kind: Some(builtin.kind),
            priority: builtin.priority,
        };
        upload(client, &registration, builtin.wasm.to_vec())?;
    }
    Ok(())
}
