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
    /// The name EMCO's own files register it under (by host and port),
    /// when it is one of EMCO's controllers.
    pub emco: Option<&'static str>,
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
        emco: None,
    },
    BuiltinController {
        name: "capacity-placement",
        kind: ControllerKind::Placement,
        priority: 10,
        wasm: guest!("capacity_placement.wasm"),
        emco: None,
    },
    BuiltinController {
        name: "gac",
        kind: ControllerKind::Action,
        priority: 10,
        wasm: guest!("gac.wasm"),
        emco: Some("gac"),
    },
    BuiltinController {
        name: "ovnaction",
        kind: ControllerKind::Action,
        priority: 10,
        wasm: guest!("ovnaction.wasm"),
        emco: Some("ovnaction"),
    },
    BuiltinController {
        name: "dtc",
        kind: ControllerKind::Action,
        priority: 10,
        wasm: guest!("dtc.wasm"),
        emco: Some("dtc"),
    },
    BuiltinController {
        name: "hpa-placement",
        kind: ControllerKind::Placement,
        priority: 10,
        wasm: guest!("hpa_placement.wasm"),
        emco: Some("hpa-placement-controller"),
    },
    BuiltinController {
        name: "hpa-action",
        kind: ControllerKind::Action,
        priority: 10,
        wasm: guest!("hpa_action.wasm"),
        emco: Some("hpa-action-controller"),
    },
    BuiltinController {
        name: "sfc",
        kind: ControllerKind::Action,
        priority: 20,
        wasm: guest!("sfc.wasm"),
        emco: Some("sfc"),
    },
    BuiltinController {
        name: "sfcclient",
        kind: ControllerKind::Action,
        priority: 20,
        wasm: guest!("sfcclient.wasm"),
        emco: Some("sfcclient"),
    },
];

/// The built-in controller EMCO's files mean by `name`: its EMCO name,
/// or that name with a suffix (`hpa-action-controller-1`), as EMCO's
/// examples number their instances.
pub fn for_emco_name(name: &str) -> Option<&'static BuiltinController> {
    BUILTINS.iter().find(|b| {
        b.emco.is_some_and(|emco| {
            name == emco
                || name
                    .strip_prefix(emco)
                    .is_some_and(|rest| rest.starts_with('-'))
        })
    })
}

/// The built-in controller called `name`.
pub fn builtin(name: &str) -> Option<&'static BuiltinController> {
    BUILTINS.iter().find(|b| b.name == name)
}
