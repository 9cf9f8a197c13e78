//! Eggo's cleanup of one machine, rendered from the deploy's own plan for
//! it: the services it starts are stopped, the files it puts and the
//! directories it fills are removed, and nothing else is. Every step
//! tolerates what is already gone, so a cleanup stopped half way (or run
//! on a machine the deploy never reached) finishes when run again.

use std::collections::BTreeSet;
use std::path::Path;

use wasmco_core::eggo::{PackageType, dst_allowed};

use super::control_plane::control_plane;
use super::etcd::etcd;
use super::infrastructure::infrastructure;
use super::packages::{PREVIOUS, package_dir, packages_for};
use super::step::{CONFIG_DIR, Plan, STAMPS, Step, quote, run};
use super::worker::{worker_prepare, worker_start};
use crate::topology::Machine;

/// Services that run pods or route to them: stopped first, so nothing
/// starts a container again while the containers are being killed.
const POD_SERVICES: [&str; 2] = ["kubelet", "kube-proxy"];
/// Where the deploy keeps data beside its files: etcd's members, the
/// kubelet's pods, the pod network's leases.
const DATA_DIRS: [&str; 3] = ["/var/lib/etcd", "/var/lib/kubelet", "/var/lib/cni"];
/// What the services write beside the deploy's files: the kubelet's
/// kubeconfig once its certificate is signed, the record of what each
/// service was last restarted with.
const WRITTEN_BY_SERVICES: [&str; 2] = ["/etc/kubernetes/kubelet.kubeconfig", STAMPS];
/// What is unpacked from the package archive, in its directory.
const ARCHIVE_FOLDERS: [&str; 6] = ["bin", "file", "dir", "image", "pkg", ".wasmco-unpacked"];

/// The steps that take back what a deploy put on `machine`.
pub fn teardown(plan: &Plan<'_>, machine: &Machine) -> Vec<Step> {
    let deployed = deployed_steps(plan, machine);
    let mut services: Vec<&str> = Vec::new();
    let mut files: BTreeSet<String> = BTreeSet::new();
    for step in &deployed {
        match step {
            Step::Start { service, .. } if !services.contains(&service.as_str()) => {
                services.push(service)
            }
            Step::Put(file) => {
                files.insert(file.path.clone());
            }
            Step::Upload { path, .. } => {
                files.insert(path.clone());
            }
            _ => {}
        }
    }
    // Stopped in the reverse of the order they were started in.
    services.reverse();
    let (pods, others): (Vec<&str>, Vec<&str>) = services
        .into_iter()
        .partition(|service| POD_SERVICES.contains(service));
    let mut steps = Vec::new();
    if !pods.is_empty() {
        steps.push(stop("stop the kubelet and kube-proxy", &pods));
        steps.push(run(
            "kill the pods' containers",
            "command -v ctr >/dev/null && systemctl is-active -q containerd || exit 0; \
             for task in $(ctr -n k8s.io tasks ls -q); do ctr -n k8s.io tasks kill -s SIGKILL $task; done; \
             for container in $(ctr -n k8s.io containers ls -q); do \
             ctr -n k8s.io tasks rm -f $container >/dev/null 2>&1; \
             ctr -n k8s.io containers rm $container >/dev/null 2>&1 || true; done",
        ));
        steps.push(run(
            "remove kube-proxy's rules",
            "if [ -x /usr/bin/kube-proxy ]; then /usr/bin/kube-proxy --cleanup >/dev/null 2>&1; fi; \
             ip link delete cni0 2>/dev/null; true",
        ));
        steps.push(run(
            "unmount the pods' volumes",
            "awk '$2 ~ \"^/var/lib/kubelet/\" {print $2}' /proc/mounts | sort -r | \
             xargs -r -n1 umount -l",
        ));
    }
    if !others.is_empty() {
        steps.push(stop("stop the cluster's services", &others));
    }
    files.extend(copies(plan, machine));
    let mut paths: Vec<String> = files.into_iter().collect();
    paths.extend(WRITTEN_BY_SERVICES.iter().map(|path| (*path).to_owned()));
    // A data directory may be a mount of its own (etcd on a disk of its
    // own): then only what is in it goes.
    let data: Vec<String> = DATA_DIRS.iter().map(|dir| quote(dir)).collect();
    steps.push(run(
        "remove the cluster's data",
        format!(
            "for dir in {}; do if mountpoint -q $dir; then find $dir -mindepth 1 -delete; \
             else rm -rf -- $dir; fi; done",
            data.join(" ")
        ),
    ));
    let emptied = config_dirs(&paths);
    steps.push(remove(
        "remove what the deploy put here",
        paths.iter().map(String::as_str),
        emptied.iter().map(String::as_str),
    ));
    steps.push(run("reload systemd", "systemctl daemon-reload"));
    steps
}

/// A cleanup's last phase on `machine`: the `postcleanup` hooks, then the
/// package archive they run from removed.
pub fn postcleanup(plan: &Plan<'_>, machine: &Machine) -> Vec<Step> {
    let mut steps = super::packages::hooks(plan, machine, wasmco_core::eggo::Schedule::Postcleanup);
    steps.push(remove_packages(plan, machine));
    steps
}

/// Removes the package archive `machine` was sent (whole, or cut to its
/// roles) and what was unpacked from it: last, after the `postcleanup`
/// hooks, which run from it.
fn remove_packages(plan: &Plan<'_>, machine: &Machine) -> Step {
    let dir = package_dir(plan);
    let mut unpacked: Vec<String> = ARCHIVE_FOLDERS
        .iter()
        .map(|folder| format!("{dir}/{folder}"))
        .collect();
    let archive = plan
        .config
        .install
        .package_source
        .as_ref()
        .and_then(|source| source.srcpath.get(&machine.arch))
        .and_then(|path| Path::new(path).file_name())
        .map(|name| name.to_string_lossy().into_owned());
    if let Some(name) = archive {
        unpacked.push(format!("{dir}/{}.tar", crate::trim::stem(&name)));
        unpacked.push(format!("{dir}/{name}"));
    }
    remove(
        "remove the package archive",
        unpacked.iter().map(String::as_str),
        [dir.as_str()],
    )
}

/// Removes `paths`, then each of `dirs` that is left empty.
fn remove<'p>(
    step: &str,
    paths: impl Iterator<Item = &'p str>,
    dirs: impl IntoIterator<Item = &'p str>,
) -> Step {
    let quoted =
        |words: &mut dyn Iterator<Item = &'p str>| words.map(quote).collect::<Vec<_>>().join(" ");
    run(
        step,
        format!(
            "rm -rf -- {} && {{ rmdir {} 2>/dev/null; true; }}",
            quoted(&mut { paths }),
            quoted(&mut dirs.into_iter()),
        ),
    )
}

/// The directories under (and with) `/etc/kubernetes` that `paths` are
/// in, deepest first: removed once nothing else is in them. Other
/// directories (`/usr/bin`) are never the deploy's.
fn config_dirs(paths: &[String]) -> Vec<String> {
    let mut dirs: BTreeSet<&str> = BTreeSet::from([CONFIG_DIR]);
    for path in paths {
        let mut at = path.as_str();
        while let Some((dir, _)) = at.rsplit_once('/') {
            if !dir.starts_with(&format!("{CONFIG_DIR}/")) {
                break;
            }
            dirs.insert(dir);
            at = dir;
        }
    }
    let mut dirs: Vec<String> = dirs.into_iter().map(str::to_owned).collect();
    dirs.sort_by_key(|dir| std::cmp::Reverse(dir.matches('/').count()));
    dirs
}

/// Every step a deploy runs on `machine`, in order (the archive aside).
fn deployed_steps(plan: &Plan<'_>, machine: &Machine) -> Vec<Step> {
    let roles = &machine.roles;
    let mut steps = infrastructure(plan, machine, None);
    if roles.etcd {
        steps.extend(etcd(plan, machine));
    }
    if roles.master {
        steps.extend(control_plane(plan, machine));
    }
    steps.extend(worker_prepare(plan, machine));
    steps.extend(worker_start(plan, machine));
    steps
}

/// Where the machine's `bin`, `file` and `dir` packages were copied: each
/// inside Eggo's `dst` allow-list, which the file was checked against.
fn copies(plan: &Plan<'_>, machine: &Machine) -> Vec<String> {
    packages_for(plan, &machine.roles)
        .into_iter()
        .filter(|package| {
            matches!(
                package.kind,
                PackageType::Bin | PackageType::File | PackageType::Dir
            )
        })
        .flat_map(|package| package.names().map(move |name| (package, name)))
        .filter(|(package, name)| dst_allowed(&package.dst, name))
        .flat_map(|(package, name)| {
            let path = format!("{}/{name}", package.dst.trim_end_matches('/'));
            // An upgrade keeps the binary it replaced beside the new one.
            let previous = (package.kind == PackageType::Bin).then(|| format!("{path}{PREVIOUS}"));
            std::iter::once(path).chain(previous)
        })
        .collect()
}

/// Stops and disables `services`; one that is not there is already
/// stopped.
fn stop(step: &str, services: &[&str]) -> Step {
    let names = services.join(" ");
    run(
        step,
        format!(
            "for service in {names}; do systemctl disable --now -q $service 2>/dev/null; \
             ! systemctl is-active -q $service || exit 1; done"
        ),
    )
}
