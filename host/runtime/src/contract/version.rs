//! The versions of the contract the host speaks, and the names by which a
//! component says which one it exports.

use wasmco_core::controllers::ControllerKind;

use super::v0_1;

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

    /// The versioned name a component of `kind` exports, if this version
    /// has that kind (0.1 had no gates).
    pub fn export(self, kind: ControllerKind) -> Option<&'static str> {
        match (self, kind) {
            (ContractVersion::V0_2, ControllerKind::Placement) => Some(PLACEMENT_EXPORT),
            (ContractVersion::V0_2, ControllerKind::Action) => Some(ACTION_EXPORT),
            (ContractVersion::V0_2, ControllerKind::Gate) => Some(GATE_EXPORT),
            (ContractVersion::V0_1, ControllerKind::Placement) => Some(v0_1::PLACEMENT_EXPORT),
            (ContractVersion::V0_1, ControllerKind::Action) => Some(v0_1::ACTION_EXPORT),
            (ContractVersion::V0_1, ControllerKind::Gate) => None,
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
                .any(|name| Some(name) == version.export(kind))
        })
    }
}

/// The versioned names a component exports for each world.
pub const PLACEMENT_EXPORT: &str = "wasmco:controller/placement@0.2.0";
/// See [`PLACEMENT_EXPORT`].
pub const ACTION_EXPORT: &str = "wasmco:controller/action@0.2.0";
/// See [`PLACEMENT_EXPORT`].
pub const GATE_EXPORT: &str = "wasmco:controller/gate@0.2.0";

/// The exports a component of `kind` may have, one per contract version,
/// newest first (for messages).
pub(crate) fn export_names(kind: ControllerKind) -> String {
    ContractVersion::ALL
        .iter()
        .filter_map(|version| version.export(kind))
        .collect::<Vec<_>>()
        .join(" or ")
}
