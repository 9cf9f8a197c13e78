//! The Multus annotation `k8s.v1.cni.cncf.io/networks`: read as Multus'
//! `ParseNetworkAnnotation` reads it and written as EMCO writes it, through
//! the `NetworkSelectionElement` of network-attachment-definition-client
//! v1.2.0 (the version EMCO's ovnaction builds with). That struct's
//! `cni-args` has no `omitempty`, so every element EMCO writes ends in
//! `"cni-args":null`.

use std::fmt::Write as _;
use std::net::IpAddr;

use crate::gojson::{self, Json, field_for};

/// The element ovnaction adds: a fixed name and namespace, as EMCO's.
pub const OVN_NETWORK_NAME: &str = "ovn-networkobj";
/// The namespace of [`OVN_NETWORK_NAME`].
pub const OVN_NETWORK_NAMESPACE: &str = "default";

/// One network selection element, with the fields the client library knows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Selection {
    name: String,
    namespace: String,
    ips: Vec<String>,
    mac: String,
    infiniband_guid: String,
    interface: String,
    port_mappings: Vec<Option<PortMapping>>,
    bandwidth: Option<Bandwidth>,
    cni_args: Option<Vec<(String, Json)>>,
    default_route: Vec<Option<IpAddr>>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct PortMapping {
    host_port: i64,
    container_port: i64,
    protocol: String,
    host_ip: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Bandwidth {
    ingress_rate: i64,
    ingress_burst: i64,
    egress_rate: i64,
    egress_burst: i64,
}

impl Selection {
    /// The element ovnaction adds.
    pub(crate) fn ovn() -> Self {
        Selection {
            name: OVN_NETWORK_NAME.to_owned(),
            namespace: OVN_NETWORK_NAMESPACE.to_owned(),
            ..Selection::default()
        }
    }
}

/// `existing` plus the ovn element, unless an element of that name (in any
/// namespace) is there already, written as EMCO writes the annotation.
pub(crate) fn with_ovn_network(mut existing: Vec<Selection>) -> String {
    if !existing
        .iter()
        .any(|element| element.name == OVN_NETWORK_NAME)
    {
        existing.push(Selection::ovn());
    }
    write(&existing)
}

/// Reads an annotation value: JSON when it holds any of `[`, `{` or `"`,
/// else a comma list of `[namespace/]name[@interface]`. Elements without a
/// namespace get `default_namespace`.
pub(crate) fn parse(value: &str, default_namespace: &str) -> Result<Vec<Selection>, String> {
    if value.is_empty() {
        return Err("the annotation is empty".to_owned());
    }
    let mut elements = if value.contains(['[', '{', '"']) {
        parse_json(value)?
    } else {
        value
            .split(',')
            .map(|item| parse_item(item.trim()))
            .collect::<Result<Vec<_>, _>>()?
    };
    for element in &mut elements {
        if element.namespace.is_empty() {
            element.namespace = default_namespace.to_owned();
        }
    }
    Ok(elements)
}

/// One `[namespace/]name[@interface]` item of the comma form.
fn parse_item(item: &str) -> Result<Selection, String> {
    let parts: Vec<&str> = item.split('/').collect();
    let (namespace, rest) = match parts[..] {
        [rest] => ("", rest),
        [namespace, rest] => (namespace.trim(), rest),
        _ => return Err(format!("{item:?} has more than one '/'")),
    };
    let parts: Vec<&str> = rest.split('@').collect();
    let (name, interface) = match parts[..] {
        [name] => (name.trim(), ""),
        [name, interface] => (name.trim(), interface.trim()),
        _ => return Err(format!("{item:?} has more than one '@'")),
    };
    for part in [namespace, name, interface] {
        if !part.is_empty() && !is_dns_label(part) {
            return Err(format!(
                "{part:?} in {item:?} is not lower case alphanumerics and '-', starting and ending alphanumerically"
            ));
        }
    }
    Ok(Selection {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        interface: interface.to_owned(),
        ..Selection::default()
    })
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, without a length limit (Multus checks none).
fn is_dns_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    bytes.first().is_some_and(alphanumeric)
        && bytes.last().is_some_and(alphanumeric)
        && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
}

/// The JSON form: an array of element objects (`null` reads as none).
/// Any member of the wrong type fails the whole value, as in Go.
fn parse_json(value: &str) -> Result<Vec<Selection>, String> {
    let json = Json::parse(value).map_err(|e| format!("not valid JSON: {e}"))?;
    match json {
        Json::Null => Ok(Vec::new()),
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(position, item)| match item {
                Json::Object(members) => {
                    selection(members).map_err(|e| format!("element {position}: {e}"))
                }
                other => Err(format!(
                    "element {position} is a {}, not an object",
                    other.type_name()
                )),
            })
            .collect(),
        other => Err(format!("a {} is not a list of networks", other.type_name())),
    }
}

const SELECTION_FIELDS: &[&str] = &[
    "name",
    "namespace",
    "ips",
    "mac",
    "infiniband-guid",
    "interface",
    "portMappings",
    "bandwidth",
    "cni-args",
    "default-route",
];

fn selection(members: &[(String, Json)]) -> Result<Selection, String> {
    let mut element = Selection::default();
    for (key, value) in members {
        let Some(field) = field_for(key, SELECTION_FIELDS) else {
            continue;
        };
        let problem =
            |expected: &str| format!("{key:?} is a {}, not {expected}", value.type_name());
        match (field, value) {
            // A null empties a list or object field and leaves a string
            // alone, as Go's decoder does.
            ("ips", Json::Null) => element.ips.clear(),
            ("portMappings", Json::Null) => element.port_mappings.clear(),
            ("default-route", Json::Null) => element.default_route.clear(),
            ("bandwidth", Json::Null) => element.bandwidth = None,
            (_, Json::Null) if field != "cni-args" => {}
            ("name", Json::String(text)) => element.name = text.clone(),
            ("namespace", Json::String(text)) => element.namespace = text.clone(),
            ("mac", Json::String(text)) => element.mac = text.clone(),
            ("infiniband-guid", Json::String(text)) => element.infiniband_guid = text.clone(),
            ("interface", Json::String(text)) => element.interface = text.clone(),
            ("ips", Json::Array(items)) => {
                element.ips = items
                    .iter()
                    .map(|item| match item {
                        Json::String(text) => Ok(text.clone()),
                        Json::Null => Ok(String::new()),
                        _ => Err(problem("a list of strings")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            ("portMappings", Json::Array(items)) => {
                element.port_mappings = items
                    .iter()
                    .map(|item| match item {
                        Json::Object(members) => port_mapping(members).map(Some),
                        Json::Null => Ok(None),
                        _ => Err(problem("a list of port mappings")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            ("bandwidth", Json::Object(members)) => element.bandwidth = Some(bandwidth(members)?),
            ("cni-args", Json::Null) => element.cni_args = None,
            ("cni-args", Json::Object(members)) => element.cni_args = Some(members.clone()),
            ("default-route", Json::Array(items)) => {
                element.default_route = items
                    .iter()
                    .map(|item| match item {
                        Json::String(text) if text.is_empty() => Ok(None),
                        Json::String(text) => text
                            .parse::<IpAddr>()
                            .map(Some)
                            .map_err(|_| format!("{key:?} holds {text:?}, not an IP address")),
                        Json::Null => Ok(None),
                        _ => Err(problem("a list of IP addresses")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            ("ips" | "portMappings" | "default-route", _) => return Err(problem("a list")),
            ("bandwidth" | "cni-args", _) => return Err(problem("an object")),
            _ => return Err(problem("a string")),
        }
    }
    Ok(element)
}

fn port_mapping(members: &[(String, Json)]) -> Result<PortMapping, String> {
    let mut mapping = PortMapping::default();
    for (key, value) in members {
        match field_for(key, &["hostPort", "containerPort", "protocol", "hostIP"]) {
            None => {}
            Some(_) if *value == Json::Null => {}
            Some("hostPort") => mapping.host_port = integer(key, value)?,
            Some("containerPort") => mapping.container_port = integer(key, value)?,
            Some("protocol") => mapping.protocol = string(key, value)?,
            Some(_) => mapping.host_ip = string(key, value)?,
        }
    }
    Ok(mapping)
}

fn bandwidth(members: &[(String, Json)]) -> Result<Bandwidth, String> {
    let mut bandwidth = Bandwidth::default();
    for (key, value) in members {
        let field = match field_for(
            key,
            &["ingressRate", "ingressBurst", "egressRate", "egressBurst"],
        ) {
            None => continue,
            Some(_) if *value == Json::Null => continue,
            Some("ingressRate") => &mut bandwidth.ingress_rate,
            Some("ingressBurst") => &mut bandwidth.ingress_burst,
            Some("egressRate") => &mut bandwidth.egress_rate,
            Some(_) => &mut bandwidth.egress_burst,
        };
        *field = integer(key, value)?;
    }
    Ok(bandwidth)
}

/// A Go `int`: an integer literal within 64 bits.
fn integer(key: &str, value: &Json) -> Result<i64, String> {
    match value {
        Json::Number(number) => number
            .as_i64()
            .ok_or_else(|| format!("{key:?} is {number}, not a 64-bit integer")),
        other => Err(format!(
            "{key:?} is a {}, not an integer",
            other.type_name()
        )),
    }
}

fn string(key: &str, value: &Json) -> Result<String, String> {
    match value {
        Json::String(text) => Ok(text.clone()),
        other => Err(format!("{key:?} is a {}, not a string", other.type_name())),
    }
}

/// The annotation value: the elements as Go marshals the client's struct.
fn write(elements: &[Selection]) -> String {
    let mut out = String::from("[");
    for (position, element) in elements.iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        write_selection(&mut out, element);
    }
    out.push(']');
    out
}

fn write_selection(out: &mut String, element: &Selection) {
    out.push_str("{\"name\":");
    gojson::write_string(out, &element.name);
    let optional = [
        ("namespace", &element.namespace),
        ("mac", &element.mac),
        ("infiniband-guid", &element.infiniband_guid),
        ("interface", &element.interface),
    ];
    let (namespace, rest) = optional.split_at(1);
    write_if_set(out, namespace);
    if !element.ips.is_empty() {
        out.push_str(",\"ips\":[");
        for (position, ip) in element.ips.iter().enumerate() {
            if position > 0 {
                out.push(',');
            }
            gojson::write_string(out, ip);
        }
        out.push(']');
    }
    write_if_set(out, rest);
    if !element.port_mappings.is_empty() {
        out.push_str(",\"portMappings\":[");
        for (position, mapping) in element.port_mappings.iter().enumerate() {
            if position > 0 {
                out.push(',');
            }
            match mapping {
                None => out.push_str("null"),
                Some(mapping) => {
                    let _ = write!(
                        out,
                        "{{\"hostPort\":{},\"containerPort\":{}",
                        mapping.host_port, mapping.container_port
                    );
                    write_if_set(
                        out,
                        &[
                            ("protocol", &mapping.protocol),
                            ("hostIP", &mapping.host_ip),
                        ],
                    );
                    out.push('}');
                }
            }
        }
        out.push(']');
    }
    if let Some(bandwidth) = &element.bandwidth {
        let _ = write!(
            out,
            ",\"bandwidth\":{{\"ingressRate\":{},\"ingressBurst\":{},\"egressRate\":{},\"egressBurst\":{}}}",
            bandwidth.ingress_rate,
            bandwidth.ingress_burst,
            bandwidth.egress_rate,
            bandwidth.egress_burst
        );
    }
    out.push_str(",\"cni-args\":");
    match &element.cni_args {
        None => out.push_str("null"),
        Some(members) => gojson::write_map(out, members),
    }
    if !element.default_route.is_empty() {
        out.push_str(",\"default-route\":[");
        for (position, ip) in element.default_route.iter().enumerate() {
            if position > 0 {
                out.push(',');
            }
            let text = ip.map(go_ip_text).unwrap_or_default();
            gojson::write_string(out, &text);
        }
        out.push(']');
    }
    out.push('}');
}

/// Appends `,"name":"value"` for each non-empty value (Go's `omitempty`).
fn write_if_set(out: &mut String, fields: &[(&str, &String)]) {
    for (name, value) in fields {
        if !value.is_empty() {
            let _ = write!(out, ",\"{name}\":");
            gojson::write_string(out, value);
        }
    }
}

/// An address as Go's `net.IP` prints it: IPv4-mapped IPv6 addresses as
/// dotted IPv4.
fn go_ip_text(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        IpAddr::V4(v4) => v4.to_string(),
    }
}
