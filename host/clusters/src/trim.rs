//! The package archive cut to each machine's roles, here, once: a worker
//! is sent the kubelet and kube-proxy but not the control plane, and no
//! machine spends its CPU on gunzip (three seconds for the usual archive,
//! paid by every machine at once when they are set up side by side). The
//! cut archives are plain tars, kept by digest in a cache only this user
//! writes, so a second deploy of the same archive unpacks nothing here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmco_nodes::NodeError;

use crate::error::DeployError;
use crate::plan::{Archive, Plan};
use crate::topology::Machine;

/// The package archive each machine of `plan` is sent, by machine name:
/// cut to its roles when there is a `cache` to keep the cuts in.
pub async fn machines_archives(
    plan: &Plan<'_>,
    archives: &BTreeMap<String, Archive>,
    cache: Option<PathBuf>,
) -> Result<BTreeMap<String, Archive>, DeployError> {
    let mut sent = BTreeMap::new();
    for (arch, archive) in archives {
        let machines: Vec<&Machine> = plan
            .topology
            .machines
            .iter()
            .filter(|machine| &machine.arch == arch)
            .collect();
        let cut = match &cache {
            Some(cache) => {
                let sets: Vec<LeaveOut> = machines
                    .iter()
                    .map(|machine| crate::plan::left_out(plan, &machine.roles))
                    .collect();
                let (archive, cache) = (archive.clone(), cache.clone());
                tokio::task::spawn_blocking(move || trim(&archive, &sets, &cache))
                    .await
                    .unwrap_or_else(|panicked| {
                        Err(NodeError::Local {
                            path: "the package archive".to_owned(),
                            source: std::io::Error::other(panicked),
                        })
                    })
                    .map_err(|error| DeployError::Archive {
                        arch: arch.clone(),
                        error,
                    })?
            }
            None => vec![archive.clone(); machines.len()],
        };
        for (machine, archive) in machines.into_iter().zip(cut) {
            sent.insert(machine.name.clone(), archive);
        }
    }
    Ok(sent)
}

/// Members of `archive` to leave out: a name leaves out itself and what
/// is under it.
pub type LeaveOut = BTreeSet<String>;

/// `archive` without each set of members, one archive per set, in order.
/// An empty set is the archive as it is.
pub fn trim(archive: &Archive, sets: &[LeaveOut], cache: &Path) -> Result<Vec<Archive>, NodeError> {
    create_private_dir(cache).map_err(local_error(cache))?;
    // Machines of one role share a set: each distinct set is cut (and its
    // digest read) once.
    let mut cuts: BTreeMap<&LeaveOut, PathBuf> = BTreeMap::new();
    for set in sets.iter().filter(|set| !set.is_empty()) {
        cuts.entry(set)
            .or_insert_with(|| cache.join(cut_name(archive, set)));
    }
    let missing: Vec<(&LeaveOut, &PathBuf)> = cuts
        .iter()
        .map(|(set, target)| (*set, target))
        .filter(|(_, target)| !target.is_file())
        .collect();
    if !missing.is_empty() {
        cut(&archive.local.path, &missing).map_err(local_error(&archive.local.path))?;
    }
    let mut read: BTreeMap<&LeaveOut, Archive> = BTreeMap::new();
    for (set, path) in &cuts {
        let local = wasmco_nodes::LocalFile::read(path)?;
        let name = format!("{}.tar", stem(&archive.name));
        read.insert(set, Archive { local, name });
    }
    Ok(sets
        .iter()
        .map(|set| read.get(set).cloned().unwrap_or_else(|| archive.clone()))
        .collect())
}

/// An I/O error at `path`, here.
fn local_error(path: &Path) -> impl FnOnce(std::io::Error) -> NodeError + '_ {
    move |source| NodeError::Local {
        path: path.display().to_string(),
        source,
    }
}

/// Whether `member` (as the archive spells it) is left out by `set`.
fn leaves_out(set: &LeaveOut, member: &str) -> bool {
    let member = member.trim_start_matches("./").trim_end_matches('/');
    set.iter().any(|out| {
        member == out
            || member
                .strip_prefix(out.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The cut's file name: the archive's digest and the set's, so a changed
/// archive or set never reads an old cut.
fn cut_name(archive: &Archive, set: &LeaveOut) -> String {
    let mut hasher = Sha256::new();
    for member in set {
        hasher.update(member.as_bytes());
        hasher.update([0]);
    }
    let set_digest = hex::encode(hasher.finalize());
    format!("{}-{}.tar", &archive.local.digest[..16], &set_digest[..16])
}

/// `packages-amd64.tar.gz` → `packages-amd64`.
pub(crate) fn stem(name: &str) -> &str {
    [".tar.gz", ".tgz", ".tar"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

/// One pass over the gzipped archive at `source`, each member written to
/// every cut that keeps it; each cut lands whole, through a rename.
fn cut(source: &Path, cuts: &[(&LeaveOut, &PathBuf)]) -> std::io::Result<()> {
    let partial = |target: &Path| target.with_extension(format!("partial-{}", std::process::id()));
    let mut builders = cuts
        .iter()
        .map(|(_, target)| {
            Ok(tar::Builder::new(BufWriter::new(File::create(partial(
                target,
            ))?)))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(File::open(source)?));
    let mut contents = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let member = path.to_string_lossy();
        contents.clear();
        entry.read_to_end(&mut contents)?;
        for ((set, _), builder) in cuts.iter().zip(&mut builders) {
            if !leaves_out(set, &member) {
                let mut header = entry.header().clone();
                builder.append_data(&mut header, &path, contents.as_slice())?;
            }
        }
    }
    for ((_, target), builder) in cuts.iter().zip(builders) {
        builder
            .into_inner()?
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()?;
        std::fs::rename(partial(target), target)?;
    }
    Ok(())
}

/// The cache's directory, readable and writable by this user only: what
/// is in it is sent to machines as root.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let metadata = std::fs::metadata(dir)?;
    if metadata.permissions().mode() & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{} may be written by others; it holds what machines install as root",
            dir.display()
        )));
    }
    Ok(())
}

/// The default cache: `$XDG_CACHE_HOME/wasmco/packages`, else under
/// `~/.cache`; none without a home (no shared temporary directory).
pub fn default_cache() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::home_dir().map(|home| home.join(".cache")))
        .map(|base| base.join("wasmco").join("packages"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive_of(dir: &Path, members: &[(&str, &str)]) -> Archive {
        let path = dir.join("packages-amd64.tar.gz");
        let file = File::create(&path).unwrap();
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::fast(),
        ));
        for (name, contents) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(contents.len() as u64);
            header.set_mode(0o755);
            builder
                .append_data(&mut header, name, contents.as_bytes())
                .unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
        Archive::read(&path).unwrap()
    }

    fn members(archive: &Archive) -> Vec<(String, String)> {
        let mut tar = tar::Archive::new(File::open(&archive.local.path).unwrap());
        tar.entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let mut text = String::new();
                entry.read_to_string(&mut text).unwrap();
                (entry.path().unwrap().display().to_string(), text)
            })
            .collect()
    }

    #[test]
    fn each_set_is_cut_in_one_pass_and_kept_by_digest() {
        let dir = tempfile::tempdir().unwrap();
        let archive = archive_of(
            dir.path(),
            &[
                ("./bin/kubelet", "kubelet"),
                ("./bin/kube-apiserver", "apiserver"),
                ("dir/cni/conf", "cni"),
                ("dir/cni-extra", "kept"),
                ("file/unnamed", "kept"),
            ],
        );
        let worker: LeaveOut = ["bin/kube-apiserver".to_owned(), "dir/cni".to_owned()].into();
        let cache = dir.path().join("cache");
        // Two workers share a set: it is cut once, whole.
        let sets = [worker.clone(), LeaveOut::new(), worker.clone()];
        let cut = trim(&archive, &sets, &cache).unwrap();
        assert_eq!(cut[2].local, cut[0].local);
        assert_eq!(cut[1].local, archive.local, "an empty set sends it as is");
        assert_eq!(cut[0].name, "packages-amd64.tar");
        assert_eq!(
            members(&cut[0]),
            [
                ("bin/kubelet".to_owned(), "kubelet".to_owned()),
                ("dir/cni-extra".to_owned(), "kept".to_owned()),
                ("file/unnamed".to_owned(), "kept".to_owned()),
            ]
        );
        let mode = std::fs::metadata(&cache).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );

        // Cut again from the cache: the archive itself is not read.
        std::fs::remove_file(&archive.local.path).unwrap();
        let again = trim(&archive, &[worker], &cache).unwrap();
        assert_eq!(again[0].local, cut[0].local);
    }
}
