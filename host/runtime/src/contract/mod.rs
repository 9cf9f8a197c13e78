//! The host side of the controller contract in `wit/controller.wit`.
//!
//! Both worlds share the `types` interface; the action bindings reuse the
//! placement bindings' types so a `Cluster` is one Rust type everywhere.

mod bindings;
mod gate;
mod interning;
pub mod v0_1;
mod version;

pub use bindings::{
    ActionController, ActionControllerPre, ActionEdit, ActionRequest, AddResource, AppPlacement,
    AppResources, Cell, ClusterResources, ClusterScope, ClusterTable, ControllerError,
    GateController, GateControllerPre, GateRequest, NO_GROUP, NodeTable, Patch, PatchResource,
    PlaceApp, PlacementController, PlacementControllerPre, PlacementEdit, PlacementRequest,
    RemoveResource, Resource, ResourceRef, Strings, UnplaceApp, Verdict, WaitFor,
};
pub use gate::{GateCell, GateFacts};
pub use interning::{Interned, Interner};
pub(crate) use version::export_names;
pub use version::{ACTION_EXPORT, ContractVersion, GATE_EXPORT, PLACEMENT_EXPORT};
