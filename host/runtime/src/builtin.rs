//! The controllers that ship with wasmco, embedded in the binary.

use crate::ControllerKind;

/// A controller compiled into the binary.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinController {
    /// The name it is registered under.
    pub name: &'static str,
    /// Placement or action.
    pub kind: ControllerKind,
    /// EMCO-style priority: lower runs first within its kind.
    pub priority: u32,
    /// The component.
    pub wasm: &'static [u8],
}

/// Where the build put the shipped controllers' components (the tests
/// load them from there as files).
pub const PLUGIN_DIR: &str = env!("WASMCO_PLUGIN_DIR");

macro_rules! guest {
    ($file:literal) => {
        include_bytes!(concat!(env!("WASMCO_PLUGIN_DIR"), "/", $file))
    };
}

/// Every built-in controller.
pub const BUILTINS: &[BuiltinController] = &[
    BuiltinController {
        name: "generic-placement",
        kind: ControllerKind::Placement,
        priority: 0,
        wasm: guest!("generic_placement.wasm"),
    },
    BuiltinController {
        name: "capacity-placement",
        kind: ControllerKind::Placement,
        priority: 10,
        wasm: guest!("capacity_placement.wasm"),
    },
    BuiltinController {
        name: "gac",
        kind: ControllerKind::Action,
        priority: 10,
        wasm: guest!("gac.wasm"),
    },
];

/// The built-in controller called `name`.
pub fn builtin(name: &str) -> Option<&'static BuiltinController> {
    BUILTINS.iter().find(|b| b.name == name)
}
