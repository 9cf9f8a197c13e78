//! Everything secret a cluster is made with, made once by wasmco and kept
//! (sealed) so that a deploy resumed or run again puts the same files on
//! the nodes and restarts nothing. Eggo makes the CAs on its own host and
//! the leaf certificates with openssl on each node; here wasmco's PKI makes
//! both, so nodes need no openssl and the store holds every key.

use std::collections::BTreeMap;

use base64::Engine;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use wasmco_pki::{ClusterPki, KeyedCert, PkiError, Usage, issue};

use crate::topology::{Machine, Topology};

/// The API server's names inside the cluster (Eggo's list).
const API_SERVER_NAMES: [&str; 5] = [
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster",
    "kubernetes.default.svc.cluster.local",
];

/// A cluster's keys, certificates and tokens. Its Debug form leaves the
/// secrets out.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMaterial {
    /// The CAs and the service-account key.
    pub pki: ClusterPki,
    /// `sa.pub`, the public half of the PKI's service-account key.
    pub service_account_public: String,
    /// The API servers' client certificate for etcd.
    pub apiserver_etcd_client: KeyedCert,
    /// `admin.conf`'s certificate (`kubernetes-admin`, `system:masters`).
    pub admin: KeyedCert,
    /// The key the API servers encrypt Secrets at rest with (base64).
    pub encryption_key: String,
    /// The kubelets' bootstrap token (`id.secret`).
    pub bootstrap_token: String,
    /// Each machine's own certificates, by node name.
    pub nodes: BTreeMap<String, NodeMaterial>,
}

/// One machine's certificates, for the roles it has.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeMaterial {
    /// etcd's serving certificate.
    pub etcd_server: Option<KeyedCert>,
    /// etcd's peer certificate.
    pub etcd_peer: Option<KeyedCert>,
    /// The client certificate etcd's health check uses.
    pub etcd_healthcheck: Option<KeyedCert>,
    /// The API server's serving certificate.
    pub apiserver: Option<KeyedCert>,
    /// The API server's client certificate for kubelets.
    pub apiserver_kubelet_client: Option<KeyedCert>,
    /// The API server's client certificate for aggregated APIs.
    pub front_proxy_client: Option<KeyedCert>,
    /// The controller manager's client certificate.
    pub controller_manager: Option<KeyedCert>,
    /// The scheduler's client certificate.
    pub scheduler: Option<KeyedCert>,
    /// kube-proxy's client certificate.
    pub kube_proxy: Option<KeyedCert>,
    /// The slice of the pod range its kubelet hands out: kept, so machines
    /// joining or leaving never move another machine's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_subnet: Option<String>,
    /// How its etcd member was first started, when that differs from a
    /// member of a new cluster: kept, so what it runs with never changes
    /// as members come and go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_start: Option<EtcdStart>,
}

/// The settings an etcd member is born with (`ETCD_INITIAL_*`): read only
/// on its first start, but part of what it runs with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtcdStart {
    /// `name=peer-url` of every member it starts among, itself included.
    pub initial_cluster: String,
    /// Whether it joined a cluster already running (added as a member
    /// before its first start), not one made with it.
    pub existing: bool,
}

impl std::fmt::Debug for ClusterMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterMaterial")
            .field("pki", &self.pki)
            .field("nodes", &self.nodes.keys().collect::<Vec<_>>())
            .field("encryption_key", &"(sealed)")
            .field("bootstrap_token", &"(sealed)")
            .finish_non_exhaustive()
    }
}

impl ClusterMaterial {
    /// New material for `topology` around `pki` (the cluster's CAs, made or
    /// imported by the caller). `extra_sans` are the file's
    /// `apiserver-cert-sans`, names and addresses alike.
    pub fn create(
        topology: &Topology,
        pki: ClusterPki,
        extra_sans: &[String],
    ) -> Result<ClusterMaterial, PkiError> {
        let masters: Vec<&Machine> = topology.with(|roles| roles.master).collect();
        let etcd_client_sans: Vec<String> = masters
            .iter()
            .flat_map(|master| [master.ip.to_string(), master.name.clone()])
            .chain(["127.0.0.1".to_owned(), "localhost".to_owned()])
            .collect();
        let mut material = ClusterMaterial {
            apiserver_etcd_client: issue(
                &pki.etcd_ca,
                "kube-apiserver-etcd-client",
                &["system:masters"],
                &etcd_client_sans,
                Usage::Client,
            )?,
            admin: pki.client("kubernetes-admin", &["system:masters"])?,
            service_account_public: pki.service_account_public_key()?,
            encryption_key: base64::engine::general_purpose::STANDARD.encode(random_bytes::<32>()),
            bootstrap_token: bootstrap_token(),
            nodes: BTreeMap::new(),
            pki,
        };
        for machine in &topology.machines {
            let node = material.node_material(topology, machine, extra_sans)?;
            material.nodes.insert(machine.name.clone(), node);
        }
        material.keep_pod_subnets(topology);
        Ok(material)
    }

    /// Adds certificates for machines the topology has and the material not
    /// yet (a machine added to the file); keeps everything already made.
    /// The etcd members among them join the members there are, one after
    /// another, and those members' own start is written down first.
    pub fn cover(&mut self, topology: &Topology, extra_sans: &[String]) -> Result<bool, PkiError> {
        let mut members: Vec<&Machine> = topology
            .with(|roles| roles.etcd)
            .filter(|machine| self.nodes.contains_key(&machine.name))
            .collect();
        let mut added = false;
        for machine in &topology.machines {
            if self.nodes.contains_key(&machine.name) {
                continue;
            }
            let mut node = self.node_material(topology, machine, extra_sans)?;
            if machine.roles.etcd && !members.is_empty() {
                self.pin_etcd_starts(&members);
                members.push(machine);
                node.etcd_start = Some(EtcdStart {
                    initial_cluster: initial_cluster(&members),
                    existing: true,
                });
            }
            self.nodes.insert(machine.name.clone(), node);
            added = true;
        }
        self.keep_pod_subnets(topology);
        Ok(added)
    }

    /// Writes down how `members` started, for those that started with the
    /// cluster (among each other).
    fn pin_etcd_starts(&mut self, members: &[&Machine]) {
        let founders = initial_cluster(members);
        for member in members {
            if let Some(node) = self.nodes.get_mut(&member.name) {
                node.etcd_start.get_or_insert_with(|| EtcdStart {
                    initial_cluster: founders.clone(),
                    existing: false,
                });
            }
        }
    }

    /// Records the pod slice of each machine that has none recorded.
    fn keep_pod_subnets(&mut self, topology: &Topology) {
        for machine in &topology.machines {
            if let (Some(node), Some(subnet)) =
                (self.nodes.get_mut(&machine.name), machine.pod_subnet)
            {
                node.pod_subnet.get_or_insert_with(|| subnet.to_string());
            }
        }
    }

    /// The pod slices recorded, by node name.
    pub fn pod_subnets(&self) -> BTreeMap<String, IpNet> {
        self.nodes
            .iter()
            .filter_map(|(name, node)| {
                let subnet = node.pod_subnet.as_deref()?.parse().ok()?;
                Some((name.clone(), subnet))
            })
            .collect()
    }

    /// Forgets the machines called `names` (they left the cluster): a
    /// machine joining later under one of those names gets new
    /// certificates for its address.
    pub fn forget(&mut self, names: &[String]) {
        self.nodes.retain(|name, _| !names.contains(name));
    }

    fn node_material(
        &self,
        topology: &Topology,
        machine: &Machine,
        extra_sans: &[String],
    ) -> Result<NodeMaterial, PkiError> {
        let mut node = NodeMaterial::default();
        if machine.roles.etcd {
            self.etcd_certificates(machine, &mut node)?;
        }
        if machine.roles.master {
            self.master_certificates(topology, machine, extra_sans, &mut node)?;
        }
        if machine.pod_subnet.is_some() {
            node.kube_proxy = Some(self.pki.client("system:kube-proxy", &[])?);
        }
        Ok(node)
    }

    /// etcd's server, peer and health-check certificates (Eggo's names and
    /// SANs).
    fn etcd_certificates(
        &self,
        machine: &Machine,
        node: &mut NodeMaterial,
    ) -> Result<(), PkiError> {
        let sans = vec![
            "127.0.0.1".to_owned(),
            machine.ip.to_string(),
            "localhost".to_owned(),
            machine.name.clone(),
        ];
        let etcd_ca = &self.pki.etcd_ca;
        let name = &machine.name;
        node.etcd_server = Some(issue(
            etcd_ca,
            &format!("{name}-server"),
            &[],
            &sans,
            Usage::Both,
        )?);
        node.etcd_peer = Some(issue(
            etcd_ca,
            &format!("{name}-peer"),
            &[],
            &sans,
            Usage::Both,
        )?);
        node.etcd_healthcheck = Some(issue(
            etcd_ca,
            &format!("{name}-healthcheck-client"),
            &[],
            &[],
            Usage::Client,
        )?);
        Ok(())
    }

    /// The API server's serving and client certificates and the controller
    /// manager's and scheduler's client certificates.
    fn master_certificates(
        &self,
        topology: &Topology,
        machine: &Machine,
        extra_sans: &[String],
        node: &mut NodeMaterial,
    ) -> Result<(), PkiError> {
        let ca = &self.pki.ca;
        let endpoint_host = topology
            .endpoint
            .rsplit_once(':')
            .map_or(topology.endpoint.as_str(), |(host, _)| host);
        let mut sans: Vec<String> = ["127.0.0.1".to_owned(), topology.api_service_ip.to_string()]
            .into_iter()
            .chain([
                machine.ip.to_string(),
                machine.name.clone(),
                endpoint_host.to_owned(),
            ])
            .chain(API_SERVER_NAMES.iter().map(|name| (*name).to_owned()))
            .chain(extra_sans.iter().cloned())
            .collect();
        sans.sort();
        sans.dedup();
        node.apiserver = Some(issue(
            ca,
            "kube-apiserver",
            &["kubernetes"],
            &sans,
            Usage::Both,
        )?);
        node.apiserver_kubelet_client = Some(issue(
            ca,
            "kube-apiserver-kubelet-client",
            &["system:masters"],
            &[],
            Usage::Client,
        )?);
        node.front_proxy_client = Some(issue(
            &self.pki.front_proxy_ca,
            "front-proxy-client",
            &[],
            &[],
            Usage::Client,
        )?);
        node.controller_manager = Some(self.pki.client("system:kube-controller-manager", &[])?);
        node.scheduler = Some(self.pki.client("system:kube-scheduler", &[])?);
        Ok(())
    }

    /// The bootstrap token's id (before the dot).
    pub fn bootstrap_token_id(&self) -> &str {
        self.bootstrap_token
            .split_once('.')
            .map_or("", |(id, _)| id)
    }
}

/// etcd's `initial-cluster` for `members`.
pub(crate) fn initial_cluster(members: &[&Machine]) -> String {
    members
        .iter()
        .map(|member| {
            format!(
                "{}=https://{}",
                member.name,
                crate::plan::socket(member, 2380)
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `[a-z0-9]{6}.[a-z0-9]{16}`, the form the API server takes.
fn bootstrap_token() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let bytes = random_bytes::<22>();
    let mut token: String = bytes
        .iter()
        // 256 is not a multiple of 36; the bias (a few letters 1/36 more
        // likely than others by 8/256) costs well under a bit of the
        // token's 113.
        .map(|byte| ALPHABET[usize::from(*byte) % ALPHABET.len()] as char)
        .collect();
    token.insert(6, '.');
    token
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // The operating system's generator failing is not something a deploy
    // can go on from.
    getrandom::fill(&mut bytes).expect("the operating system's random generator");
    bytes
}
