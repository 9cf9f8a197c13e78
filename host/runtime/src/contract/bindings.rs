//! The bindings of the contract in `wit/controller.wit` (0.2.0), as
//! wasmtime generates them from the WIT.

#![allow(missing_docs)]

mod placement_world {
    wasmtime::component::bindgen!({
        world: "placement-controller",
        path: "../../wit",
        additional_derives: [PartialEq],
    });
}

mod action_world {
    wasmtime::component::bindgen!({
        world: "action-controller",
        path: "../../wit",
        additional_derives: [PartialEq],
        with: {
            "wasmco:controller/types": super::placement_world::wasmco::controller::types,
        },
    });
}

mod gate_world {
    wasmtime::component::bindgen!({
        world: "gate-controller",
        path: "../../wit",
        additional_derives: [PartialEq],
        with: {
            "wasmco:controller/types": super::placement_world::wasmco::controller::types,
        },
    });
}

pub use action_world::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, AddResource, AppResources, ClusterResources, ClusterScope, Patch,
    PatchResource, RemoveResource,
};
pub use action_world::{ActionController, ActionControllerPre};
pub use gate_world::exports::wasmco::controller::gate::{Cell, GateRequest, Verdict, WaitFor};
pub use gate_world::{GateController, GateControllerPre};
pub use placement_world::exports::wasmco::controller::placement::{
    PlaceApp, PlacementEdit, PlacementRequest, UnplaceApp,
};
pub use placement_world::wasmco::controller::types::{
    AppPlacement, ClusterTable, ControllerError, NodeTable, Resource, ResourceRef, Strings,
};
pub use placement_world::{PlacementController, PlacementControllerPre};

impl NodeTable {
    /// The table of a request for a controller that does not ask for nodes.
    pub fn empty() -> Self {
        NodeTable {
            node_start: Vec::new(),
            name: Vec::new(),
            label_start: Vec::new(),
            label_key: Vec::new(),
            label_value: Vec::new(),
            resource_start: Vec::new(),
            resource: Vec::new(),
            amount: Vec::new(),
        }
    }
}

/// In an [`AppPlacement`]'s `groups`, a cluster that came from allOf.
pub const NO_GROUP: u32 = u32::MAX;
