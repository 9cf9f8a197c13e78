//! What `wasmco cluster` shares with its tests: the deployment's paths,
//! the provider made on demand, and the progress view.

use std::collections::BTreeMap;
use std::io::Write;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::StatusCode;
use serde_json::json;

use wasmco_core::wire::{ClusterDeploymentStatus, NodeProgress, Phase};

use super::client::{ApiClient, ClientError};

/// The provider's deployments.
pub fn collection(provider: &str) -> String {
    format!("/v2/cluster-providers/{provider}/cluster-deployments")
}

/// One deployment.
pub fn item(provider: &str, name: &str) -> String {
    format!("{}/{name}", collection(provider))
}

/// Creates the cluster provider unless it is there.
pub fn ensure_provider(client: &ApiClient, provider: &str) -> Result<(), ClientError> {
    match client.get(&format!("/v2/cluster-providers/{provider}")) {
        Ok(_) => Ok(()),
        Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => client
            .post(
                "/v2/cluster-providers",
                &json!({"metadata": {"name": provider, "description": "clusters wasmco makes"}}),
            )
            .map(drop),
        Err(error) => Err(error),
    }
}

/// A deployment's progress as it goes: a bar per machine on a terminal
/// (phases done out of the run's: Eggo's seven for a deploy, three for a
/// cleanup), else a line per change.
pub struct View {
    bars: Option<(MultiProgress, BTreeMap<String, ProgressBar>)>,
    last: BTreeMap<String, String>,
}

impl View {
    /// Bars when `terminal`.
    pub fn new(terminal: bool) -> Self {
        View {
            bars: terminal.then(|| {
                (
                    MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                    BTreeMap::new(),
                )
            }),
            last: BTreeMap::new(),
        }
    }

    /// Shows `status`'s changes.
    pub fn show(&mut self, status: &ClusterDeploymentStatus) {
        let phases = phases_of(status);
        for (node, progress) in &status.progress.nodes {
            let line = describe(progress);
            match &mut self.bars {
                Some((multi, bars)) => {
                    let bar = bars.entry(node.clone()).or_insert_with(|| {
                        let style = ProgressStyle::with_template(
                            "{prefix:>12} [{bar:21}] {pos}/{len} {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar());
                        let bar = multi.add(ProgressBar::new(phases));
                        bar.set_style(style);
                        bar.set_prefix(node.clone());
                        bar
                    });
                    bar.set_length(phases);
                    bar.set_position(progress.done.len() as u64);
                    bar.set_message(line);
                }
                None => {
                    if self.last.get(node) != Some(&line) {
                        eprintln!("{node}: {line}");
                        self.last.insert(node.clone(), line);
                    }
                }
            }
        }
    }

    /// Ends the bars and writes the final table to `out`.
    pub fn finish(
        &mut self,
        status: &ClusterDeploymentStatus,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if let Some((_, bars)) = self.bars.take() {
            bars.values().for_each(ProgressBar::finish);
        }
        write!(out, "{}", table(status))
    }
}

/// How many phases the status's run has: a cleanup's or a deploy's.
fn phases_of(status: &ClusterDeploymentStatus) -> u64 {
    let cleanup = status.progress.phase.is_some_and(Phase::is_cleanup);
    if cleanup {
        Phase::CLEANUP.len() as u64
    } else {
        Phase::ALL.len() as u64
    }
}

/// A machine's phase, step and error in a few words.
fn describe(progress: &NodeProgress) -> String {
    let phase = progress
        .phase
        .map_or("waiting".to_owned(), |phase| phase.to_string());
    match (&progress.step, &progress.error) {
        (_, Some(error)) => format!("{phase}: failed: {error}"),
        (Some(step), None) => format!("{phase}: {step}"),
        (None, None) => phase,
    }
}

/// The status as a table: the deployment, then a row per machine.
pub fn table(status: &ClusterDeploymentStatus) -> String {
    let mut text = format!(
        "cluster deployment {} (cluster {} under {}): {}\n",
        status.name, status.cluster, status.cluster_provider, status.state
    );
    if let Some(error) = &status.progress.error {
        text.push_str(&format!("error: {error}\n"));
    }
    if let Some(addons) = &status.addons {
        text.push_str(&format!(
            "addons: {} objects, {} applied, {} ready\n",
            addons.objects, addons.applied, addons.ready
        ));
        for failed in &addons.failed {
            text.push_str(&format!("  failed: {failed}\n"));
        }
    }
    text.push_str(&format!("{:<16} {:<6} {}\n", "MACHINE", "PHASES", "WHERE"));
    for (node, progress) in &status.progress.nodes {
        text.push_str(&format!(
            "{node:<16} {:<6} {}\n",
            format!("{}/{}", progress.done.len(), phases_of(status)),
            describe(progress)
        ));
    }
    text
}
