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

/// How long one read (a fetch, for a remote) may take.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

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
        // gix's https client (reqwest on rustls, built without a provider
        // of its own) takes the process's: ring, as every TLS client here.
        let _ = rustls::crypto::ring::default_provider().install_default();
        std::thread::Builder::new()
            .name("gitops".to_owned())
            .spawn(move || {
                loop {
                    let poll = std::panic::AssertUnwindSafe(|| self.poll_once());
                    match std::panic::catch_unwind(poll) {
                        Ok(polled) => {
                            if let Some(error) = &polled.error {
                                tracing::warn!(repo = %polled.repo, %error, "cluster repository not read");
                            }
                        }
                        Err(_) => tracing::error!("a read of the cluster repository panicked; reading it again at the next poll"),
                    }
                    std::thread::sleep(self.options.poll);
                }
            })
            .map(|_| ())
    }

    /// One read of the repository and one step for each file; the status
    /// it leaves (also kept in the store). One host of the store reads at a
    /// time, so two hosts never carry a cluster two ways.
    pub fn poll_once(&self) -> GitOpsStatus {
        let shared = &self.orchestrator.cluster_deployments().shared;
        let mut next = GitOpsStatus {
            repo: self.options.repo.shown(),
            branch: self.options.repo.branch.clone(),
            cluster_provider: self.options.provider.clone(),
            polled: Some(now()),
            ..GitOpsStatus::default()
        };
        let _one_reader = match shared.lock("gitops") {
            Ok(guard) => guard,
            Err(error) => {
                next.error = Some(format!("cannot take the GitOps lock: {error}"));
                return next;
            }
        };
        let db = &shared.db;
        let mut last = status(db).ok().flatten().unwrap_or_default();
        let same_source = last.repo == next.repo
            && last.branch == next.branch
            && last.cluster_provider == next.cluster_provider;
        if !same_source && !last.files.is_empty() {
            // Another repository's files are not this one's removals: its
            // clusters are left as they are.
            tracing::warn!(before = %last.repo, now = %next.repo, "following another cluster repository; the clusters of the one before are left alone");
            last = GitOpsStatus::default();
        }
        match self.read() {
            Ok(snapshot) => {
                next.commit = Some(snapshot.commit.clone());
                next.files = self.carry(&snapshot, &last);
            }
            Err(error) => {
                next.commit = last.commit;
                next.files = last.files;
                next.error = Some(error);
            }
        }
        if let Err(error) = keep(db, &next) {
            tracing::warn!(%error, "GitOps status not kept");
        }
        next
    }

    /// The repository read on a thread of its own, given up after
    /// [`READ_TIMEOUT`]: a remote that stops answering mid-fetch must not
    /// stop every cluster's GitOps (the stuck fetch is left to end alone).
    fn read(&self) -> Result<Snapshot, String> {
        let (repo, mirror) = (self.options.repo.clone(), self.options.mirror.clone());
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("gitops fetch".to_owned())
            .spawn(move || {
                let _ = sender.send(repo.read(&mirror));
            })
            .map_err(|e| format!("no thread to read the repository on: {e}"))?;
        match receiver.recv_timeout(READ_TIMEOUT) {
            Ok(read) => read.map_err(|e| e.to_string()),
            Err(_) => Err(format!(
                "the repository did not answer within {}s",
                READ_TIMEOUT.as_secs()
            )),
        }
    }

    /// Steps every file of `snapshot` (and every file gone from it) once.
    fn carry(&self, snapshot: &Snapshot, last: &GitOpsStatus) -> Vec<GitOpsFile> {
        let commit = &snapshot.commit;
        let before: BTreeMap<&str, &GitOpsFile> =
            last.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let read: Vec<(&String, Result<Desired, FieldError>)> = snapshot
            .files
            .iter()
            .map(|(path, bytes)| (path, self.desired(bytes)))
            .collect();
        let mut claims: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (path, desired) in &read {
            if let Ok(desired) = desired {
                claims.entry(&desired.name).or_default().push(path);
            }
        }
        let mut files = Vec::new();
        for (path, desired) in &read {
            let mut file = GitOpsFile {
                path: (*path).clone(),
                ..before
                    .get(path.as_str())
                    .map(|f| (*f).clone())
                    .unwrap_or_default()
            };
            file.removed = false;
            file.error = None;
            let checked = desired.as_ref().map_err(Clone::clone).and_then(|desired| {
                self.claimed(&file, desired, &claims[desired.name.as_str()])?;
                Ok(desired)
            });
            match checked {
                Ok(desired) => {
                    file.cluster_deployment = Some(desired.name.clone());
                    self.step(commit, &mut file, &desired.upload, &desired.config);
                }
                Err(problem) => file.error = Some(refused(commit, problem)),
            }
            files.push(file);
        }
        // A file that cannot be read may be a removed one's new name: no
        // cluster is taken down while one is there.
        let unread = read
            .iter()
            .find(|(_, desired)| desired.is_err())
            .map(|(path, _)| *path);
        for gone in last
            .files
            .iter()
            .filter(|f| !snapshot.files.contains_key(&f.path))
        {
            let mut file = gone.clone();
            file.removed = true;
            file.error = None;
            let claimed = file
                .cluster_deployment
                .as_deref()
                .is_some_and(|name| claims.contains_key(name));
            if claimed {
                // Another file makes that cluster now (the file was renamed).
                continue;
            }
            if let Some(unread) = unread {
                file.error = Some(refused(
                    commit,
                    FieldError::new(
                        "",
                        format!(
                            "its cleanup waits: {unread} is not a valid deploy file, and may be this one renamed"
                        ),
                    ),
                ));
                files.push(file);
                continue;
            }
            if self.remove(commit, &mut file) {
                files.push(file);
            }
        }
        files
    }

    /// Whether `file` may carry `desired`'s cluster: it is the only file
    /// that names it, and it names the cluster it named before (or that
    /// one is gone).
    fn claimed(
        &self,
        file: &GitOpsFile,
        desired: &Desired,
        claimants: &[&str],
    ) -> Result<(), FieldError> {
        if claimants.len() > 1 {
            return Err(FieldError::new(
                "cluster-id",
                format!(
                    "{} is the cluster-id of {}; each file makes its own cluster, and none of them is carried until one does",
                    desired.name,
                    claimants.join(" and ")
                ),
            ));
        }
        let Some(before) = file
            .cluster_deployment
            .as_deref()
            .filter(|before| *before != desired.name)
        else {
            return Ok(());
        };
        let target = crate::cluster_deploy::ClusterDeploymentRef {
            provider: self.options.provider.clone(),
            name: before.to_owned(),
        };
        match self.orchestrator.cluster_deployments().stored(&target) {
            Ok(None) => Ok(()),
            _ => Err(FieldError::new(
                "cluster-id",
                format!(
                    "changed from {before} to {}; a cluster is not renamed: remove this file (its cluster is cleaned up), then add the new one",
                    desired.name
                ),
            )),
        }
    }

    /// The deployment a file makes and its upload, checked as an upload is.
    fn desired(&self, bytes: &[u8]) -> Result<Desired, FieldError> {
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
        Ok(Desired {
            name,
            upload,
            config,
        })
    }
}

/// What a valid file asks for.
struct Desired {
    name: String,
    upload: DeployUpload,
    config: DeployConfig,
}

/// A file's problem as the status shows it.
fn refused(commit: &str, problem: FieldError) -> GitOpsError {
    GitOpsError {
        commit: commit.to_owned(),
        field: Some(problem.field).filter(|f| !f.is_empty()),
        reason: problem.reason,
    }
}
