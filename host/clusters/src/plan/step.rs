//! A step and the helpers every phase renders its steps with.

use std::collections::BTreeMap;
use std::time::Duration;

use wasmco_core::eggo::DeployConfig;
use wasmco_nodes::{Command, FileCopy};

use crate::material::ClusterMaterial;
use crate::topology::{Machine, Topology};

/// Kubernetes' configuration directory on a node.
pub const CONFIG_DIR: &str = "/etc/kubernetes";
/// Its certificates.
pub const PKI_DIR: &str = "/etc/kubernetes/pki";
/// Where a machine keeps what each service was last restarted with.
pub const STAMPS: &str = "/etc/kubernetes/.wasmco";
/// Where units go (Eggo's choice; inside its allow-list).
pub const UNIT_DIR: &str = "/usr/lib/systemd/system";

/// How long one ordinary step may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// One thing done on a machine.
#[derive(Debug, Clone)]
pub enum Step {
    /// A file written (unless it is there already).
    Put(FileCopy),
    /// A file of wasmco's machine copied to `path` (unless it is there
    /// already), streamed: the package archive.
    Upload {
        /// The file here.
        local: wasmco_nodes::LocalFile,
        /// Where it goes on the machine.
        path: String,
    },
    /// A command run (it must succeed).
    Run(Command),
    /// A service enabled and running. It is restarted when what it was
    /// last restarted with changed: the files put before it in the same
    /// list, or its program; else started, which leaves a running one be.
    Start {
        /// The unit's name, without `.service`.
        service: String,
        /// Its program, whose digest counts as one of its inputs.
        program: Option<String>,
    },
}

impl Step {
    /// The step that makes `service` run `program`.
    pub fn start(service: &str, program: Option<&str>) -> Step {
        Step::Start {
            service: service.to_owned(),
            program: program.map(str::to_owned),
        }
    }

    /// The step's name, for progress.
    pub fn name(&self) -> &str {
        match self {
            Step::Put(file) => &file.path,
            Step::Upload { path, .. } => path,
            Step::Run(command) => &command.step,
            Step::Start { service, .. } => service,
        }
    }
}

/// What every phase renders from.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// The deploy file, defaults filled in.
    pub config: &'a DeployConfig,
    /// Its machines.
    pub topology: &'a Topology,
    /// The cluster's keys and tokens.
    pub material: &'a ClusterMaterial,
}

impl Plan<'_> {
    /// The file's extra flags for `component` (Eggo's `config-extra-args`).
    pub fn extra_args(&self, component: &str) -> Option<&BTreeMap<String, String>> {
        self.config
            .config_extra_args
            .iter()
            .find(|extra| extra.name == component)
            .map(|extra| &extra.extra_args)
    }

    /// The API servers' URL for clients.
    pub fn endpoint_url(&self) -> String {
        format!("https://{}", self.topology.endpoint)
    }

    /// The etcd members' client URLs.
    pub fn etcd_servers(&self) -> String {
        self.topology
            .with(|roles| roles.etcd)
            .map(|member| format!("https://{}", socket(member, 2379)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `ip:port`, bracketed for IPv6.
pub fn socket(machine: &Machine, port: u16) -> String {
    std::net::SocketAddr::new(machine.ip, port).to_string()
}

pub(super) fn put(path: impl Into<String>, contents: impl Into<Vec<u8>>, mode: u32) -> Step {
    Step::Put(FileCopy {
        path: path.into(),
        contents: contents.into(),
        mode,
    })
}

pub(super) fn run(step: impl Into<String>, script: impl Into<String>) -> Step {
    Step::Run(Command::new(step, script, STEP_TIMEOUT))
}

/// Each certificate the machine has, as [`keyed`] files.
pub(super) fn keyed_all(certificates: &[(&str, &Option<wasmco_pki::KeyedCert>)]) -> Vec<Step> {
    certificates
        .iter()
        .filter_map(|(name, cert)| cert.as_ref().map(|cert| keyed(name, cert)))
        .flatten()
        .collect()
}

/// A certificate and key under the PKI directory as `name.crt`/`name.key`.
pub(super) fn keyed(name: &str, cert: &wasmco_pki::KeyedCert) -> [Step; 2] {
    [
        put(
            format!("{PKI_DIR}/{name}.crt"),
            cert.certificate.clone(),
            0o644,
        ),
        put(format!("{PKI_DIR}/{name}.key"), cert.key.clone(), 0o600),
    ]
}

/// Installs (or refreshes) a unit and makes sure it runs.
pub(super) fn service(name: &str, unit: &crate::units::Unit) -> [Step; 2] {
    [
        put(format!("{UNIT_DIR}/{name}.service"), unit.render(), 0o644),
        Step::start(name, unit.program.split_whitespace().next()),
    ]
}

/// The kubeconfig `file` for `user` with `cert`, against `server`.
pub(super) fn kubeconfig_file(
    plan: &Plan<'_>,
    file: &str,
    user: &str,
    cert: &wasmco_pki::KeyedCert,
    server: &str,
) -> Step {
    put(
        format!("{CONFIG_DIR}/{file}"),
        wasmco_pki::kubeconfig(
            &plan.topology.cluster,
            server,
            &plan.material.pki.ca.certificate,
            user,
            cert,
        ),
        0o600,
    )
}

/// `word` as one shell word.
pub(super) fn quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|quoted| quoted.into_owned())
        .unwrap_or_default()
}
