//! Where the test guests (components that misbehave or import what the
//! sandbox forbids) are, built for the tests and for nothing else, so a
//! release build of wasmco never compiles them.

/// The directory holding the test guests' `.wasm` files
/// (`guest_hostile.wasm`, `guest_fs_import.wasm`, `guest_socket_import.wasm`,
/// `guest_contract_0_1.wasm`).
pub const DIR: &str = env!("WASMCO_TEST_GUEST_DIR");
