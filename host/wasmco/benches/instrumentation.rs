//! What metrics and tracing cost: the `api_get` and `instantiate` loads
//! with instrumentation off and on, side by side in one run. The modes take
//! turns round by round (in a rotating order) so that drift of the machine
//! falls on all of them; each figure is the median of its rounds.
//!
//! `cargo bench -p wasmco --bench instrumentation`
//!
//! - off: no metrics recorded, no log level enabled;
//! - on: every metric recorded, spans and logs at `warn`, as `wasmco serve`
//!   runs by default (the 3% bound is this one's);
//! - info logs: on, plus `info` logs written as JSON (to a sink: the
//!   formatting is what costs), which put a line per API request (the
//!   audit event) and per reconcile: shown, not bounded.

use std::time::{Duration, Instant};

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::reload;
use tracing_subscriber::util::SubscriberInitExt;

mod support;

use wasmco::startup;

const BOUND: f64 = 0.97;
const GET_ROUNDS: usize = 10;
const GET_PHASE: Duration = Duration::from_millis(1500);
const CONNECTIONS: usize = 64;
const INSTANTIATE_ROUNDS: usize = 12;
const CLUSTERS: usize = 1_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    On,
    InfoLogs,
}

const MODES: [Mode; 3] = [Mode::Off, Mode::On, Mode::InfoLogs];

/// Switches metrics and the log level together.
struct Switch(reload::Handle<LevelFilter, tracing_subscriber::Registry>);

impl Switch {
    fn install() -> Switch {
        let (level, handle) = reload::Layer::new(LevelFilter::OFF);
        tracing_subscriber::registry()
            .with(level)
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::sink),
            )
            .init();
        Switch(handle)
    }

    fn set(&self, mode: Mode) {
        wasmco_core::instrumentation::set_recording(mode != Mode::Off);
        let level = match mode {
            Mode::Off => LevelFilter::OFF,
            Mode::On => LevelFilter::WARN,
            Mode::InfoLogs => LevelFilter::INFO,
        };
        self.0.reload(level).expect("the log level reloads");
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs `round` in each mode, `rounds` times each, the order rotating; the
/// median figure of each mode, in `MODES`' order.
fn take_turns(switch: &Switch, rounds: usize, mut round: impl FnMut(Mode) -> f64) -> [f64; 3] {
    let mut figures: [Vec<f64>; 3] = Default::default();
    for i in 0..rounds {
        for k in 0..MODES.len() {
            let at = (i + k) % MODES.len();
            switch.set(MODES[at]);
            figures[at].push(round(MODES[at]));
        }
    }
    figures.map(median)
}

fn verdict(ratio: f64) -> &'static str {
    if ratio >= BOUND {
        "within the 3% bound"
    } else {
        "OUTSIDE the 3% bound"
    }
}

fn api_get(switch: &Switch) {
    let support::GetTarget {
        addr,
        token,
        client,
        ..
    } = support::serve_for_gets();
    let mut p99s: [Vec<f64>; 3] = Default::default();
    let [off, on, info] = take_turns(switch, GET_ROUNDS, |mode| {
        let phase = client.block_on(support::load(
            CONNECTIONS,
            GET_PHASE,
            addr,
            "/v2/cluster-providers/edge/clusters/cluster-042",
            token.clone(),
        ));
        p99s[MODES.iter().position(|m| *m == mode).unwrap_or(0)]
            .push(phase.p99.as_secs_f64() * 1e3);
        phase.rate()
    });
    let [p99_off, p99_on, p99_info] = p99s.map(median);
    println!(
        "  GET one cluster, {CONNECTIONS} connections, {GET_ROUNDS} rounds of {:.1}s per mode:",
        GET_PHASE.as_secs_f64()
    );
    println!("    off        {off:>8.0} req/s  p99 {p99_off:.2} ms");
    println!(
        "    on         {on:>8.0} req/s  p99 {p99_on:.2} ms  {:.3}x off: {}",
        on / off,
        verdict(on / off)
    );
    println!(
        "    info logs  {info:>8.0} req/s  p99 {p99_info:.2} ms  {:.3}x off",
        info / off
    );
}

fn instantiate(switch: &Switch) {
    let data = tempfile::tempdir().expect("temp dir");
    let state = startup::open_state(data.path(), None, Default::default()).expect("state");
    let dig = support::approved_dig_at_scale(&state, CLUSTERS);
    let [off, on, info] = take_turns(switch, INSTANTIATE_ROUNDS, |_| {
        let started = Instant::now();
        state
            .orchestrator
            .instantiate(&dig, wasmco_orchestrator::Actor::Admin)
            .expect("instantiate");
        let took = started.elapsed().as_secs_f64() * 1e3;
        state.orchestrator.terminate(&dig).expect("terminate");
        took
    });
    // Times: lower is better, so the ratios are off over the mode's, as
    // speeds compared above.
    println!(
        "  instantiate, {} apps x {CLUSTERS} clusters, {INSTANTIATE_ROUNDS} rounds per mode:",
        support::APPS
    );
    println!("    off        {off:>8.1} ms");
    println!(
        "    on         {on:>8.1} ms  {:.3}x off: {}",
        off / on,
        verdict(off / on)
    );
    println!("    info logs  {info:>8.1} ms  {:.3}x off", off / info);
}

fn main() {
    let switch = Switch::install();
    println!("Instrumentation cost (speed of each mode over speed off; bound {BOUND} for on):");
    api_get(&switch);
    instantiate(&switch);
}
