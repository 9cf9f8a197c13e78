//! The cluster repository: read in place when it is a directory on this
//! host, else fetched into a bare mirror under the data directory; each
//! read gives the followed branch's commit and every deploy file in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Where the deploy files come from: `URL[#branch]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRepo {
    /// A directory (or `file://` URL) on this host, or a remote's URL.
    pub url: String,
    /// The branch followed; the repository's `HEAD` when absent.
    pub branch: Option<String>,
}

/// A read of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The commit read (hex).
    pub commit: String,
    /// Every `.yaml`/`.yml` file in the commit's tree, by path.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Why the repository could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RepoError(String);

fn failed(what: &str) -> impl Fn(gix::Error) -> RepoError + '_ {
    move |e| RepoError(format!("{what}: {e}"))
}

/// The refspecs a fetch maps into the mirror: the branch, or the remote's
/// HEAD, each kept under a name of the mirror's own.
const HEAD_REF: &str = "refs/wasmco/head";

impl std::str::FromStr for ClusterRepo {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        // A `#` in the URL's password is not a branch's mark.
        let (url, branch) = match text.rsplit_once('#') {
            Some((url, branch)) if !branch.contains('@') => (url, Some(branch)),
            _ => (text, None),
        };
        if url.is_empty() {
            return Err("names no repository (URL[#branch])".to_owned());
        }
        let branch = match branch {
            Some(branch) if branch.is_empty() || branch.contains("..") || branch.contains(' ') => {
                return Err(format!("{branch:?} is not a branch name"));
            }
            Some(branch) => Some(branch.trim_start_matches("refs/heads/").to_owned()),
            None => None,
        };
        Ok(ClusterRepo {
            url: url.to_owned(),
            branch,
        })
    }
}

impl ClusterRepo {
    /// The repository's directory, when it is one on this host.
    fn local(&self) -> Option<PathBuf> {
        let path = self.url.strip_prefix("file://").unwrap_or(&self.url);
        let looks_remote = path.contains("://") || (path.contains(':') && !path.starts_with('/'));
        (!looks_remote).then(|| PathBuf::from(path))
    }

    /// The URL without its user and password, as the status shows it.
    pub fn shown(&self) -> String {
        if let Some((scheme, rest)) = self.url.split_once("://") {
            let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
            if let Some(at) = authority.rfind('@') {
                return format!("{scheme}://{}", &rest[at + 1..]);
            }
        }
        self.url.clone()
    }

    /// Reads the followed branch: in place for a local repository, else
    /// after fetching it into `mirror` (made on first use).
    pub fn read(&self, mirror: &Path) -> Result<Snapshot, RepoError> {
        match self.local() {
            Some(dir) => {
                let repo = gix::open(&dir).map_err(|e| {
                    RepoError(format!("{} is not a git repository: {e}", dir.display()))
                })?;
                let reference = match &self.branch {
                    Some(branch) => format!("refs/heads/{branch}"),
                    None => "HEAD".to_owned(),
                };
                snapshot(&repo, &reference)
            }
            None => {
                let repo = self.fetch(mirror)?;
                let reference = match &self.branch {
                    Some(branch) => format!("refs/heads/{branch}"),
                    None => HEAD_REF.to_owned(),
                };
                snapshot(&repo, &reference)
            }
        }
    }

    fn fetch(&self, mirror: &Path) -> Result<gix::Repository, RepoError> {
        let repo = if mirror.join("HEAD").is_file() {
            gix::open(mirror).map_err(|e| RepoError(format!("the mirror: {e}")))?
        } else {
            std::fs::create_dir_all(mirror)
                .map_err(|e| RepoError(format!("cannot make {}: {e}", mirror.display())))?;
            gix::init_bare(mirror).map_err(|e| RepoError(format!("the mirror: {e}")))?
        };
        let spec = match &self.branch {
            Some(branch) => format!("+refs/heads/{branch}:refs/heads/{branch}"),
            None => format!("+HEAD:{HEAD_REF}"),
        };
        let interrupt = AtomicBool::new(false);
        repo.remote_at(self.url.as_str())
            .map_err(failed("the repository's URL"))?
            .with_refspecs([spec.as_str()], gix::remote::Direction::Fetch)
            .map_err(failed("the refspec"))?
            .connect(gix::remote::Direction::Fetch)
            .map_err(failed("cannot reach the repository"))?
            .prepare_fetch(gix::progress::Discard, Default::default())
            .map_err(failed("cannot list the repository's branches"))?
            .receive(gix::progress::Discard, &interrupt)
            .map_err(failed("cannot fetch"))?;
        Ok(repo)
    }
}

/// The commit `reference` points at and its deploy files.
fn snapshot(repo: &gix::Repository, reference: &str) -> Result<Snapshot, RepoError> {
    let mut found = repo
        .find_reference(reference)
        .map_err(|e| RepoError(format!("no {reference} in the repository: {e}")))?;
    let commit = found
        .peel_to_commit()
        .map_err(failed("its commit cannot be read"))?;
    let tree = commit.tree().map_err(failed("its tree cannot be read"))?;
    let mut recorder = gix::traverse::tree::Recorder::default();
    tree.traverse()
        .breadthfirst(&mut recorder)
        .map_err(failed("its tree cannot be walked"))?;
    let mut files = BTreeMap::new();
    for entry in recorder.records {
        let path = entry.filepath.to_string();
        let is_deploy_file = path.ends_with(".yaml") || path.ends_with(".yml");
        if !entry.mode.is_blob() || !is_deploy_file {
            continue;
        }
        let blob = repo
            .find_blob(entry.oid)
            .map_err(|e| RepoError(format!("{path} cannot be read: {e}")))?;
        files.insert(path, blob.data.clone());
    }
    Ok(Snapshot {
        commit: commit.id.to_string(),
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::ClusterRepo;

    #[test]
    fn a_repository_is_a_url_and_an_optional_branch() {
        let repo: ClusterRepo = "https://git.example.com/team/clusters.git#prod"
            .parse()
            .unwrap();
        assert_eq!(repo.url, "https://git.example.com/team/clusters.git");
        assert_eq!(repo.branch.as_deref(), Some("prod"));
        assert!(repo.local().is_none());
        let repo: ClusterRepo = "/srv/clusters".parse().unwrap();
        assert_eq!(
            (repo.branch.clone(), repo.local()),
            (None, Some("/srv/clusters".into()))
        );
        let repo: ClusterRepo = "file:///srv/clusters#refs/heads/main".parse().unwrap();
        assert_eq!(repo.local(), Some("/srv/clusters".into()));
        assert_eq!(repo.branch.as_deref(), Some("main"));
        assert!(
            "git@example.com:team/clusters"
                .parse::<ClusterRepo>()
                .unwrap()
                .local()
                .is_none()
        );
        for bad in ["", "#main", "/srv/c#", "/srv/c#a..b"] {
            assert!(bad.parse::<ClusterRepo>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_url_shown_has_no_credentials() {
        let repo: ClusterRepo = "https://bot:s3cret@git.example.com/c.git#main"
            .parse()
            .unwrap();
        assert_eq!(repo.shown(), "https://git.example.com/c.git");
        let repo: ClusterRepo = "https://bot:pa#ss@git.example.com/c.git".parse().unwrap();
        assert_eq!(
            (repo.shown().as_str(), repo.branch),
            ("https://git.example.com/c.git", None)
        );
        let repo: ClusterRepo = "https://git.example.com/a@b/c.git".parse().unwrap();
        assert_eq!(repo.shown(), "https://git.example.com/a@b/c.git");
    }
}
