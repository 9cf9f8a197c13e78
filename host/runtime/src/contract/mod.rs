//! The host side of the controller contract in `wit/controller.wit`.
//!
//! Both worlds share the `types` interface; the action bindings reuse the
//! placement bindings' types so a `Cluster` is one Rust type everywhere.

#![allow(missing_docs)]

mod interning;

pub use interning::{Interned, Interner};

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

pub use action_world::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, AddResource, AppResources, ClusterResources, ClusterScope, Patch,
    PatchResource, RemoveResource,
};
pub use action_world::{ActionController, ActionControllerPre};
pub use placement_world::exports::wasmco::controller::placement::{
    PlaceApp, PlacementEdit, PlacementRequest, UnplaceApp,
};
pub use placement_world::wasmco::controller::types::{
    AppPlacement, ClusterTable, ControllerError, PlacedCluster, Resource, ResourceRef, Strings,
};
pub use placement_world::{PlacementController, PlacementControllerPre};

/// The versioned names a component exports for each world.
pub const PLACEMENT_EXPORT: &str = "wasmco:controller/placement@0.1.0";
/// See [`PLACEMENT_EXPORT`].
pub const ACTION_EXPORT: &str = "wasmco:controller/action@0.1.0";
