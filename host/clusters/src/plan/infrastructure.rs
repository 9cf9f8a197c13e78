//! What every machine gets before any cluster part: its name in
//! `/etc/hosts`, packet forwarding, the package archive unpacked, its
//! packages installed, the firewall opened for its roles.

use std::path::Path;

use wasmco_core::eggo::Protocol;
use wasmco_nodes::{LocalFile, NodeError};

use super::packages::{installs, package_dir};
use super::step::{Plan, Step, UNIT_DIR, put, quote, run};
use crate::topology::Machine;
use crate::units::Unit;

/// Kubernetes' own ports by role (Eggo's defaults).
const MASTER_PORTS: [u16; 3] = [6443, 10257, 10259];
const WORKER_PORTS: [u16; 2] = [10250, 10256];
const ETCD_PORTS: [u16; 3] = [2379, 2380, 2381];

/// The package archive on wasmco's machine, for one architecture.
#[derive(Debug, Clone)]
pub struct Archive {
    /// The file here, with its digest.
    pub local: LocalFile,
    /// Its file name on the machines.
    pub name: String,
}

impl Archive {
    /// The archive at `path` (read once for its digest).
    pub fn read(path: &Path) -> Result<Archive, NodeError> {
        let local = LocalFile::read(path)?;
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "packages.tar.gz".to_owned());
        Ok(Archive { local, name })
    }
}

/// The infrastructure steps for `machine`; `archive` is what it is sent of
/// the package source for its architecture (cut to its roles, or whole),
/// if the file has one.
pub fn infrastructure(plan: &Plan<'_>, machine: &Machine, archive: Option<&Archive>) -> Vec<Step> {
    let entry = format!("{} {}", machine.ip, machine.name);
    let mut steps = vec![run(
        "name the machine in /etc/hosts",
        format!(
            "grep -qxF {entry} /etc/hosts || echo {entry} >> /etc/hosts",
            entry = quote(&entry)
        ),
    )];
    // Eggo writes these to /etc/sysctl.d with vm.swappiness; only the
    // network ones are set here (they belong to the machine's network, not
    // its kernel as a whole), through a unit so they hold after a reboot.
    let kernel = "sysctl -qw net.ipv4.ip_forward=1 && \
                  { [ -e /proc/sys/net/bridge ] || modprobe br_netfilter 2>/dev/null || true; } && \
                  for table in iptables ip6tables; do \
                  file=/proc/sys/net/bridge/bridge-nf-call-$table; \
                  if [ -e $file ]; then echo 1 > $file; fi; done";
    steps.push(put(
        format!("{UNIT_DIR}/wasmco-kernel.service"),
        Unit::oneshot("Packet forwarding for Kubernetes", kernel),
        0o644,
    ));
    steps.push(Step::start("wasmco-kernel", None));
    if let Some(archive) = archive {
        let dir = package_dir(plan);
        let name = quote(&archive.name);
        steps.push(Step::Upload {
            local: archive.local.clone(),
            path: format!("{dir}/{}", archive.name),
        });
        // Unpacked again only when the archive changed: the marker holds
        // the digest of the archive last unpacked.
        let digest = &archive.local.digest;
        steps.push(run(
            "unpack the package archive",
            format!(
                "cd {dir} || exit 1; [ \"$(cat .wasmco-unpacked 2>/dev/null)\" = {digest} ] && exit 0; \
                 tar --no-same-owner -xf {name} && echo {digest} > .wasmco-unpacked.partial && \
                 mv -f .wasmco-unpacked.partial .wasmco-unpacked",
                dir = quote(&dir)
            ),
        ));
    }
    steps.extend(installs(plan, machine));
    let ports = open_ports(plan, machine);
    if !ports.is_empty() {
        let adds: Vec<String> = ports
            .iter()
            .map(|port| format!("--add-port={port}"))
            .collect();
        steps.push(run(
            "open the firewall",
            format!(
                "if systemctl is-active -q firewalld; then firewall-cmd --zone=public {} && \
                 firewall-cmd --runtime-to-permanent; fi",
                adds.join(" ")
            ),
        ));
    }
    steps
}

/// `port/protocol` for the machine's roles, Kubernetes' and the file's.
fn open_ports(plan: &Plan<'_>, machine: &Machine) -> Vec<String> {
    let roles = &machine.roles;
    let extra = &plan.config.open_ports;
    let mut ports: Vec<String> = Vec::new();
    let mut add = |defaults: &[u16], more: &[wasmco_core::eggo::OpenPort]| {
        ports.extend(defaults.iter().map(|port| format!("{port}/tcp")));
        ports.extend(more.iter().map(|open| {
            let protocol = match open.protocol {
                Protocol::Tcp => "tcp",
                Protocol::Udp => "udp",
            };
            format!("{}/{protocol}", open.port)
        }));
    };
    if roles.master {
        add(&MASTER_PORTS, &extra.master);
    }
    if roles.worker {
        add(&WORKER_PORTS, &extra.worker);
    }
    if roles.etcd {
        add(&ETCD_PORTS, &extra.etcd);
    }
    ports.sort();
    ports.dedup();
    ports
}
