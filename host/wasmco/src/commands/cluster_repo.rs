//! `wasmco serve --cluster-repo`: GitOps mode's arguments and start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use wasmco_orchestrator::gitops::{ClusterRepo, GitOps, GitOpsOptions};

/// A git repository of Eggo deploy files the server carries its clusters to.
#[derive(clap::Args)]
pub struct ClusterRepoArgs {
    /// Follow this git repository of Eggo deploy files (`URL[#branch]`: a
    /// directory on this host, `file://`, `https://`, `git://` or `ssh://`):
    /// a file added deploys its cluster, machines added or taken out join
    /// or leave, any other change upgrades, a file removed cleans up.
    #[arg(long, value_name = "URL[#BRANCH]")]
    cluster_repo: Option<ClusterRepo>,
    /// The cluster provider the repository's clusters are deployments of
    /// (made when missing).
    #[arg(long, default_value = "gitops", requires = "cluster_repo")]
    cluster_repo_provider: String,
    /// The private key the deploy files that name `private-key-path` log
    /// in with (a repository holds no keys).
    #[arg(long, value_name = "FILE", requires = "cluster_repo")]
    cluster_repo_key: Option<PathBuf>,
    /// How often the repository is read.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration, requires = "cluster_repo")]
    cluster_repo_poll: Duration,
}

impl ClusterRepoArgs {
    /// Starts following the repository, when one is named.
    pub fn start(
        &self,
        orchestrator: &wasmco_orchestrator::Orchestrator,
        data_dir: &Path,
    ) -> anyhow::Result<()> {
        let Some(repo) = self.cluster_repo.clone() else {
            return Ok(());
        };
        wasmco_core::check_name("--cluster-repo-provider", &self.cluster_repo_provider)
            .map_err(|e| anyhow::anyhow!("{}: {}", e.field, e.reason))?;
        let private_key = match &self.cluster_repo_key {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("reading --cluster-repo-key {}", path.display()))?,
            ),
            None => None,
        };
        let options = GitOpsOptions {
            mirror: data_dir.join("gitops").join(mirror_name(&repo)),
            repo,
            provider: self.cluster_repo_provider.clone(),
            private_key,
            poll: self.cluster_repo_poll,
        };
        tracing::info!(repo = %options.repo.shown(), provider = %options.provider, "following the cluster repository");
        GitOps::new(orchestrator.clone(), options)
            .spawn()
            .context("starting the GitOps thread")
    }
}

/// A directory name of the repository's own, so two repositories a data
/// directory follows in turn keep their mirrors apart.
fn mirror_name(repo: &ClusterRepo) -> String {
    repo.shown()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
