//! A placement controller that misbehaves on request, for the runtime's
//! sandbox tests. The intent says what to do: `{"do": "loop"}` and so on.
#![allow(missing_docs)]

wit_bindgen::generate!({
    world: "placement-controller",
    path: "../../../wit",
});

use exports::wasmco::controller::placement::{Guest, PlaceApp, PlacementEdit, PlacementRequest};
use wasmco::controller::types::ControllerError;

struct Hostile;

impl Guest for Hostile {
    fn place(request: PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
        let intent: serde_json::Value = serde_json::from_str(&request.intent).unwrap_or_default();
        let strings = wasmco_guest::StringTable::new(&request.strings.data, &request.strings.ends);
        let first_app = strings.get(request.apps[0]).to_owned();
        let place = |app: &str, clusters: Vec<u32>| {
            Ok(vec![PlacementEdit::Place(PlaceApp {
                app: app.into(),
                clusters,
                group: None,
            })])
        };
        match intent["do"].as_str().unwrap_or("ok") {
            "loop" => loop {
                std::hint::black_box(&request);
            },
            "grow" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            // Busy for a while, then an ordinary answer: `spins` turns of a
            // loop (a guest has no clock to wait on).
            "slow" => {
                let spins = intent["spins"].as_u64().unwrap_or(1 << 30);
                let mut sum = 0u64;
                for turn in 0..spins {
                    sum = std::hint::black_box(sum.wrapping_add(turn));
                }
                std::hint::black_box(sum);
                place(&first_app, vec![0])
            }
            "panic" => panic!("hostile guest gave up: {}", request.apps.len()),
            "print" => {
                for i in 0..100_000 {
                    println!("line {i} of a very chatty controller");
                }
                place(&first_app, vec![0])
            }
            "error" => Err(ControllerError {
                message: "I refuse".into(),
            }),
            "huge-error" => Err(ControllerError {
                message: "x".repeat(50 << 20),
            }),
            // 25 MiB of control characters: quoted with escapes, it would
            // grow six times over.
            "huge-app" => place(&"\u{1}".repeat(25 << 20), vec![0]),
            // One cluster listed a million times.
            "repeat" => place(&first_app, vec![0; 1 << 20]),
            "bad-app" => place("no-such-app", vec![0]),
            "bad-cluster" => place(&first_app, vec![u32::MAX]),
            // One good edit followed by a bad one: nothing may be applied.
            "half-bad" => Ok(vec![
                PlacementEdit::Place(PlaceApp {
                    app: first_app.clone(),
                    clusters: vec![0],
                    group: None,
                }),
                PlacementEdit::Place(PlaceApp {
                    app: "no-such-app".into(),
                    clusters: vec![0],
                    group: None,
                }),
            ]),
            _ => place(&first_app, vec![0]),
        }
    }
}

// Only a component has these exports: on the host, `cargo build --workspace`
// links this crate too, and the linker cannot take the WIT export names.
#[cfg(target_arch = "wasm32")]
export!(Hostile);
