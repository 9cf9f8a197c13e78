//! The follower: reads the repository every poll interval and steps each
//! deploy file's deployment once per read.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use wasmco_core::eggo::DeployConfig;
use wasmco_core::wire::{GitOpsError, GitOpsFile, GitOpsStatus};
use wasmco_core::{FieldError, check_name};
use wasmco_store::appcontext::now;

use super::kept::{keep, status};
use super::repo::{ClusterRepo, Snapshot};
use crate::cluster_deploy::DeployUpload;
use crate::orchestrator::Orchestrator;

/// What `wasmco serve --cluster-repo` configures.
#[derive(Debug, Clone)]
pub struct GitOpsOptions {
    /// The repository and branch followed.
    pub repo: ClusterRepo,
    /// The provider whose cluster deployments the files are.
    pub provider: String,
    /// The key deploy files with `private-key-path` log in with (the
    /// repository holds no key).
    pub private_key: Option<String>,
    /// How often the repository is read.
    pub poll: Duration,
    /// Where a remote repository is mirrored.
    pub mirror: PathBuf,
}

/// The repository's follower.
#[derive(Clone)]
pub struct GitOps {
    pub(super) orchestrator: Orchestrator,
    pub(super) options: GitOpsOptions,
}

impl GitOps {
    /// A follower of `options.repo` for `orchestrator`'s deployments.
    pub fn new(orchestrator: Orchestrator, options: GitOpsOptions) -> Self {
        GitOps {
            orchestrator,
            options,
        }
    }

    /// Reads the repository every poll interval, on a thread of its own,
    /// for as long as the process runs.
    pub fn spawn(self) -> std::io::Result<()> {
        std::thread::Builder::new()
            .name("gitops".to_owned())
            .spawn(move || {
                loop {
                    let polled = self.poll_once();
                    if let Some(error) = &polled.error {
                        tracing::warn!(repo = %polled.repo, %error, "cluster repository not read");
                    }
                    std::thread::sleep(self.options.poll);
                }
            })
            .map(|_| ())
    }

    /// One read of the repository and one step for each file; the status
    /// it leaves (also kept in the store).
    pub fn poll_once(&self) -> GitOpsStatus {
        let db = &self.orchestrator.cluster_deployments().shared.db;
        let last = status(db).ok().flatten().unwrap_or_default();
        let mut next = GitOpsStatus {
            repo: self.options.repo.shown(),
            branch: self.options.repo.branch.clone(),
            cluster_provider: self.options.provider.clone(),
            polled: Some(now()),
            ..GitOpsStatus::default()
        };
        match self.options.repo.read(&self.options.mirror) {
            Ok(snapshot) => {
                next.commit = Some(snapshot.commit.clone());
                next.files = self.carry(&snapshot, &last);
            }
            Err(error) => {
                next.commit = last.commit;
                next.files = last.files;
                next.error = Some(error.to_string());
            }
        }
        if let Err(error) = keep(db, &next) {
            tracing::warn!(%error, "GitOps status not kept");
        }
        next
    }

    /// Steps every file of `snapshot` (and every file gone from it) once.
    fn carry(&self, snapshot: &Snapshot, last: &GitOpsStatus) -> Vec<GitOpsFile> {
        let before: BTreeMap<&str, &GitOpsFile> =
            last.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut files = Vec::new();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for (path, bytes) in &snapshot.files {
            let mut file = GitOpsFile {
                path: path.clone(),
                ..before
                    .get(path.as_str())
                    .map(|f| (*f).clone())
                    .unwrap_or_default()
            };
            file.removed = false;
            file.error = None;
            match self.desired(path, bytes, &mut names) {
                Ok((name, upload, config)) => {
                    file.cluster_deployment = Some(name);
                    self.step(&snapshot.commit, &mut file, &upload, &config);
                }
                Err(problem) => {
                    file.error = Some(GitOpsError {
                        commit: snapshot.commit.clone(),
                        field: Some(problem.field).filter(|f| !f.is_empty()),
                        reason: problem.reason,
                    });
                }
            }
            files.push(file);
        }
        for gone in last
            .files
            .iter()
            .filter(|f| !snapshot.files.contains_key(&f.path))
        {
            let mut file = gone.clone();
            file.removed = true;
            file.error = None;
            if self.remove(&snapshot.commit, &mut file, &names) {
                files.push(file);
            }
        }
        files
    }

    /// The deployment a file makes and its upload, checked as an upload
    /// is; `names` holds the files' deployments so far, each once.
    fn desired(
        &self,
        path: &str,
        bytes: &[u8],
        names: &mut BTreeMap<String, String>,
    ) -> Result<(String, DeployUpload, DeployConfig), FieldError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| FieldError::new("", "is not UTF-8 text"))?
            .to_owned();
        let mut upload = DeployUpload {
            deploy_file: text,
            private_key: self.options.private_key.clone(),
        };
        let (config, _) = upload.checked().map_err(|problem| {
            let field = problem
                .field
                .strip_prefix("file.")
                .unwrap_or(&problem.field);
            FieldError::new(field, problem.reason.clone())
        })?;
        if config.private_key_path.is_empty() {
            upload.private_key = None;
        }
        let name = config.with_defaults().cluster_id;
        check_name("cluster-id", &name)?;
        if let Some(other) = names.insert(name.clone(), path.to_owned()) {
            names.insert(name.clone(), other.clone());
            return Err(FieldError::new(
                "cluster-id",
                format!("{name} is the cluster-id of {other} too; each file makes its own cluster"),
            ));
        }
        Ok((name, upload, config))
    }
}
