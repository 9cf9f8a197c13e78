//! The machines of a deploy file as wasmco works on them: each machine once,
//! with every role it has, and the addresses the cluster's parts use.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use wasmco_core::FieldError;
use wasmco_core::eggo::{DeployConfig, HostConfig};

/// The size of the pod subnet each node gets from the pod network.
const NODE_POD_PREFIX: u8 = 24;

/// What a machine is for. A machine may be several at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Roles {
    /// It runs an etcd member.
    pub etcd: bool,
    /// It runs the control plane.
    pub master: bool,
    /// It runs pods (a kubelet).
    pub worker: bool,
}

/// One machine of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// Its node name.
    pub name: String,
    /// Its address (SSH and the cluster's traffic alike, as in Eggo).
    pub ip: IpAddr,
    /// Its SSH port.
    pub port: u16,
    /// Its architecture (`amd64`, `arm64`).
    pub arch: String,
    /// Its roles.
    pub roles: Roles,
    /// The pod addresses its kubelet hands out, when it runs pods.
    pub pod_subnet: Option<IpNet>,
}

/// The cluster as laid out on its machines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// The cluster's name (`cluster-id`).
    pub cluster: String,
    /// Every machine once, masters first in the file's order, then the
    /// other workers, then etcd-only machines.
    pub machines: Vec<Machine>,
    /// `host:port` clients reach the API servers at.
    pub endpoint: String,
    /// The service address range.
    pub service_cidr: IpNet,
    /// The `kubernetes` service's address (the range's first).
    pub api_service_ip: IpAddr,
    /// The cluster DNS service's address.
    pub dns_ip: IpAddr,
    /// The pod address range.
    pub pod_cidr: IpNet,
}

impl Topology {
    /// Lays out `config` (defaults filled in). Machines listed under one
    /// name in several roles must agree on their address.
    pub fn of(config: &DeployConfig) -> Result<Topology, Vec<FieldError>> {
        Topology::keeping(config, &BTreeMap::new())
    }

    /// Lays out `config`, each machine in `pod_subnets` keeping its slice of
    /// the pod range (the others get the first free ones, in order).
    pub fn keeping(
        config: &DeployConfig,
        pod_subnets: &BTreeMap<String, IpNet>,
    ) -> Result<Topology, Vec<FieldError>> {
        let config = config.with_defaults();
        let mut problems = Vec::new();
        let mut machines: Vec<Machine> = Vec::new();
        let lists: [(&str, &[HostConfig]); 3] = [
            ("masters", &config.masters),
            ("workers", &config.workers),
            ("etcds", &config.etcds),
        ];
        for (list, hosts) in lists {
            for (index, host) in hosts.iter().enumerate() {
                let at = format!("{list}[{index}]");
                match place(&mut machines, list, host) {
                    Ok(()) => {}
                    Err(reason) => problems.push(FieldError::new(at, reason)),
                }
            }
        }
        let service_cidr = net(&config.service.cidr, "service.cidr", &mut problems);
        let pod_cidr = net(&config.network.podcidr, "network.podcidr", &mut problems);
        let dns_ip = config.service.dnsaddr.parse::<IpAddr>();
        if dns_ip.is_err() {
            problems.push(FieldError::new("service.dnsaddr", "is not an IP address"));
        }
        let (Some(service_cidr), Some(pod_cidr), Ok(dns_ip)) = (service_cidr, pod_cidr, dns_ip)
        else {
            return Err(problems);
        };
        if let Err(reason) = hand_out_pod_subnets(&mut machines, pod_cidr, pod_subnets) {
            problems.push(FieldError::new("network.podcidr", reason));
        }
        let Some(api_service_ip) = service_cidr.hosts().next() else {
            problems.push(FieldError::new(
                "service.cidr",
                "has no address for a service",
            ));
            return Err(problems);
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Topology {
            cluster: config.cluster_id.clone(),
            machines,
            endpoint: config.apiserver_endpoint.clone(),
            service_cidr,
            api_service_ip,
            dns_ip,
            pod_cidr,
        })
    }

    /// The first master: it makes the control plane the others join.
    pub fn first_master(&self) -> Option<&Machine> {
        self.machines.iter().find(|machine| machine.roles.master)
    }

    /// The machines with a role, in order.
    pub fn with(&self, role: fn(&Roles) -> bool) -> impl Iterator<Item = &Machine> {
        self.machines
            .iter()
            .filter(move |machine| role(&machine.roles))
    }

    /// The machine called `name`.
    pub fn machine(&self, name: &str) -> Option<&Machine> {
        self.machines.iter().find(|machine| machine.name == name)
    }

    /// The cluster without the machines called `names`.
    pub fn without(&self, names: &[String]) -> Topology {
        let mut topology = self.clone();
        topology
            .machines
            .retain(|machine| !names.contains(&machine.name));
        topology
    }
}

/// Adds `host` with the role of `list`, or the role to the machine of the
/// same name.
fn place(machines: &mut Vec<Machine>, list: &str, host: &HostConfig) -> Result<(), String> {
    let ip: IpAddr = host
        .ip
        .parse()
        .map_err(|_| format!("ip {:?} is not an IP address", host.ip))?;
    let port = u16::try_from(host.port).map_err(|_| format!("port {} is not a port", host.port))?;
    let index = match machines.iter().position(|known| known.name == host.name) {
        Some(index) if machines[index].ip != ip => {
            return Err(format!(
                "{} is listed elsewhere with the address {}",
                host.name, machines[index].ip
            ));
        }
        Some(index) => index,
        None => {
            machines.push(Machine {
                name: host.name.clone(),
                ip,
                port,
                arch: host.arch.clone(),
                roles: Roles::default(),
                pod_subnet: None,
            });
            machines.len() - 1
        }
    };
    let roles = &mut machines[index].roles;
    match list {
        "masters" => roles.master = true,
        "workers" => roles.worker = true,
        _ => roles.etcd = true,
    }
    Ok(())
}

/// Gives every machine that runs pods its own slice of the pod range: the
/// one `kept` for it, else the first free one in machine order, so the
/// same file always gives the same slices and a machine joining or
/// leaving moves no other.
fn hand_out_pod_subnets(
    machines: &mut [Machine],
    pod_cidr: IpNet,
    kept: &BTreeMap<String, IpNet>,
) -> Result<(), String> {
    let prefix = match pod_cidr {
        IpNet::V4(_) => NODE_POD_PREFIX,
        IpNet::V6(_) => 64,
    };
    let mut subnets = pod_cidr
        .subnets(prefix)
        .map_err(|_| format!("{pod_cidr} is smaller than one node's /{prefix}"))?;
    // Only workers run a kubelet: a master listed as a worker too runs
    // pods, a master alone does not (Eggo's rule).
    let keeps = |machine: &Machine| {
        kept.get(&machine.name)
            .filter(|subnet| subnet.prefix_len() == prefix && pod_cidr.contains(*subnet))
            .copied()
    };
    // Every slice kept is taken, a machine's no longer in the file too: it
    // may still run pods there.
    let taken: Vec<IpNet> = kept
        .values()
        .filter(|subnet| subnet.prefix_len() == prefix && pod_cidr.contains(*subnet))
        .copied()
        .collect();
    for machine in machines.iter_mut().filter(|machine| machine.roles.worker) {
        machine.pod_subnet = match keeps(machine) {
            Some(subnet) => Some(subnet),
            None => Some(
                subnets
                    .find(|subnet| !taken.contains(subnet))
                    .ok_or_else(|| {
                        format!("{pod_cidr} has too few /{prefix} subnets for every node")
                    })?,
            ),
        };
    }
    Ok(())
}

fn net(text: &str, field: &str, problems: &mut Vec<FieldError>) -> Option<IpNet> {
    match text.parse::<IpNet>() {
        Ok(net) => Some(net.trunc()),
        Err(_) => {
            problems.push(FieldError::new(field, format!("{text:?} is not a CIDR")));
            None
        }
    }
}
