//! Certificates for nodes: kubeadm's certificate set for a control-plane
//! node, and CSRs signed for nodes that join.

use rcgen::{
    CertificateSigningRequestParams, DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose,
    IsCa, Issuer, KeyPair,
};
use time::OffsetDateTime;

use crate::authority::ClusterPki;
use crate::cert::{KeyedCert, Usage};
use crate::error::{PkiError, invalid};
use crate::issue::{issue, leaf_params, san_type};

/// The API server's names inside the cluster (kubeadm's defaults).
const API_SERVER_NAMES: &[&str] = &[
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "10.96.0.1",
];

impl ClusterPki {
    /// kubeadm's `/etc/kubernetes/pki` for control-plane node `node`, as a
    /// `.tar.gz`; `sans` (DNS names or IPs) go on the API server's and
    /// etcd's serving certificates.
    pub fn bootstrap_bundle(&self, node: &str, sans: &[String]) -> Result<Vec<u8>, PkiError> {
        if node.is_empty()
            || !node
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-.".contains(c))
        {
            return Err(invalid(
                "node",
                "must be a host name (letters, digits, '-', '.')",
            ));
        }
        for san in sans {
            san_type(san).map_err(|reason| invalid("sans", reason))?;
        }
        let sa = KeyPair::from_pem(&self.service_account_key)?;
        let files: Vec<(String, String)> = self
            .control_plane_pairs(node, sans)?
            .into_iter()
            .flat_map(|(name, pair)| {
                [
                    (format!("{name}.crt"), pair.certificate),
                    (format!("{name}.key"), pair.key),
                ]
            })
            .chain([
                ("sa.key".to_owned(), self.service_account_key.clone()),
                ("sa.pub".to_owned(), sa.public_key_pem()),
            ])
            .collect();
        tar_gz(&files).map_err(PkiError::Archive)
    }

    /// The CAs and the certificates kubeadm expects, by their file name
    /// under `/etc/kubernetes/pki`.
    fn control_plane_pairs(
        &self,
        node: &str,
        sans: &[String],
    ) -> Result<Vec<(&'static str, KeyedCert)>, PkiError> {
        let api_sans: Vec<String> = API_SERVER_NAMES
            .iter()
            .map(|s| (*s).to_owned())
            .chain([node.to_owned()])
            .chain(sans.iter().cloned())
            .collect();
        let etcd_sans: Vec<String> = [node, "localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|s| (*s).to_owned())
            .chain(sans.iter().cloned())
            .collect();
        let client = |ca: &KeyedCert, name: &str, groups: &[&str]| {
            issue(ca, name, groups, &[], Usage::Client)
        };
        Ok(vec![
            ("ca", self.ca.clone()),
            ("front-proxy-ca", self.front_proxy_ca.clone()),
            ("etcd/ca", self.etcd_ca.clone()),
            (
                "apiserver",
                issue(&self.ca, "kube-apiserver", &[], &api_sans, Usage::Server)?,
            ),
            (
                "apiserver-kubelet-client",
                client(
                    &self.ca,
                    "kube-apiserver-kubelet-client",
                    &["system:masters"],
                )?,
            ),
            (
                "front-proxy-client",
                client(&self.front_proxy_ca, "front-proxy-client", &[])?,
            ),
            (
                "etcd/server",
                issue(&self.etcd_ca, node, &[], &etcd_sans, Usage::Both)?,
            ),
            (
                "etcd/peer",
                issue(&self.etcd_ca, node, &[], &etcd_sans, Usage::Both)?,
            ),
            (
                "etcd/healthcheck-client",
                client(&self.etcd_ca, "kube-etcd-healthcheck-client", &[])?,
            ),
            (
                "apiserver-etcd-client",
                client(&self.etcd_ca, "kube-apiserver-etcd-client", &[])?,
            ),
        ])
    }

    /// Signs a node's CSR for joining: a kubelet client certificate
    /// (`CN=system:node:NAME`, `O=system:nodes`, client auth) or, when the
    /// CSR asks for server auth with SANs, a kubelet serving certificate.
    /// Anything else is refused with the reason.
    pub fn sign_node_csr(&self, csr_pem: &str) -> Result<String, PkiError> {
        let csr = CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|e| invalid("csr", format!("not a valid, self-signed PEM CSR: {e}")))?;
        let requested = &csr.params;
        let common_name = dn_text(&requested.distinguished_name, DnType::CommonName)
            .ok_or_else(|| invalid("csr", "has no common name"))?;
        let node = common_name
            .strip_prefix("system:node:")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                invalid(
                    "csr",
                    format!("common name {common_name:?} is not system:node:NAME"),
                )
            })?;
        let organization = dn_text(&requested.distinguished_name, DnType::OrganizationName);
        if organization.as_deref() != Some("system:nodes") {
            return Err(invalid(
                "csr",
                format!("organization is {organization:?}; a node's must be \"system:nodes\""),
            ));
        }
        if !matches!(requested.is_ca, IsCa::NoCa | IsCa::ExplicitNoCa) {
            return Err(invalid("csr", "asks to be a CA"));
        }
        let usage = node_usage(requested)?;
        let mut params = leaf_params(&format!("system:node:{node}"), &["system:nodes"], usage);
        params.subject_alt_names = requested.subject_alt_names.clone();
        let ca_key = KeyPair::from_pem(&self.ca.key)?;
        let issuer = Issuer::from_ca_cert_pem(&self.ca.certificate, &ca_key)?;
        Ok(params.signed_by(&csr.public_key, &issuer)?.pem())
    }
}

/// What a node's CSR may be: client auth without SANs, or server auth with
/// them; never both, never anything else.
fn node_usage(requested: &rcgen::CertificateParams) -> Result<Usage, PkiError> {
    let usages = &requested.extended_key_usages;
    if let Some(other) = usages.iter().find(|u| {
        !matches!(
            u,
            ExtendedKeyUsagePurpose::ServerAuth | ExtendedKeyUsagePurpose::ClientAuth
        )
    }) {
        return Err(invalid(
            "csr",
            format!("asks for usage {other:?}; only client or server auth is signed"),
        ));
    }
    let server = usages.contains(&ExtendedKeyUsagePurpose::ServerAuth);
    let client = usages.contains(&ExtendedKeyUsagePurpose::ClientAuth);
    match (server, client) {
        (true, true) => Err(invalid(
            "csr",
            "asks for client and server auth at once; ask for one",
        )),
        (true, false) if requested.subject_alt_names.is_empty() => Err(invalid(
            "csr",
            "asks for server auth without DNS or IP SANs",
        )),
        (true, false) => Ok(Usage::Server),
        (false, _) if !requested.subject_alt_names.is_empty() => {
            Err(invalid("csr", "a client certificate carries no SANs"))
        }
        (false, _) => Ok(Usage::Client),
    }
}

/// The text of attribute `ty` of `name`, when it is a string.
fn dn_text(name: &DistinguishedName, ty: DnType) -> Option<String> {
    Some(match name.get(&ty)? {
        DnValue::Utf8String(s) => s.clone(),
        DnValue::PrintableString(s) => s.as_str().to_owned(),
        DnValue::Ia5String(s) => s.as_str().to_owned(),
        _ => return None,
    })
}

fn tar_gz(files: &[(String, String)]) -> std::io::Result<Vec<u8>> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut archive = tar::Builder::new(encoder);
    let mtime = OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
    for (name, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(if name.ends_with(".key") { 0o600 } else { 0o644 });
        header.set_mtime(mtime);
        header.set_cksum();
        archive.append_data(&mut header, name, text.as_bytes())?;
    }
    archive.into_inner()?.finish()
}
