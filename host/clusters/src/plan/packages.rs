//! Eggo's packages: the archive unpacked on each machine, then per role the
//! `repo`/`pkg` packages through the machine's package manager, `bin`,
//! `file` and `dir` copied to their `dst`, `image`s loaded into the
//! runtime, `yaml`s applied, `shell`s run at their schedule.

use std::collections::BTreeSet;
use std::time::Duration;

use wasmco_core::eggo::{Package, PackageType, Schedule, parse_go_duration};
use wasmco_nodes::Command;

use super::step::{Plan, Step, quote, run};
use crate::topology::{Machine, Roles};

/// Where Eggo unpacks the archive when `dstpath` is empty.
pub const PACKAGE_DIR: &str = "/root/.eggo/package";

/// The packages of `roles`, as Eggo's install lists give them to each role.
pub fn packages_for<'a>(plan: &Plan<'a>, roles: &Roles) -> Vec<&'a Package> {
    let install = &plan.config.install;
    let mut packages: Vec<&Package> = Vec::new();
    if roles.etcd {
        packages.extend(install.etcd.iter().chain(&install.addition.etcd));
    }
    if roles.master {
        packages.extend(
            install
                .kubernetes_master
                .iter()
                .chain(&install.addition.master),
        );
    }
    if roles.worker {
        packages.extend(
            install
                .kubernetes_worker
                .iter()
                .chain(&install.container)
                .chain(&install.network)
                .chain(&install.image)
                .chain(&install.addition.worker),
        );
    }
    packages
}

/// The archive's members the packages of other roles name and none of
/// `roles`' own: what a machine with those roles does without (a worker,
/// the control plane's binaries). `pkg` globs and anything no package
/// names are never left out.
pub fn left_out(plan: &Plan<'_>, roles: &Roles) -> BTreeSet<String> {
    let every = Roles {
        etcd: true,
        master: true,
        worker: true,
    };
    let members = |roles: &Roles| -> BTreeSet<String> {
        packages_for(plan, roles)
            .into_iter()
            .flat_map(|package| package.names().map(move |name| (package.kind, name)))
            .filter_map(|(kind, name)| {
                let folder = match kind {
                    PackageType::Bin => "bin",
                    PackageType::File | PackageType::Yaml | PackageType::Shell => "file",
                    PackageType::Dir => "dir",
                    PackageType::Image => "image",
                    PackageType::Repo | PackageType::Pkg => return None,
                };
                Some(format!("{folder}/{name}"))
            })
            .collect()
    };
    let own = members(roles);
    members(&every).difference(&own).cloned().collect()
}

/// The directory the archive is unpacked in on every machine.
pub fn package_dir(plan: &Plan<'_>) -> String {
    plan.config
        .install
        .package_source
        .as_ref()
        .map(|source| source.dstpath.trim_end_matches('/'))
        .filter(|dir| !dir.is_empty())
        .unwrap_or(PACKAGE_DIR)
        .to_owned()
}

/// What a binary an upgrade replaced is kept as, beside the new one.
pub const PREVIOUS: &str = ".wasmco-previous";

/// Installs `machine`'s `repo`, `pkg`, `bin`, `file` and `dir` packages,
/// in Eggo's order. A copy replaces a file only when it differs, and
/// through a rename, so a running binary is never written over.
pub fn installs(plan: &Plan<'_>, machine: &Machine) -> Vec<Step> {
    let dir = package_dir(plan);
    let packages = packages_for(plan, &machine.roles);
    let of = |kind: PackageType| {
        packages
            .iter()
            .filter(move |package| package.kind == kind)
            .flat_map(|package| package.names().map(move |name| (name, *package)))
    };
    let mut steps = Vec::new();
    let repo: Vec<&str> = of(PackageType::Repo).map(|(name, _)| name).collect();
    if !repo.is_empty() {
        let names = quoted(&repo);
        steps.push(run(
            "install repo packages",
            format!(
                "if command -v apt-get >/dev/null; then DEBIAN_FRONTEND=noninteractive apt-get install -y {names}; \
                 elif command -v yum >/dev/null; then yum install -y {names}; \
                 else echo no apt-get or yum on this machine for: {names} >&2; exit 1; fi"
            ),
        ));
    }
    let pkg: Vec<String> = of(PackageType::Pkg)
        .map(|(name, _)| format!("{}*", quote(name)))
        .collect();
    if !pkg.is_empty() {
        let names = pkg.join(" ");
        steps.push(run(
            "install pkg packages",
            format!(
                "cd {}/pkg && if command -v dpkg >/dev/null; then dpkg --force-all -i {names}; \
                 else rpm -ivh --force --nodeps {names}; fi",
                quote(&dir)
            ),
        ));
    }
    for kind in [PackageType::Bin, PackageType::File, PackageType::Dir] {
        let from = match kind {
            PackageType::Bin => "bin",
            PackageType::File => "file",
            _ => "dir",
        };
        for (name, package) in of(kind) {
            let source = quote(&format!("{dir}/{from}/{name}"));
            let target = quote(&format!("{}/{name}", package.dst.trim_end_matches('/')));
            let script = if kind == PackageType::Dir {
                format!(
                    "mkdir -p {dst} && cp -r {source} {dst}/",
                    dst = quote(&package.dst)
                )
            } else if kind == PackageType::Bin {
                // The binary replaced is kept beside the new one, for a
                // rollback.
                format!(
                    "cmp -s {source} {target} || {{ mkdir -p {dst} && \
                     {{ [ ! -e {target} ] || cp -pf {target} {target}{PREVIOUS}; }} && \
                     cp -f {source} {target}.wasmco-partial && mv -f {target}.wasmco-partial {target}; }}",
                    dst = quote(&package.dst)
                )
            } else {
                format!(
                    "cmp -s {source} {target} || {{ mkdir -p {dst} && cp -f {source} {target}.wasmco-partial \
                     && mv -f {target}.wasmco-partial {target}; }}",
                    dst = quote(&package.dst)
                )
            };
            steps.push(run(format!("install {name} into {}", package.dst), script));
        }
    }
    steps
}

/// Loads `machine`'s `image` packages into containerd's Kubernetes
/// namespace (Eggo: `ctr cri load`, which newer containerd no longer has).
pub fn images(plan: &Plan<'_>, machine: &Machine) -> Vec<Step> {
    let dir = package_dir(plan);
    packages_for(plan, &machine.roles)
        .into_iter()
        .filter(|package| package.kind == PackageType::Image)
        .flat_map(|package| package.names())
        .map(|name| {
            run(
                format!("load image {name}"),
                format!(
                    "ctr -n k8s.io images import {}",
                    quote(&format!("{dir}/image/{name}"))
                ),
            )
        })
        .collect()
}

/// The masters' `yaml` packages named by URL, fetched and applied by the
/// first master with its admin kubeconfig, as Eggo applies them; those in
/// the archive go through rsync (see [`crate::addons`]).
pub fn url_addons(plan: &Plan<'_>) -> Vec<Step> {
    let master = Roles {
        master: true,
        ..Roles::default()
    };
    packages_for(plan, &master)
        .into_iter()
        .filter(|package| package.kind == PackageType::Yaml)
        .flat_map(|package| package.names())
        .filter(|name| is_url(name))
        .map(|url| {
            run(
                format!("apply {url}"),
                format!(
                    "KUBECONFIG=/etc/kubernetes/admin.conf kubectl apply -f {}",
                    quote(url)
                ),
            )
        })
        .collect()
}

/// Whether a package's name is a URL rather than a file in the archive.
pub fn is_url(name: &str) -> bool {
    name.starts_with("http://") || name.starts_with("https://")
}

/// `machine`'s `shell` packages of `schedule`, each killed when its
/// timeout passes (Eggo: `timeout -s SIGKILL`), the step then failed with
/// the script named.
pub fn hooks(plan: &Plan<'_>, machine: &Machine, schedule: Schedule) -> Vec<Step> {
    let dir = package_dir(plan);
    packages_for(plan, &machine.roles)
        .into_iter()
        .filter(|package| package.kind == PackageType::Shell && package.schedule == Some(schedule))
        .flat_map(|package| package.names().map(move |name| (name, package)))
        .map(|(name, package)| {
            let timeout =
                parse_go_duration(package.timeout_or_default()).unwrap_or(Duration::from_secs(30));
            let script = quote(&format!("{dir}/file/{name}"));
            // A cleanup run again after its last phase removed the archive
            // finds its hooks gone with it: they ran.
            let gone = if matches!(schedule, Schedule::Precleanup | Schedule::Postcleanup) {
                format!("[ -e {script} ] || exit 0; ")
            } else {
                String::new()
            };
            Step::Run(Command::new(
                format!("{schedule} hook {name}"),
                format!("{gone}chmod +x {script} && {script}"),
                timeout,
            ))
        })
        .collect()
}

fn quoted(words: &[&str]) -> String {
    words
        .iter()
        .map(|word| quote(word))
        .collect::<Vec<_>>()
        .join(" ")
}
