//! The `install` block: where the offline package archive comes from and
//! what each role of machine gets installed, copied, applied or run.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::serde_shapes::{empty_as_none, is_default, nullable};

/// How long a `shell` package may run when it names no timeout (Eggo kills
/// it after that).
pub const DEFAULT_SHELL_TIMEOUT: &str = "30s";

/// What to install on which machines.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Install {
    /// The archive of packages copied to each machine (offline installs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_source: Option<PackageSource>,
    /// For etcd machines.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub etcd: Vec<Package>,
    /// For masters.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub kubernetes_master: Vec<Package>,
    /// For workers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub kubernetes_worker: Vec<Package>,
    /// The container engine, on workers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub container: Vec<Package>,
    /// The network plugin's binaries, on workers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<Package>,
    /// For the load balancer.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub loadbalance: Vec<Package>,
    /// Container image archives loaded on workers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub image: Vec<Package>,
    /// CoreDNS, on masters, when it runs as a binary rather than a pod.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<Package>,
    /// Anything else, by role: extra files, manifests and hook scripts.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub addition: RolePackages,
}

impl Install {
    /// Every package list with its key under `install` (`etcd`,
    /// `addition.master`, …), in the file's order.
    pub fn lists(&self) -> [(&'static str, &[Package]); 12] {
        [
            ("etcd", &self.etcd),
            ("kubernetes-master", &self.kubernetes_master),
            ("kubernetes-worker", &self.kubernetes_worker),
            ("container", &self.container),
            ("network", &self.network),
            ("loadbalance", &self.loadbalance),
            ("image", &self.image),
            ("dns", &self.dns),
            ("addition.master", &self.addition.master),
            ("addition.worker", &self.addition.worker),
            ("addition.etcd", &self.addition.etcd),
            ("addition.loadbalance", &self.addition.loadbalance),
        ]
    }
}

/// The archive of packages, per architecture.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PackageSource {
    /// The archive format; Eggo only knows `tar.gz`.
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Where it is unpacked on each machine (absolute; Eggo picks its own
    /// directory when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub dstpath: String,
    /// The archive on the deploying machine, by architecture (`amd64`,
    /// `arm64`, …), each an absolute path.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub srcpath: BTreeMap<String, String>,
}

/// Additional packages by the role of the machines that get them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RolePackages {
    /// For masters.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub master: Vec<Package>,
    /// For workers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub worker: Vec<Package>,
    /// For etcd machines.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub etcd: Vec<Package>,
    /// For the load balancer.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub loadbalance: Vec<Package>,
}

/// One entry of a package list. `name` may list several, comma-separated,
/// sharing the other fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Package {
    /// The package, file, directory, image archive, manifest or script
    /// (packages by name only: Eggo matches `name*`).
    #[serde(default)]
    pub name: String,
    /// What it is and so how it is installed.
    #[serde(rename = "type")]
    pub kind: PackageType,
    /// The directory it is copied into, for `bin`, `file` and `dir`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dst: String,
    /// When a `shell` package runs.
    #[serde(
        default,
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub schedule: Option<Schedule>,
    /// How long a `shell` package may run, as a Go duration. Eggo's reader
    /// takes `timeout`; its documentation writes `TimeOut`, also read here.
    #[serde(
        default,
        rename = "timeout",
        alias = "TimeOut",
        skip_serializing_if = "String::is_empty"
    )]
    pub timeout: String,
}

impl Package {
    /// One package of `kind` named `name`, nothing else set.
    pub fn new(name: &str, kind: PackageType) -> Self {
        Package {
            name: name.to_owned(),
            kind,
            dst: String::new(),
            schedule: None,
            timeout: String::new(),
        }
    }

    /// The names this entry stands for (Eggo splits `name` on commas).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.name.split(',')
    }

    /// The run time limit of a `shell` package, with Eggo's default.
    pub fn timeout_or_default(&self) -> &str {
        if self.timeout.is_empty() {
            DEFAULT_SHELL_TIMEOUT
        } else {
            &self.timeout
        }
    }
}

/// How a package is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PackageType {
    /// From the machine's configured repositories (yum/apt).
    Repo,
    /// An rpm/deb from the archive.
    Pkg,
    /// Executables copied into `dst`.
    Bin,
    /// A file copied into `dst`.
    File,
    /// A directory copied into `dst`.
    Dir,
    /// A container image archive loaded into the runtime.
    Image,
    /// A manifest applied with kubectl (a file of the archive or a URL).
    Yaml,
    /// A script run at `schedule`.
    Shell,
}

impl PackageType {
    /// Whether it is copied into a directory, so `dst` matters.
    pub fn is_copied(self) -> bool {
        matches!(
            self,
            PackageType::Bin | PackageType::File | PackageType::Dir
        )
    }
}

/// When a `shell` package runs on its machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// Before the machine joins the cluster.
    Prejoin,
    /// After it joined.
    Postjoin,
    /// Before it is cleaned up.
    Precleanup,
    /// After it was cleaned up.
    Postcleanup,
}

impl Schedule {
    const ALL: [(Schedule, &'static str); 4] = [
        (Schedule::Prejoin, "prejoin"),
        (Schedule::Postjoin, "postjoin"),
        (Schedule::Precleanup, "precleanup"),
        (Schedule::Postcleanup, "postcleanup"),
    ];
}

impl FromStr for Schedule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Schedule::ALL
            .iter()
            .find(|(_, name)| *name == text)
            .map(|(schedule, _)| *schedule)
            .ok_or_else(|| {
                format!("unknown schedule {text:?}: Eggo knows prejoin, postjoin, precleanup and postcleanup")
            })
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Schedule::ALL
            .iter()
            .find(|(schedule, _)| schedule == self)
            .map_or("", |(_, name)| name);
        f.write_str(name)
    }
}
