//! The ovn4nfv annotation `k8s.plugin.opnfv.org/nfn-network`:
//! `{"type":"ovn4nfv","interface":[…]}`, read and merged as EMCO's
//! ovnaction does and written with its struct's key order.

use crate::gojson::{self, Json, field_for};

/// The CNI type the annotation always names.
pub const CNI_TYPE: &str = "ovn4nfv";

/// One interface of the annotation; the fields of an interface intent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NfnInterface {
    /// The interface name in the pod (`eth1`).
    pub interface: String,
    /// The network it attaches to.
    pub name: String,
    /// Whether it carries the default route (`"true"`/`"false"`, as stored).
    pub default_gateway: String,
    /// A fixed address, or empty for one from the network's pool.
    pub ip_address: String,
    /// A fixed MAC address, or empty.
    pub mac_address: String,
}

/// What was read from an existing annotation, and the first problem met.
/// Go's decoder goes on after a member of the wrong type, so a partly
/// wrong value still yields the members that were right.
#[derive(Debug, Default)]
pub(crate) struct Existing {
    pub(crate) interfaces: Vec<NfnInterface>,
    pub(crate) problem: Option<String>,
}

/// Reads an existing annotation value.
pub(crate) fn parse(value: &str) -> Existing {
    let mut existing = Existing::default();
    match Json::parse(value) {
        Err(e) => existing.problem = Some(format!("not valid JSON: {e}")),
        Ok(Json::Null) => {}
        Ok(Json::Object(members)) => {
            for (key, value) in &members {
                let Some(field) = field_for(key, &["type", "interface"]) else {
                    continue;
                };
                match (field, value) {
                    // ovn4nfv replaces the type in any case, so only a
                    // type of the wrong JSON type matters.
                    ("type", Json::Null | Json::String(_)) => {}
                    ("interface", Json::Null) => existing.interfaces.clear(),
                    ("interface", Json::Array(items)) => {
                        existing.interfaces = items
                            .iter()
                            .map(|item| interface(item, &mut existing.problem))
                            .collect();
                    }
                    (field, other) => note(
                        &mut existing.problem,
                        format!("{field:?} is a {}", other.type_name()),
                    ),
                }
            }
        }
        Ok(other) => note(
            &mut existing.problem,
            format!("a {} is not an object", other.type_name()),
        ),
    }
    existing
}

fn note(problem: &mut Option<String>, text: String) {
    problem.get_or_insert(text);
}

const INTERFACE_FIELDS: &[&str] = &[
    "interface",
    "name",
    "defaultGateway",
    "ipAddress",
    "macAddress",
];

/// One element of `interface`; a non-object becomes an empty interface,
/// as Go's decoder leaves the element it could not fill.
fn interface(item: &Json, problem: &mut Option<String>) -> NfnInterface {
    let mut found = NfnInterface::default();
    match item {
        Json::Null => {}
        Json::Object(members) => {
            for (key, value) in members {
                let Some(field) = field_for(key, INTERFACE_FIELDS) else {
                    continue;
                };
                let text = match value {
                    Json::String(text) => text.clone(),
                    Json::Null => continue,
                    other => {
                        note(problem, format!("{field:?} is a {}", other.type_name()));
                        continue;
                    }
                };
                match field {
                    "interface" => found.interface = text,
                    "name" => found.name = text,
                    "defaultGateway" => found.default_gateway = text,
                    "ipAddress" => found.ip_address = text,
                    _ => found.mac_address = text,
                }
            }
        }
        other => note(
            problem,
            format!("an interface is a {}, not an object", other.type_name()),
        ),
    }
    found
}

/// `existing` with `new` merged in: an existing interface with the same
/// network and interface name as a new one takes the new one's gateway and
/// addresses; new interfaces matching none are appended in order.
pub(crate) fn merge(existing: &[NfnInterface], new: &[NfnInterface]) -> Vec<NfnInterface> {
    let same = |a: &NfnInterface, b: &NfnInterface| a.name == b.name && a.interface == b.interface;
    let mut merged: Vec<NfnInterface> = existing
        .iter()
        .map(|old| match new.iter().find(|fresh| same(old, fresh)) {
            Some(fresh) => NfnInterface {
                default_gateway: fresh.default_gateway.clone(),
                ip_address: fresh.ip_address.clone(),
                mac_address: fresh.mac_address.clone(),
                ..old.clone()
            },
            None => old.clone(),
        })
        .collect();
    merged.extend(
        new.iter()
            .filter(|fresh| !existing.iter().any(|old| same(old, fresh)))
            .cloned(),
    );
    merged
}

/// The annotation value for `interfaces`.
pub(crate) fn write(interfaces: &[NfnInterface]) -> String {
    let mut out = String::from("{\"type\":");
    gojson::write_string(&mut out, CNI_TYPE);
    out.push_str(",\"interface\":");
    if interfaces.is_empty() {
        // A nil Go slice.
        out.push_str("null}");
        return out;
    }
    out.push('[');
    for (position, interface) in interfaces.iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        out.push_str("{\"interface\":");
        gojson::write_string(&mut out, &interface.interface);
        out.push_str(",\"name\":");
        gojson::write_string(&mut out, &interface.name);
        out.push_str(",\"defaultGateway\":");
        gojson::write_string(&mut out, &interface.default_gateway);
        if !interface.ip_address.is_empty() {
            out.push_str(",\"ipAddress\":");
            gojson::write_string(&mut out, &interface.ip_address);
        }
        if !interface.mac_address.is_empty() {
            out.push_str(",\"macAddress\":");
            gojson::write_string(&mut out, &interface.mac_address);
        }
        out.push('}');
    }
    out.push_str("]}");
    out
}
