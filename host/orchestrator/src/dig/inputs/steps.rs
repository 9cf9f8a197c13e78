//! The controllers an instantiate runs, in order, each with the intent
//! it is handed: the generic placement intent's, then each controller the
//! DIG's intents name, by kind and priority. A controller that declares
//! kinds of its own gets the tree of the group's intents of those kinds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::intents::{Need, ReferenceTarget};
use wasmco_core::specs::{
    ControllerSpec, DigIntentSpec, FAILOVER_KEY, GENERIC_PLACEMENT_KEY, ROLLOUT_KEY,
};
use wasmco_runtime::contract::ContractVersion;
use wasmco_runtime::{Controller, ControllerKind};
use wasmco_store::db::{ResourceDb, ResourceId};

use crate::draft::{ClusterInfo, ClusterNodes, NodeInfo};
use crate::error::{OrchestratorError, input};
use crate::intents::{Catalog, ClusterFacts, Declared, GroupIntents};
use crate::registry::{ControllerRegistry, LoadError};
use crate::target::DigRef;

/// A controller to run, with its intent and priority.
pub(crate) struct PlannedStep {
    pub(crate) controller: Arc<Controller>,
    pub(crate) intent: String,
    pub(crate) priority: u32,
    /// The clusters' nodes, when its declaration asks for them.
    pub(crate) nodes: Option<Arc<ClusterNodes>>,
}

/// Generic placement first, then the DIG's placement controllers and then
/// its action controllers, each by priority (lower first), then name.
pub(super) fn steps(
    db: &ResourceDb,
    registry: &ControllerRegistry,
    generic: &Arc<Controller>,
    dig: &DigRef,
    declared: &DeclaredInputs<'_>,
) -> Result<Vec<PlannedStep>, OrchestratorError> {
    let dig_path = dig.id().path;
    let mut intents: BTreeMap<String, String> = BTreeMap::new();
    for (_, dig_intent) in db.list_specs::<DigIntentSpec>(Kind::DigIntent, &dig_path)? {
        intents.extend(dig_intent.intent);
    }
    let app_intents = generic_placement(db, &dig_path, &mut intents)?;
    // Read by the build: they name no controller.
    intents.remove(FAILOVER_KEY);
    intents.remove(ROLLOUT_KEY);
    let mut placement = Vec::new();
    let mut action = Vec::new();
    // Read once, and only when a declaring controller is named.
    let mut group_intents: Option<GroupIntents> = None;
    for (name, intent_name) in intents {
        let controller = registry
            .current(&name, db)
            .map_err(|error| match error {
                LoadError::Db(error) => OrchestratorError::Db(error),
                error => input(error.to_string()),
            })?
            .ok_or_else(|| input(format!("controller {name} is not stored; upload it")))?;
        if controller.kind() == ControllerKind::Gate {
            return Err(gate_misplaced(&name));
        }
        let priority = db
            .spec::<ControllerSpec>(&ResourceId::new(Kind::Controller, vec![name.clone()]))?
            .priority;
        let mut intent_path = dig_path.clone();
        intent_path.push(intent_name.clone());
        let intent_id = ResourceId::new(Kind::ControllerIntent, intent_path);
        // A controller-intents document of that name is handed over as it
        // is, as before the controller declared kinds of its own.
        let (intent, nodes) = match (db.exists(&intent_id)?, declared.catalog.of(&name)) {
            (true, _) => (db.get(&intent_id)?["spec"].to_string(), None),
            (false, Some(declaration)) => {
                let group = match &mut group_intents {
                    Some(group) => group,
                    None => group_intents.insert(GroupIntents::read(db, &dig_path)?),
                };
                declared.tree(db, group, declaration, &intent_name, controller.contract())?
            }
            (false, None) => return Err(missing(Kind::ControllerIntent, &intent_name)),
        };
        let step = PlannedStep {
            controller,
            intent,
            priority,
            nodes,
        };
        match step.controller.kind() {
            ControllerKind::Placement => placement.push(step),
            ControllerKind::Action => action.push(step),
            ControllerKind::Gate => return Err(gate_misplaced(&name)),
        }
    }
    for group in [&mut placement, &mut action] {
        group.sort_by(|a, b| {
            (a.priority, a.controller.name()).cmp(&(b.priority, b.controller.name()))
        });
    }
    let mut steps = vec![PlannedStep {
        controller: generic.clone(),
        intent: json!({ "appIntents": app_intents }).to_string(),
        priority: 0,
        nodes: None,
    }];
    steps.extend(placement);
    steps.extend(action);
    Ok(steps)
}

/// Takes the generic placement intent out of the DIG's `intents`, which
/// must name one it has; its app intents.
fn generic_placement(
    db: &ResourceDb,
    dig_path: &[String],
    intents: &mut BTreeMap<String, String>,
) -> Result<Vec<Value>, OrchestratorError> {
    let gpi = intents.remove(GENERIC_PLACEMENT_KEY).ok_or_else(|| {
        input("the deployment intent group has no genericPlacementIntent in its intents")
    })?;
    let mut gpi_path = dig_path.to_vec();
    gpi_path.push(gpi.clone());
    if !db.exists(&ResourceId::new(
        Kind::GenericPlacementIntent,
        gpi_path.clone(),
    ))? {
        return Err(missing(Kind::GenericPlacementIntent, &gpi));
    }
    Ok(db
        .list(Kind::GenericAppIntent, &gpi_path)?
        .into_iter()
        .map(|(_, body)| json!({"app": body["spec"]["app"], "intent": body["spec"]["intent"]}))
        .collect())
}

/// A gate named where controllers that build the context go.
fn gate_misplaced(name: &str) -> OrchestratorError {
    input(format!(
        "the deployment intent group's intents name {name}, a gate controller: \
         name it in a rollout intent's gates instead"
    ))
}

/// The intent of `kind` the DIG's intents name under `key` (a built-in
/// one, not a controller's: failover, rollout), if they name one.
pub(crate) fn builtin_intent<T: serde::de::DeserializeOwned>(
    db: &ResourceDb,
    dig: &DigRef,
    key: &str,
    kind: Kind,
) -> Result<Option<T>, OrchestratorError> {
    let dig_path = dig.id().path;
    let named = db
        .list_specs::<DigIntentSpec>(Kind::DigIntent, &dig_path)?
        .into_iter()
        .find_map(|(_, spec)| spec.intent.get(key).cloned());
    let Some(name) = named else {
        return Ok(None);
    };
    let mut path = dig_path;
    path.push(name.clone());
    let id = ResourceId::new(kind, path);
    if !db.exists(&id)? {
        return Err(missing(kind, &name));
    }
    Ok(Some(db.spec(&id)?))
}

/// Intents are named by the DIG's intents document, which may come
/// before them (as in EMCO's files): missing ones are found here.
fn missing(kind: Kind, name: &str) -> OrchestratorError {
    input(format!(
        "the deployment intent group's intents name {} {name}, which it does not have",
        kind.info().title
    ))
}

/// What a declaring controller's tree is built from.
pub(super) struct DeclaredInputs<'a> {
    pub(super) catalog: Arc<Catalog>,
    /// The group's identity, as the tree carries it.
    pub(super) group: Value,
    pub(super) apps: BTreeSet<String>,
    pub(super) clusters: &'a [ClusterInfo],
    pub(super) facts: &'a dyn ClusterFacts,
    /// The clusters' nodes, read the first time a controller asks.
    pub(super) nodes: std::cell::OnceCell<ReadNodes>,
}

/// The clusters' nodes as read for the controllers that ask for them.
pub(super) struct ReadNodes {
    /// By cluster index, for the node table of a 0.2.0 request.
    table: Arc<ClusterNodes>,
    /// By `provider+cluster`, as 0.1.0 controllers get them in the tree's
    /// `facts`; a cluster that could not be read is left out.
    json: serde_json::Map<String, Value>,
}

impl DeclaredInputs<'_> {
    /// The tree `declared` gets for the intents named `name` (and the
    /// clusters' nodes, for a 0.2.0 controller that asks for them), once every
    /// reference in it resolves (a 422 naming each that does not, as EMCO
    /// refuses at instantiate).
    fn tree(
        &self,
        db: &ResourceDb,
        group: &GroupIntents,
        declared: &Declared,
        name: &str,
        contract: ContractVersion,
    ) -> Result<(String, Option<Arc<ClusterNodes>>), OrchestratorError> {
        let project = self.group["project"].as_str().unwrap_or_default();
        let exists = |to: ReferenceTarget, target: &str, provider: Option<&str>| {
            let id = match to {
                ReferenceTarget::App => return Ok(self.apps.contains(target)),
                ReferenceTarget::ClusterProvider => {
                    ResourceId::new(Kind::ClusterProvider, vec![target.to_owned()])
                }
                ReferenceTarget::Cluster => ResourceId::new(
                    Kind::Cluster,
                    vec![provider.unwrap_or_default().to_owned(), target.to_owned()],
                ),
                ReferenceTarget::LogicalCloud => ResourceId::new(
                    Kind::LogicalCloud,
                    vec![project.to_owned(), target.to_owned()],
                ),
            };
            db.exists(&id)
        };
        let broken = group.broken_references(declared, &exists)?;
        if !broken.is_empty() {
            return Err(input(format!(
                "controller {}'s intents name what does not exist: {}",
                declared.controller,
                broken.join("; ")
            )));
        }
        let mut facts = json!({});
        let mut nodes = None;
        if declared.declaration.needs.contains(&Need::Nodes) {
            let read = self.nodes();
            match contract {
                ContractVersion::V0_2 => nodes = Some(read.table.clone()),
                ContractVersion::V0_1 => facts["nodes"] = Value::Object(read.json.clone()),
            }
        }
        let mut tree = group.tree(declared, name, self.group.clone(), facts);
        let across = &declared.declaration.reads_across;
        if !across.is_empty() {
            tree["others"] = Value::Array(self.other_groups(db, across)?);
        }
        Ok((tree.to_string(), nodes))
    }

    /// The clusters' nodes, read once for every controller that asks.
    fn nodes(&self) -> &ReadNodes {
        self.nodes.get_or_init(|| {
            let references: Vec<_> = self.clusters.iter().map(|c| c.reference()).collect();
            let answers = self.facts.nodes_of(&references);
            let mut table = Vec::with_capacity(references.len());
            let mut json = serde_json::Map::new();
            for (reference, answer) in references.iter().zip(answers) {
                match answer {
                    Ok(found) => {
                        table.push(NodeInfo::list_from_json(&found));
                        json.insert(reference.to_string(), found);
                    }
                    // Placement decides without them: a cluster it cannot
                    // read has no capacity it can count on.
                    Err(reason) => {
                        tracing::warn!(cluster = %reference, %reason, "cannot read the cluster's nodes");
                        table.push(Vec::new());
                    }
                }
            }
            ReadNodes {
                table: Arc::new(table),
                json,
            }
        })
    }

    /// The intents of `segments` in the project's other deployment intent
    /// groups, each group with its identity; groups without any are left out.
    fn other_groups(
        &self,
        db: &ResourceDb,
        segments: &[String],
    ) -> Result<Vec<Value>, OrchestratorError> {
        let project = self.group["project"].as_str().unwrap_or_default();
        let mut others = Vec::new();
        for (id, _) in db.list_under(Kind::DeploymentIntentGroup, &[project.to_owned()])? {
            let [_, composite_app, version, name] = id.path.as_slice() else {
                continue;
            };
            let this = self.group["compositeApp"] == composite_app.as_str()
                && self.group["compositeAppVersion"] == version.as_str()
                && self.group["name"] == name.as_str();
            if this {
                continue;
            }
            let intents = GroupIntents::read(db, &id.path)?.top_of(segments);
            if !intents.is_empty() {
                others.push(json!({
                    "compositeApp": composite_app,
                    "compositeAppVersion": version,
                    "name": name,
                    "intents": intents,
                }));
            }
        }
        Ok(others)
    }
}
