//! The machine lists and the load balancer (`cmd/checker.go`,
//! `NodesResponsibility`: `checkHostconfig`, `checkNodeList`).

use std::collections::{HashMap, HashSet};

use super::super::hosts::{HostConfig, LoadBalance};
use super::super::model::DeployConfig;
use super::super::syntax::{dns1123_subdomain, ip};
use super::cluster::port;
use super::problems::Problems;

/// Where a machine was first described, by its address.
type FirstSeen<'a> = HashMap<&'a str, (String, &'a HostConfig)>;

/// Every machine named and reachable, no list naming a machine twice, and
/// a machine in several lists described the same way in each.
pub(super) fn check_nodes(config: &DeployConfig, problems: &mut Problems) {
    let mut first_seen = FirstSeen::new();
    let lists = [
        ("masters", &config.masters),
        ("workers", &config.workers),
        ("etcds", &config.etcds),
    ];
    for (list, hosts) in lists {
        check_list(list, hosts, &mut first_seen, problems);
    }
    check_loadbalance(&config.loadbalance, problems);
}

fn check_list<'a>(
    list: &str,
    hosts: &'a [HostConfig],
    first_seen: &mut FirstSeen<'a>,
    problems: &mut Problems,
) {
    let mut ips = HashSet::new();
    let mut names = HashSet::new();
    for (i, host) in hosts.iter().enumerate() {
        let at = format!("{list}[{i}]");
        check_host(&at, host, problems);
        if !host.name.is_empty() && !names.insert(host.name.as_str()) {
            problems.add(
                format!("{at}.name"),
                format!("duplicate name {:?} in {list}", host.name),
            );
        }
        if host.ip.is_empty() {
            continue;
        }
        if !ips.insert(host.ip.as_str()) {
            problems.add(
                format!("{at}.ip"),
                format!("duplicate ip {} in {list}", host.ip),
            );
            continue;
        }
        match first_seen.get(host.ip.as_str()) {
            Some((first, described)) if *described != host => problems.add(
                at,
                format!(
                    "{} is also {first}, with another name, port or arch: a machine in \
                     several lists must be written the same way in each",
                    host.ip
                ),
            ),
            Some(_) => {}
            None => {
                first_seen.insert(&host.ip, (at, host));
            }
        }
    }
}

fn check_host(at: &str, host: &HostConfig, problems: &mut Problems) {
    if host.name.is_empty() {
        problems.add(
            format!("{at}.name"),
            "no name: it is the machine's node name",
        );
    } else {
        problems.test(&format!("{at}.name"), dns1123_subdomain(&host.name));
    }
    if host.ip.is_empty() {
        problems.add(
            format!("{at}.ip"),
            "no ip: Eggo reaches each machine by its address",
        );
    } else {
        problems.test(&format!("{at}.ip"), ip(&host.ip));
    }
    problems.test(&format!("{at}.port"), port(host.port));
}

/// A load balancer with an address also needs its SSH port and the port it
/// listens on; ports that are given must be ports.
fn check_loadbalance(lb: &LoadBalance, problems: &mut Problems) {
    if lb.is_set() {
        problems.test("loadbalance.ip", ip(&lb.ip));
    }
    let ports = [
        ("loadbalance.port", lb.port),
        ("loadbalance.bind-port", lb.bind_port),
    ];
    for (field, number) in ports {
        if number != 0 || lb.is_set() {
            let needed = port(number).map_err(|e| match number {
                0 => format!("{e}: loadbalance.ip is set, so the port is needed"),
                _ => e,
            });
            problems.test(field, needed);
        }
    }
}
