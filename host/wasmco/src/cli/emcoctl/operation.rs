//! What applying a document asks of the API.

use std::fmt;
use std::path::PathBuf;

use serde_json::{Value, json};
use wasmco_core::wire::{CertAction, CloudAction, DigAction, NetworkAction};
use wasmco_core::{BodyShape, Kind};

use super::document::Document;

/// The actions a document's anchor may end in: a DIG's, a logical
/// cloud's, a cluster's network intents' (`apply`).
pub const ACTIONS: [&str; 8] = [
    "approve",
    "instantiate",
    "update",
    "rollback",
    "terminate",
    "stop",
    "migrate",
    "apply",
];

/// What a document asks of the API.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// Create (or replace) a resource.
    Resource {
        /// Its kind.
        kind: Kind,
        /// The collection it is posted to.
        collection: String,
        /// Its own path.
        item: String,
        /// The request body (the multipart `metadata` part for multipart kinds).
        body: Value,
        /// Whether it travels as multipart.
        multipart: bool,
        /// Its files, each a multipart part named `part`.
        files: Vec<PathBuf>,
        /// `file`, or `files` for a declared intent kind that takes several.
        part: &'static str,
    },
    /// Nothing to send: what EMCO runs as a service is part of wasmco.
    Note {
        /// Why, for a person.
        reason: String,
    },
    /// An action on a DIG, a logical cloud, a cluster's networks or a
    /// caCert's stage.
    Action {
        /// The path of what it acts on.
        dig: String,
        /// The action.
        action: Action,
        /// Its body.
        body: Value,
    },
    /// Something wasmco does not have.
    Unsupported {
        /// Why, for a person.
        reason: String,
    },
}

/// An action a document's anchor ends in, by what it acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// On a deployment intent group.
    Dig(DigAction),
    /// On a logical cloud.
    Cloud(CloudAction),
    /// On a cluster's network intents.
    Network(NetworkAction),
    /// On a caCert's enrollment or distribution.
    Cert(CertAction),
}

impl Action {
    /// Its route segment, the last of the document's anchor.
    pub fn route(self) -> &'static str {
        match self {
            Action::Dig(action) => action.route(),
            Action::Cloud(action) => action.route(),
            Action::Network(action) => action.route(),
            Action::Cert(action) => action.route(),
        }
    }

    /// Whether it deploys what a `terminate` removes again, as an
    /// `instantiate` of anything does.
    pub fn is_instantiate(self) -> bool {
        matches!(
            self,
            Action::Dig(DigAction::Instantiate)
                | Action::Cloud(CloudAction::Instantiate)
                | Action::Cert(CertAction::Instantiate)
        )
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.route())
    }
}

impl Document {
    /// What applying this document asks of the API.
    pub fn operation(&self) -> Operation {
        if let Some(reason) = &self.unsupported {
            return Operation::Unsupported {
                reason: reason.clone(),
            };
        }
        if let Some(operation) = self.deployment_action().or_else(|| self.cert_action()) {
            return operation;
        }
        if let Some(reason) = built_into_wasmco(&self.anchor, self.name()) {
            return Operation::Note { reason };
        }
        self.resource()
            .unwrap_or_else(|reason| Operation::Unsupported { reason })
    }

    /// The action of an anchor that ends in one of [`ACTIONS`] after a DIG,
    /// a logical cloud or a cluster.
    fn deployment_action(&self) -> Option<Operation> {
        let (dig, action) = self.anchor.rsplit_once('/')?;
        if !ACTIONS.contains(&action) {
            return None;
        }
        let target = Kind::from_path(dig, true)?;
        let parsed = match target {
            Kind::DeploymentIntentGroup => DigAction::from_route(action).map(Action::Dig),
            Kind::LogicalCloud => CloudAction::from_route(action).map(Action::Cloud),
            Kind::Cluster => NetworkAction::from_route(action).map(Action::Network),
            _ => return None,
        };
        Some(match parsed {
            Some(action) => self.action(dig, action),
            None => Operation::Unsupported {
                reason: format!(
                    "wasmco has no `{action}` action for {}s",
                    target.info().title
                ),
            },
        })
    }

    /// EMCO's ca-certs act on a caCert's `enrollment` or `distribution`.
    fn cert_action(&self) -> Option<Operation> {
        let (stage, action) = self.anchor.rsplit_once('/')?;
        let (cert, step) = stage.rsplit_once('/')?;
        if !matches!(step, "enrollment" | "distribution")
            || !matches!(
                Kind::from_path(cert, true),
                Some(Kind::CaCert | Kind::ProjectCaCert)
            )
        {
            return None;
        }
        Some(match CertAction::from_route(action) {
            Some(parsed) => self.action(stage, Action::Cert(parsed)),
            None => Operation::Unsupported {
                reason: format!("a ca cert's {step} has no `{action}` action"),
            },
        })
    }

    fn action(&self, dig: &str, action: Action) -> Operation {
        Operation::Action {
            dig: dig.to_owned(),
            action,
            body: self.spec.clone().unwrap_or_else(|| json!({})),
        }
    }

    /// The resource the document creates or replaces; why wasmco cannot,
    /// otherwise.
    fn resource(&self) -> Result<Operation, String> {
        let anchor = &self.anchor;
        let spec = self.spec.clone().unwrap_or_else(|| json!({}));
        let kind = match Kind::from_path(anchor, false) {
            Some(kind) => kind,
            // A kind a controller declares, under a DIG: the server knows it.
            None if under_a_dig(anchor) => Kind::Intent,
            None => {
                return Err(format!(
                    "wasmco has no resources at `{anchor}` (it keeps EMCO's core resources \
                     and the intents its controllers declare; see `wasmco get --help` for \
                     the kinds it has)"
                ));
            }
        };
        let (name, body) = self.named_body(kind, &spec)?;
        let mut item = format!("{anchor}/{name}");
        if kind.is_versioned() {
            let version = spec
                .get("compositeAppVersion")
                .and_then(Value::as_str)
                .ok_or("a composite app document needs spec.compositeAppVersion")?;
            item.push('/');
            item.push_str(version);
        }
        let (multipart, part) = self.parts(kind)?;
        Ok(Operation::Resource {
            kind,
            collection: anchor.clone(),
            item,
            body,
            multipart,
            files: self.files.clone(),
            part,
        })
    }

    /// The resource's name and request body.
    fn named_body(&self, kind: Kind, spec: &Value) -> Result<(String, Value), String> {
        match kind.info().body {
            BodyShape::Label => match &self.cluster_label {
                Some(label) => Ok((label.clone(), json!({"clusterLabel": label}))),
                None => Err("a label document needs `clusterLabel` at its top level".into()),
            },
            _ => match self.name() {
                Some(name) => Ok((
                    name.to_owned(),
                    json!({"metadata": self.metadata, "spec": spec}),
                )),
                None => Err("the document has no metadata.name".into()),
            },
        }
    }

    /// Whether the resource travels as multipart, and the name of its
    /// files' parts.
    fn parts(&self, kind: Kind) -> Result<(bool, &'static str), String> {
        let files = &self.files;
        Ok(match kind.info().body {
            _ if kind.is_declared() => {
                (!files.is_empty(), if self.many { "files" } else { "file" })
            }
            BodyShape::Multipart(_) if files.len() > 1 => {
                return Err(format!(
                    "the document names {} files; a {} takes one `file`",
                    files.len(),
                    kind.info().title
                ));
            }
            // EMCO's registration by host and port travels as JSON; the
            // server binds the built-in component of that name.
            BodyShape::Multipart(_) if kind == Kind::Controller && files.is_empty() => {
                (false, "file")
            }
            BodyShape::Multipart(_) => (true, "file"),
            _ => (false, "file"),
        })
    }
}

/// Whether `anchor` lies below a deployment intent group.
fn under_a_dig(anchor: &str) -> bool {
    let dig_depth = Kind::DeploymentIntentGroup
        .item_route()
        .trim_start_matches("/v2/")
        .split('/')
        .count();
    let parts: Vec<&str> = anchor.split('/').collect();
    parts.len() > dig_depth
        && Kind::from_path(&parts[..dig_depth].join("/"), true) == Some(Kind::DeploymentIntentGroup)
}

/// What EMCO registers as a service that wasmco has inside it, and so
/// needs no registration: rsync, dtc's sub-controllers (part of its dtc
/// component), and CLM's controllers (wasmco reads clusters itself).
fn built_into_wasmco(anchor: &str, name: Option<&str>) -> Option<String> {
    match (anchor, name) {
        ("controllers", Some("rsync")) => {
            Some("EMCO's rsync is built into wasmco; there is nothing to register".into())
        }
        ("dtc-controllers", Some(name)) => Some(format!(
            "dtc's sub-controller {name} is part of wasmco's built-in dtc component"
        )),
        ("clm-controllers", Some(name)) => Some(format!(
            "{name} needs no cluster events: wasmco reads what it needs from the clusters \
             when the controller is called"
        )),
        _ => None,
    }
}
