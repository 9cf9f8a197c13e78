//! Where the dev server writes what it has to say.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Where the dev server writes what it has to say.
pub type Console = Arc<Mutex<dyn Write + Send>>;

/// Writes one line to the console.
pub fn say(console: &Console, line: impl AsRef<str>) {
    let mut out = console.lock().unwrap_or_else(|p| p.into_inner());
    // The console is stdout; if it is gone there is no one to tell.
    let _ = writeln!(out, "{}", line.as_ref());
    let _ = out.flush();
}

/// What to try once the dev server is up.
pub fn say_next_steps(console: &Console, kubeconfig: &Path) {
    say(console, "Next:");
    say(
        console,
        "  wasmco apply -f examples/hello      # an app on the edge clusters",
    );
    say(
        console,
        "  wasmco status hello                 # until it is Ready",
    );
    say(
        console,
        format!(
            "  kubectl --kubeconfig {} get deployments",
            kubeconfig.display()
        ),
    );
}
