//! Eggops' machines (`Machine`), what a request needs of them
//! (`masterRequire`, `workerRequire`), and the machines picked for a
//! request from those no other cluster holds, as Eggops' cluster
//! controller picks them.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FieldError;
use crate::eggo::hosts::HostConfig;

/// Eggops' `Machine` spec, with the object's labels (what requests select
/// machines by) beside it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    /// Its node name once in a cluster.
    #[serde(default)]
    pub hostname: String,
    /// `amd64` (the default) or `arm64`.
    #[serde(default)]
    pub arch: String,
    /// The address it is reached at over SSH.
    pub ip: String,
    /// The SSH port (22 when absent).
    #[serde(default)]
    pub port: Option<u16>,
    /// Its labels (`masterRole: allow`, `zone: a`, …).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// How many machines of a role a request needs, and the labels each must
/// carry (`masterRequire`, `workerRequire`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// How many.
    pub number: u32,
    /// Labels a machine must carry, each with this value.
    #[serde(default)]
    pub features: BTreeMap<String, String>,
}

/// The machines picked for a request, by role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Picked {
    /// The masters' machine names.
    pub masters: Vec<String>,
    /// The workers' machine names.
    pub workers: Vec<String>,
}

impl Picked {
    /// Whether nothing is picked.
    pub fn is_empty(&self) -> bool {
        self.masters.is_empty() && self.workers.is_empty()
    }

    /// Every machine picked, masters first.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        self.masters.iter().chain(&self.workers)
    }
}

impl MachineSpec {
    /// Whether it carries every one of `features`.
    pub fn matches(&self, features: &BTreeMap<String, String>) -> bool {
        features
            .iter()
            .all(|(key, value)| self.labels.get(key) == Some(value))
    }

    /// The machine as a deploy file lists it; `name` is its registration's
    /// name, the node's name when it has no hostname.
    pub fn host(&self, name: &str) -> HostConfig {
        HostConfig {
            name: if self.hostname.is_empty() {
                name.to_owned()
            } else {
                self.hostname.clone()
            },
            ip: self.ip.clone(),
            port: i64::from(self.port.unwrap_or(22)),
            arch: if self.arch.is_empty() {
                crate::eggo::defaults::DEFAULT_ARCH.to_owned()
            } else {
                self.arch.clone()
            },
        }
    }

    /// Problems with the spec, by field.
    pub fn check(&self) -> Result<(), FieldError> {
        if self.ip.parse::<std::net::IpAddr>().is_err() {
            return Err(FieldError::new(
                "spec.ip",
                format!("{:?} is not an IP address", self.ip),
            ));
        }
        if self.port == Some(0) {
            return Err(FieldError::new("spec.port", "must be 1 to 65535"));
        }
        if !self.hostname.is_empty() {
            crate::eggo::syntax::dns1123_subdomain(&self.hostname)
                .map_err(|reason| FieldError::new("spec.hostname", reason))?;
        }
        let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        if !self.arch.chars().all(plain) {
            return Err(FieldError::new(
                "spec.arch",
                "is not an architecture (amd64, arm64)",
            ));
        }
        Ok(())
    }
}

/// Picks `masters` and `workers` machines from `machines` (by their
/// registered names), none of them in `taken` (machine → the cluster that
/// holds it), each machine in one role. As Eggops does, machines that fit
/// only one of the roles go to it first, so that a machine fit for both is
/// not spent where another would do. Unsatisfiable, the reason names what
/// is missing and why each machine that matches is not free.
pub fn pick(
    machines: &BTreeMap<String, MachineSpec>,
    taken: &BTreeMap<String, String>,
    masters: &Requirement,
    workers: &Requirement,
) -> Result<Picked, String> {
    let free = |requirement: &Requirement| -> BTreeSet<&str> {
        machines
            .iter()
            .filter(|(name, spec)| {
                !taken.contains_key(*name) && spec.matches(&requirement.features)
            })
            .map(|(name, _)| name.as_str())
            .collect()
    };
    let (for_masters, for_workers) = (free(masters), free(workers));
    // Chosen machine → its node name: a cluster's nodes need names of
    // their own.
    let mut chosen: BTreeMap<String, String> = BTreeMap::new();
    let mut take = |fit: &BTreeSet<&str>, other: &BTreeSet<&str>, need: u32| -> Vec<String> {
        let only_here = fit.iter().filter(|name| !other.contains(*name));
        let both = fit.iter().filter(|name| other.contains(*name));
        let mut got = Vec::new();
        for name in only_here.chain(both) {
            if got.len() as u32 == need {
                break;
            }
            let node = machines[*name].host(name).name;
            if !chosen.contains_key(*name) && !chosen.values().any(|taken| *taken == node) {
                chosen.insert((*name).to_owned(), node);
                got.push((*name).to_owned());
            }
        }
        got
    };
    let picked = Picked {
        masters: take(&for_masters, &for_workers, masters.number),
        workers: take(&for_workers, &for_masters, workers.number),
    };
    let short = [
        ("master", masters, picked.masters.len()),
        ("worker", workers, picked.workers.len()),
    ];
    for (role, requirement, got) in short {
        if (got as u32) < requirement.number {
            let mut reason = shortage(machines, taken, role, requirement, got);
            for (name, spec) in machines {
                let node = spec.host(name).name;
                let clash = chosen
                    .iter()
                    .find(|(other, taken)| *other != name && **taken == node);
                if let (Some((other, _)), false) = (clash, taken.contains_key(name)) {
                    reason.push_str(&format!(
                        "; {name} is named {node} as {other} is, and a cluster's nodes need names \
                         of their own"
                    ));
                }
            }
            return Err(reason);
        }
    }
    Ok(picked)
}

/// Why a role has fewer machines than it needs.
fn shortage(
    machines: &BTreeMap<String, MachineSpec>,
    taken: &BTreeMap<String, String>,
    role: &str,
    requirement: &Requirement,
    got: usize,
) -> String {
    let features: Vec<String> = requirement
        .features
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let wanted = if features.is_empty() {
        String::new()
    } else {
        format!(" with {}", features.join(", "))
    };
    let held: Vec<String> = machines
        .iter()
        .filter(|(_, spec)| spec.matches(&requirement.features))
        .filter_map(|(name, _)| taken.get(name).map(|by| format!("{name} is {by}'s")))
        .collect();
    let mut reason = format!(
        "needs {} {role}{}{wanted}; {got} free to pick",
        requirement.number,
        if requirement.number == 1 { "" } else { "s" },
    );
    if !held.is_empty() {
        reason.push_str(&format!(" ({})", held.join(", ")));
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(ip: &str, labels: &[(&str, &str)]) -> MachineSpec {
        MachineSpec {
            ip: ip.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..MachineSpec::default()
        }
    }

    fn needs(number: u32, features: &[(&str, &str)]) -> Requirement {
        Requirement {
            number,
            features: machine("", features).labels,
        }
    }

    /// Five machines: two fit only for masters, two for both, one only
    /// for workers.
    fn pool() -> BTreeMap<String, MachineSpec> {
        let master = [("masterRole", "allow")];
        let both = [("masterRole", "allow"), ("workerRole", "allow")];
        let worker = [("workerRole", "allow")];
        [
            ("m1", machine("192.0.2.1", &master)),
            ("m2", machine("192.0.2.2", &master)),
            ("b1", machine("192.0.2.3", &both)),
            ("b2", machine("192.0.2.4", &both)),
            ("w1", machine("192.0.2.5", &worker)),
        ]
        .into_iter()
        .map(|(name, spec)| (name.to_owned(), spec))
        .collect()
    }

    #[test]
    fn two_requests_from_a_pool_of_five_get_disjoint_machines_and_a_third_waits() {
        let machines = pool();
        let (one_master, two_workers) = (
            needs(1, &[("masterRole", "allow")]),
            needs(2, &[("workerRole", "allow")]),
        );
        let mut taken = BTreeMap::new();
        let first = pick(&machines, &taken, &one_master, &two_workers).unwrap();
        // The master-only machine goes to the master, the worker-only one
        // to a worker first.
        assert_eq!(first.masters, ["m1"]);
        assert_eq!(first.workers, ["w1", "b1"]);
        for name in first.masters.iter().chain(&first.workers) {
            taken.insert(name.clone(), "first".to_owned());
        }
        let one_worker = needs(1, &[("workerRole", "allow")]);
        let second = pick(&machines, &taken, &one_master, &one_worker).unwrap();
        assert_eq!(
            (second.masters, second.workers),
            (vec!["m2".to_owned()], vec!["b2".to_owned()])
        );
        taken.insert("m2".into(), "second".into());
        taken.insert("b2".into(), "second".into());
        let third = pick(&machines, &taken, &one_master, &one_worker).unwrap_err();
        assert_eq!(
            third,
            "needs 1 master with masterRole=allow; 0 free to pick (b1 is first's, b2 is second's, \
             m1 is first's, m2 is second's)"
        );
        // Freed on cleanup, the first's machines serve the third.
        taken.retain(|_, by| by != "first");
        assert!(pick(&machines, &taken, &one_master, &one_worker).is_ok());
    }

    #[test]
    fn a_machine_is_never_picked_for_two_roles_and_labels_must_all_match() {
        let machines: BTreeMap<String, MachineSpec> = [(
            "only".to_owned(),
            machine(
                "192.0.2.9",
                &[("masterRole", "allow"), ("workerRole", "allow")],
            ),
        )]
        .into_iter()
        .collect();
        let none = BTreeMap::new();
        let master = needs(1, &[("masterRole", "allow")]);
        let reason = pick(
            &machines,
            &none,
            &master,
            &needs(1, &[("workerRole", "allow")]),
        )
        .unwrap_err();
        assert_eq!(
            reason,
            "needs 1 worker with workerRole=allow; 0 free to pick"
        );
        let zone = needs(1, &[("masterRole", "allow"), ("zone", "a")]);
        assert!(pick(&machines, &none, &zone, &needs(0, &[])).is_err());
        let picked = pick(&machines, &none, &master, &needs(0, &[])).unwrap();
        assert_eq!(picked.masters, ["only"]);
        assert!(picked.workers.is_empty());
    }

    #[test]
    fn a_machine_becomes_a_deploy_file_host_and_bad_specs_are_refused_by_field() {
        let mut spec = machine("192.0.2.7", &[]);
        assert_eq!(
            spec.host("machine7"),
            HostConfig {
                name: "machine7".into(),
                ip: "192.0.2.7".into(),
                port: 22,
                arch: "amd64".into()
            }
        );
        spec.hostname = "node7".into();
        spec.port = Some(2222);
        assert_eq!(spec.host("machine7").name, "node7");
        assert_eq!(spec.host("machine7").port, 2222);
        assert!(spec.check().is_ok());
        let bad = |mut spec: MachineSpec, change: fn(&mut MachineSpec)| {
            change(&mut spec);
            spec.check().unwrap_err().field
        };
        assert_eq!(
            bad(spec.clone(), |s| s.ip = "192.0.2.300".into()),
            "spec.ip"
        );
        assert_eq!(bad(spec.clone(), |s| s.port = Some(0)), "spec.port");
        assert_eq!(bad(spec.clone(), |s| s.arch = "x86 64".into()), "spec.arch");
        assert_eq!(
            bad(spec, |s| s.hostname = "Not_A_Name".into()),
            "spec.hostname"
        );
    }
}
