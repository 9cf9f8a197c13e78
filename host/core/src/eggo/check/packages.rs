//! The `install` block (`cmd/checker.go`, `InstallConfigResponsibility`
//! and `checkPackageConfig`, and the destination allow-list Eggo applies
//! when it cleans up).

use std::collections::BTreeSet;

use super::super::defaults::DEFAULT_ARCH;
use super::super::install::{Package, PackageSource};
use super::super::model::DeployConfig;
use super::super::syntax::{go_duration, is_absolute};
use super::super::whitelist::{DST_DIRS, DST_SUBDIRS, dst_allowed};
use super::problems::Problems;

/// The one archive format Eggo knows.
const ARCHIVE_TYPE: &str = "tar.gz";

/// The package source, then every package list.
pub(super) fn check_install(config: &DeployConfig, problems: &mut Problems) {
    let install = &config.install;
    if let Some(source) = &install.package_source {
        check_source(source, &architectures(config), problems);
    }
    for (key, packages) in install.lists() {
        for (i, package) in packages.iter().enumerate() {
            check_package(&format!("install.{key}[{i}]"), package, problems);
        }
    }
}

/// The architectures of the cluster's machines, each of which needs an
/// archive once any is given. Eggo's checker forgets the etcd machines
/// and takes a missing arch as its own architecture `""`; its deployer
/// installs on etcd machines too and takes a missing arch as `amd64`, which
/// is what is checked here.
fn architectures(config: &DeployConfig) -> BTreeSet<&str> {
    let hosts = config
        .masters
        .iter()
        .chain(&config.workers)
        .chain(&config.etcds);
    let mut arches: BTreeSet<&str> = hosts.map(|host| arch(&host.arch)).collect();
    if config.loadbalance.is_set() {
        arches.insert(arch(&config.loadbalance.arch));
    }
    arches
}

fn arch(arch: &str) -> &str {
    if arch.is_empty() { DEFAULT_ARCH } else { arch }
}

fn check_source(source: &PackageSource, arches: &BTreeSet<&str>, problems: &mut Problems) {
    // Only Eggo's documentation states this; its code unpacks every
    // archive with tar's gzip option, so another format fails the deploy.
    if !source.kind.is_empty() && source.kind != ARCHIVE_TYPE {
        problems.add(
            "install.package-source.type",
            format!(
                "{:?}: Eggo only unpacks {ARCHIVE_TYPE} archives",
                source.kind
            ),
        );
    }
    if !source.dstpath.is_empty() && !is_absolute(&source.dstpath) {
        problems.add(
            "install.package-source.dstpath",
            format!("{:?} is not an absolute path", source.dstpath),
        );
    }
    for (arch, path) in &source.srcpath {
        if !is_absolute(path) {
            problems.add(
                format!("install.package-source.srcpath.{arch}"),
                format!("{path:?} is not an absolute path"),
            );
        }
    }
    if source.srcpath.is_empty() {
        return;
    }
    for arch in arches
        .iter()
        .filter(|arch| !source.srcpath.contains_key(**arch))
    {
        problems.add(
            "install.package-source.srcpath",
            format!("no archive for arch {arch}, which machines of the cluster have"),
        );
    }
}

fn check_package(at: &str, package: &Package, problems: &mut Problems) {
    if package.name.is_empty() {
        problems.add(format!("{at}.name"), "no name");
    }
    check_dst(at, package, problems);
    if !package.timeout.is_empty() {
        problems.test(&format!("{at}.timeout"), go_duration(&package.timeout));
    }
}

/// An absolute destination, inside the allow-list. That a copied package
/// needs one at all is Eggo's documentation's rule: without it Eggo's copy
/// and its cleanup both fail.
fn check_dst(at: &str, package: &Package, problems: &mut Problems) {
    let field = format!("{at}.dst");
    if package.dst.is_empty() {
        if package.kind.is_copied() {
            problems.add(
                field,
                "a bin, file or dir package needs dst, the directory it is copied into",
            );
        }
        return;
    }
    if !is_absolute(&package.dst) {
        problems.add(field, format!("{:?} is not an absolute path", package.dst));
        return;
    }
    if !package.kind.is_copied() {
        return;
    }
    if let Some(name) = package
        .names()
        .find(|name| !dst_allowed(&package.dst, name))
    {
        problems.add(
            field,
            format!(
                "{}/{name} is outside the directories Eggo installs into and cleans up: \
                 {} or their subdirectories, or below {}",
                package.dst,
                DST_DIRS.join(", "),
                DST_SUBDIRS.join(", ")
            ),
        );
    }
}
