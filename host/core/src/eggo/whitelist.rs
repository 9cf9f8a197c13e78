//! The directories a package may be copied into. Eggo deletes what it
//! copied when it cleans a machine up, so a destination outside these could
//! make a cleanup delete a system file; Eggo refuses to remove such paths
//! (`pkg/utils/dependency/pathwhitelist.go`, `CheckPath`), and its
//! documentation asks every `dst` to be inside them.

use super::syntax::clean_absolute;

/// Directories a copied file may be in, at any depth, or be.
pub const DST_DIRS: [&str; 5] = [
    "/opt/cni/bin",
    "/usr/libexec/cni",
    "/etc/cni/net.d",
    "/etc/kubernetes",
    "/root/.eggo",
];

/// Directories a copied file may be below but not be.
pub const DST_SUBDIRS: [&str; 5] = [
    "/usr/bin",
    "/usr/local/bin",
    "/usr/lib/systemd/system",
    "/etc/systemd/system",
    "/tmp",
];

/// Whether the file `name` copied into `dst` lands where Eggo may later
/// delete it. Eggo compares the joined, cleaned path by string prefix, so
/// `/tmpfoo` would pass it; this compares whole path components, which is
/// what its documentation ("the directories or their subdirectories")
/// says.
pub fn dst_allowed(dst: &str, name: &str) -> bool {
    let path = clean_absolute(&format!("{dst}/{name}"));
    let within = |dir: &str| path == dir || path.starts_with(&format!("{dir}/"));
    DST_DIRS.iter().any(|dir| within(dir))
        || DST_SUBDIRS
            .iter()
            .any(|dir| path.starts_with(&format!("{dir}/")))
}
