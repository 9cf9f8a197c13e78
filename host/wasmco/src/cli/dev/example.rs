//! An example applied once the dev server is up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::console::{Console, say};
use crate::cli::apply::{RunOptions, apply};
use crate::cli::client::ApiClient;
use crate::cli::emcoctl::{self, Operation};
use crate::cli::error::CliError;
use crate::cli::status::{self, WatchOptions};

/// The directory of example `name`: a path as given, else `examples/NAME`.
pub fn find_example(name: &str) -> Result<PathBuf, CliError> {
    let direct = PathBuf::from(name);
    if direct.is_dir() {
        return Ok(direct);
    }
    let bundled = Path::new("examples").join(name);
    if bundled.is_dir() {
        return Ok(bundled);
    }
    let known: Vec<String> = std::fs::read_dir("examples")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("README.md").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    Err(CliError::Usage(if known.is_empty() {
        format!("no example `{name}`: give an example's directory (examples/ is not here)")
    } else {
        format!("no example `{name}`; examples: {}", known.join(", "))
    }))
}

/// Applies an example's documents, then follows its DIG until it is Ready.
pub fn run_example(
    client: &ApiClient,
    example: &Path,
    progress: bool,
    console: &Console,
) -> Result<(), CliError> {
    say(console, format!("Applying {}:", example.display()));
    let loaded = emcoctl::load(&[example.to_owned()], None)?;
    for warning in &loaded.warnings {
        say(console, format!("warning: {warning}"));
    }
    let documents = loaded.documents;
    let mut report = Vec::new();
    // A document wasmco does not have (EMCO's rsync by host and port, say)
    // is reported and the rest goes on, as `wasmco apply` does.
    let options = RunOptions {
        stop_on_error: false,
        terminate_timeout: Duration::from_secs(60),
    };
    let outcome = apply(client, &documents, options, &mut report);
    say(console, String::from_utf8_lossy(&report).trim_end());
    let tally = outcome?;
    if tally.failed > 0 {
        return Err(CliError::Usage(format!(
            "the example did not apply: {tally}"
        )));
    }
    for document in &documents {
        if let Operation::Action { dig, action, .. } = document.operation()
            && action.is_instantiate()
        {
            let mut shown = Vec::new();
            let watch = WatchOptions {
                watch: true,
                timeout: Duration::from_secs(120),
                progress,
            };
            let outcome = status::show(client, &format!("v2/{dig}"), &watch, &mut shown);
            say(console, String::from_utf8_lossy(&shown).trim_end());
            outcome?;
        }
    }
    Ok(())
}
