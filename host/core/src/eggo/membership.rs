//! A deployed cluster's machines changing: Eggo's join file (`eggo join
//! --file`) laid into the deploy file, and nodes taken out of it (`eggo
//! delete`). The deploy file stays the one record of what the cluster is
//! made of, so a later deploy converges to the same machines.

use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::hosts::HostConfig;
use super::model::DeployConfig;
use crate::FieldError;

/// Eggo's join file: the machines to add, by role. A machine in both
/// lists joins as a master that also runs pods (`--type master,worker`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct JoinFile {
    /// Machines that join the control plane (and etcd, when etcd runs on
    /// the masters).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub masters: Vec<HostConfig>,
    /// Machines that join to run pods.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<HostConfig>,
}

impl JoinFile {
    /// Every machine named, once, in order.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for host in self.masters.iter().chain(&self.workers) {
            if !names.contains(&host.name) {
                names.push(host.name.clone());
            }
        }
        names
    }
}

impl DeployConfig {
    /// The file with `join`'s machines added to its lists. A machine already
    /// listed the same way is left as it is (a join tried again); one whose
    /// name or address is taken by another, or that would change role, is
    /// refused with the join file's field.
    pub fn joined(&self, join: &JoinFile) -> Result<DeployConfig, FieldError> {
        if join.masters.is_empty() && join.workers.is_empty() {
            return Err(FieldError::new(
                "masters",
                "names no machine to join (give masters or workers)",
            ));
        }
        let mut config = self.clone();
        let lists = [("masters", &join.masters), ("workers", &join.workers)];
        for (list, hosts) in lists {
            for (index, host) in hosts.iter().enumerate() {
                let at = |field: &str| format!("{list}[{index}].{field}");
                if host.name.is_empty() {
                    return Err(FieldError::new(at("name"), "is empty"));
                }
                if host.ip.parse::<IpAddr>().is_err() {
                    return Err(FieldError::new(
                        at("ip"),
                        format!("{:?} is not an IP address", host.ip),
                    ));
                }
                let target = if list == "masters" {
                    &mut config.masters
                } else {
                    &mut config.workers
                };
                if target.iter().any(|known| same_machine(known, host)) {
                    continue;
                }
                if let Some(reason) = self.taken(host, list == "masters", join) {
                    return Err(FieldError::new(at("name"), reason));
                }
                target.push(host.clone());
                // A file that lists its etcd members has the new master
                // join them too, as Eggo's join does.
                let etcd_listed = config.etcds.iter().any(|known| known.name == host.name);
                if list == "masters" && !config.etcds.is_empty() && !etcd_listed {
                    config.etcds.push(host.clone());
                }
            }
        }
        Ok(config)
    }

    /// Why `host` may not join as a master (or worker), if it may not: its
    /// name or address belongs to a machine of the cluster that is not
    /// the same machine joining with another role in the same join file.
    fn taken(&self, host: &HostConfig, as_master: bool, join: &JoinFile) -> Option<String> {
        let listed = self.masters.iter().chain(&self.workers).chain(&self.etcds);
        for known in listed {
            if known.name == host.name && known.ip != host.ip {
                return Some(format!(
                    "{} is already in the cluster with the address {}",
                    host.name, known.ip
                ));
            }
            if known.ip == host.ip && known.name != host.name {
                return Some(format!(
                    "{} is already in the cluster as {}",
                    host.ip, known.name
                ));
            }
            if known.name == host.name {
                let role = if as_master { "master" } else { "worker" };
                return Some(format!(
                    "{} is already in the cluster and cannot become a {role} by joining; \
                     delete it first, then join it with every role it should have",
                    host.name
                ));
            }
        }
        // The same machine joining twice in one list would be listed twice.
        let lists = if as_master {
            &join.masters
        } else {
            &join.workers
        };
        let twice = lists.iter().filter(|other| other.name == host.name).count() > 1;
        twice.then(|| format!("{} is named twice in the join file", host.name))
    }

    /// The file with the machines called `names` taken out of every list.
    pub fn without(&self, names: &[String]) -> DeployConfig {
        let mut config = self.clone();
        for list in [&mut config.masters, &mut config.workers, &mut config.etcds] {
            list.retain(|host| !names.contains(&host.name));
        }
        config
    }

    /// Whether a machine called `name` is in any of the file's lists.
    pub fn has_machine(&self, name: &str) -> bool {
        self.masters
            .iter()
            .chain(&self.workers)
            .chain(&self.etcds)
            .any(|host| host.name == name)
    }

    /// The name of the machine every other joins through (Eggo's first
    /// master), which may not be deleted.
    pub fn first_master(&self) -> Option<&str> {
        self.masters.first().map(|host| host.name.as_str())
    }
}

/// Whether two entries are the same machine, the defaults Eggo fills in
/// counted as given.
fn same_machine(a: &HostConfig, b: &HostConfig) -> bool {
    let filled = |host: &HostConfig| {
        let mut host = host.clone();
        super::defaults::fill_host(&mut host);
        host
    };
    filled(a) == filled(b)
}
