//! The contract of before, `wasmco:controller@0.1.0` (kept in
//! `host/runtime/wit/0.1.0`), for components built against it: each
//! request is converted to its shapes and each answer back. The two differ
//! only in how a placement travels (0.1.0: a list of `placed-cluster`
//! records); every other type is the same, field for field.

#![allow(missing_docs)]

use super::{
    ActionEdit, ActionRequest, AddResource, AppPlacement, AppResources, ClusterResources,
    ClusterScope, ClusterTable, ControllerError, NO_GROUP, Patch, PatchResource, PlaceApp,
    PlacementEdit, PlacementRequest, RemoveResource, Resource, ResourceRef, Strings, UnplaceApp,
};

mod placement_world {
    wasmtime::component::bindgen!({
        world: "placement-controller",
        path: "wit/0.1.0",
    });
}

mod action_world {
    wasmtime::component::bindgen!({
        world: "action-controller",
        path: "wit/0.1.0",
        with: {
            "wasmco:controller/types": super::placement_world::wasmco::controller::types,
        },
    });
}

use action_world::exports::wasmco::controller::action as old_action;
use placement_world::exports::wasmco::controller::placement as old_placement;
use placement_world::wasmco::controller::types as old;

pub use action_world::ActionControllerPre;
pub use placement_world::PlacementControllerPre;

/// The names a 0.1.0 component exports.
pub const PLACEMENT_EXPORT: &str = "wasmco:controller/placement@0.1.0";
/// See [`PLACEMENT_EXPORT`].
pub const ACTION_EXPORT: &str = "wasmco:controller/action@0.1.0";

/// A placement request as 0.1.0 spells it.
pub fn placement_request(request: &PlacementRequest) -> old_placement::PlacementRequest {
    old_placement::PlacementRequest {
        strings: strings(&request.strings),
        intent: request.intent.clone(),
        apps: request.apps.clone(),
        clusters: cluster_table(&request.clusters),
        current: request.current.iter().map(app_placement).collect(),
    }
}

/// An action request as 0.1.0 spells it.
pub fn action_request(request: &ActionRequest) -> old_action::ActionRequest {
    old_action::ActionRequest {
        strings: strings(&request.strings),
        intent: request.intent.clone(),
        apps: request.apps.clone(),
        clusters: cluster_table(&request.clusters),
        placements: request.placements.iter().map(app_placement).collect(),
        resources: request.resources.iter().map(app_resources).collect(),
    }
}

/// A 0.1.0 placement answer.
pub fn placement_answer(
    answer: Result<Vec<old_placement::PlacementEdit>, old::ControllerError>,
) -> Result<Vec<PlacementEdit>, ControllerError> {
    answer
        .map(|edits| {
            edits
                .into_iter()
                .map(|edit| match edit {
                    old_placement::PlacementEdit::Place(place) => PlacementEdit::Place(PlaceApp {
                        app: place.app,
                        clusters: place.clusters,
                        group: place.group,
                    }),
                    old_placement::PlacementEdit::Unplace(unplace) => {
                        PlacementEdit::Unplace(UnplaceApp {
                            app: unplace.app,
                            clusters: unplace.clusters,
                        })
                    }
                })
                .collect()
        })
        .map_err(controller_error)
}

/// A 0.1.0 action answer.
pub fn action_answer(
    answer: Result<Vec<old_action::ActionEdit>, old::ControllerError>,
) -> Result<Vec<ActionEdit>, ControllerError> {
    let scope = |scope: old_action::ClusterScope| match scope {
        old_action::ClusterScope::All => ClusterScope::All,
        old_action::ClusterScope::Only(clusters) => ClusterScope::Only(clusters),
    };
    let target = |target: old::ResourceRef| ResourceRef {
        kind: target.kind,
        name: target.name,
    };
    answer
        .map(|edits| {
            edits
                .into_iter()
                .map(|edit| match edit {
                    old_action::ActionEdit::Add(add) => ActionEdit::Add(AddResource {
                        app: add.app,
                        scope: scope(add.scope),
                        manifest: add.manifest,
                    }),
                    old_action::ActionEdit::Patch(patch) => ActionEdit::Patch(PatchResource {
                        app: patch.app,
                        scope: scope(patch.scope),
                        target: target(patch.target),
                        patch: match patch.patch {
                            old_action::Patch::JsonPatch(text) => Patch::JsonPatch(text),
                            old_action::Patch::MergePatch(text) => Patch::MergePatch(text),
                        },
                    }),
                    old_action::ActionEdit::Remove(remove) => ActionEdit::Remove(RemoveResource {
                        app: remove.app,
                        scope: scope(remove.scope),
                        target: target(remove.target),
                    }),
                })
                .collect()
        })
        .map_err(controller_error)
}

fn controller_error(error: old::ControllerError) -> ControllerError {
    ControllerError {
        message: error.message,
    }
}

fn strings(strings: &Strings) -> old::Strings {
    old::Strings {
        data: strings.data.clone(),
        ends: strings.ends.clone(),
    }
}

fn cluster_table(table: &ClusterTable) -> old::ClusterTable {
    old::ClusterTable {
        provider: table.provider.clone(),
        name: table.name.clone(),
        label_start: table.label_start.clone(),
        labels: table.labels.clone(),
        kv_start: table.kv_start.clone(),
        kv_key: table.kv_key.clone(),
        kv_value: table.kv_value.clone(),
    }
}

fn app_placement(placement: &AppPlacement) -> old::AppPlacement {
    let group = |position: usize| {
        placement
            .groups
            .get(position)
            .copied()
            .filter(|&group| group != NO_GROUP)
    };
    old::AppPlacement {
        app: placement.app,
        clusters: placement
            .clusters
            .iter()
            .enumerate()
            .map(|(position, &cluster)| old::PlacedCluster {
                cluster,
                group: group(position),
            })
            .collect(),
    }
}

fn resource(resource: &Resource) -> old::Resource {
    old::Resource {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        name: resource.name.clone(),
        namespace: resource.namespace.clone(),
        manifest: resource.manifest.clone(),
    }
}

fn app_resources(resources: &AppResources) -> old_action::AppResources {
    old_action::AppResources {
        app: resources.app,
        base: resources.base.iter().map(resource).collect(),
        differing: resources
            .differing
            .iter()
            .map(
                |differing: &ClusterResources| old_action::ClusterResources {
                    cluster: differing.cluster,
                    resources: differing.resources.iter().map(resource).collect(),
                },
            )
            .collect(),
    }
}
