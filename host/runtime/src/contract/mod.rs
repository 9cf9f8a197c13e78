//! The host side of the controller contract in `wit/controller.wit`.
//!
//! Both worlds share the `types` interface; the action bindings reuse the
//! placement bindings' types so a `Cluster` is one Rust type everywhere.

#![allow(missing_docs)]

mod interning;
pub mod v0_1;

pub use interning::{Interned, Interner};
use wasmco_core::controllers::ControllerKind;

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
    AppPlacement, ClusterTable, ControllerError, NodeTable, Resource, ResourceRef, Strings,
};

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
pub use placement_world::{PlacementController, PlacementControllerPre};

/// In an [`AppPlacement`]'s `groups`, a cluster that came from allOf.
pub const NO_GROUP: u32 = u32::MAX;

/// A version of the contract the host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContractVersion {
    /// `wit/controller.wit`: placements as columns.
    V0_2,
    /// Placements as lists of records; components built against it keep
    /// working, their requests and answers converted (see [`v0_1`]).
    V0_1,
}

impl ContractVersion {
    /// Newest first: a component exporting both is called as the newest.
    pub const ALL: [ContractVersion; 2] = [ContractVersion::V0_2, ContractVersion::V0_1];

    /// The versioned name a component of `kind` exports.
    pub fn export(self, kind: ControllerKind) -> &'static str {
        match (self, kind) {
            (ContractVersion::V0_2, ControllerKind::Placement) => PLACEMENT_EXPORT,
            (ContractVersion::V0_2, ControllerKind::Action) => ACTION_EXPORT,
            (ContractVersion::V0_1, ControllerKind::Placement) => v0_1::PLACEMENT_EXPORT,
            (ContractVersion::V0_1, ControllerKind::Action) => v0_1::ACTION_EXPORT,
        }
    }

    /// The newest version whose `kind` export is among `exports`.
    pub fn exported<'a>(
        kind: ControllerKind,
        exports: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Option<ContractVersion> {
        ContractVersion::ALL.into_iter().find(|version| {
            exports
                .clone()
                .into_iter()
                .any(|name| name == version.export(kind))
        })
    }
}

/// The versioned names a component exports for each world.
pub const PLACEMENT_EXPORT: &str = "wasmco:controller/placement@0.2.0";
/// See [`PLACEMENT_EXPORT`].
pub const ACTION_EXPORT: &str = "wasmco:controller/action@0.2.0";
