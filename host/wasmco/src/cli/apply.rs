//! `wasmco apply -f` and `wasmco delete -f`: emcoctl documents sent to the API.

use std::io::Write;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use wasmco_core::Kind;
use wasmco_core::wire::{
    CertAction, CloudAction, DeployState, DeploymentState, DeploymentStatus, DigAction,
    NetworkAction,
};

use super::client::{ApiClient, ClientError, Upload};
use super::emcoctl::{Action, Document, Operation};
use super::error::CliError;
use super::status::{Snapshot, WatchOptions};

/// How a run goes.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// Stop at the first failure (`-s`).
    pub stop_on_error: bool,
    /// How long `delete` waits for a terminate to finish.
    pub terminate_timeout: Duration,
}

/// What a run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Documents that changed something.
    pub done: usize,
    /// Documents with nothing to do.
    pub skipped: usize,
    /// Documents for things wasmco does not have.
    pub unsupported: usize,
    /// Documents that failed.
    pub failed: usize,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} done, {} skipped, {} unsupported, {} failed",
            self.done, self.skipped, self.unsupported, self.failed
        )
    }
}

/// What became of one document.
pub(super) enum Outcome {
    Done(String),
    Skipped(String),
    Unsupported(String),
}

/// Applies `documents` in order: creates each resource (replacing one that
/// exists) and posts each action.
pub fn apply(
    client: &ApiClient,
    documents: &[Document],
    options: RunOptions,
    out: &mut dyn Write,
) -> Result<Tally, CliError> {
    run(documents.iter(), anchored, options, out, |doc| {
        apply_one(client, doc)
    })
}

/// Replaces each resource `documents` describe (emcoctl's `update`: a PUT,
/// so one that does not exist is a failure); actions are not posted.
pub fn update(
    client: &ApiClient,
    documents: &[Document],
    options: RunOptions,
    out: &mut dyn Write,
) -> Result<Tally, CliError> {
    run(documents.iter(), anchored, options, out, |doc| {
        update_one(client, doc)
    })
}

/// Undoes `documents` in reverse order: deletes each resource (one already
/// gone is skipped) and terminates a DIG the documents instantiated,
/// waiting until its resources are gone before deleting the DIG.
pub fn delete(
    client: &ApiClient,
    documents: &[Document],
    options: RunOptions,
    out: &mut dyn Write,
) -> Result<Tally, CliError> {
    run(documents.iter().rev(), anchored, options, out, |doc| {
        delete_one(client, doc, options.terminate_timeout)
    })
}

fn anchored(document: &Document) -> String {
    format!("{} ({})", document.anchor, document.origin)
}

/// Runs `each` over `documents`, reporting each (named by `label`) and
/// counting what it came to.
pub(super) fn run<'a, T: 'a>(
    documents: impl Iterator<Item = &'a T>,
    label: impl Fn(&T) -> String,
    options: RunOptions,
    out: &mut dyn Write,
    mut each: impl FnMut(&T) -> Result<Outcome, CliError>,
) -> Result<Tally, CliError> {
    let mut tally = Tally::default();
    for document in documents {
        // What to print, and why `-s` stops here (when it does).
        let (verdict, detail, stop) = match each(document) {
            Ok(Outcome::Done(what)) => {
                tally.done += 1;
                writeln!(out, "{what}")?;
                out.flush()?;
                continue;
            }
            Ok(Outcome::Skipped(why)) => {
                tally.skipped += 1;
                ("skipped", why, None)
            }
            Ok(Outcome::Unsupported(why)) => {
                tally.unsupported += 1;
                (
                    "unsupported",
                    why,
                    Some("the first document wasmco cannot apply"),
                )
            }
            Err(error) => {
                tally.failed += 1;
                ("failed", error.to_string(), Some("the first failure"))
            }
        };
        writeln!(out, "{verdict:<12}{}: {detail}", label(document))?;
        out.flush()?;
        if let Some(reason) = stop.filter(|_| options.stop_on_error) {
            return Err(CliError::Usage(format!(
                "stopped at {reason} (-s): {tally}"
            )));
        }
    }
    Ok(tally)
}

fn apply_one(client: &ApiClient, document: &Document) -> Result<Outcome, CliError> {
    match document.operation() {
        Operation::Unsupported { reason } => Ok(Outcome::Unsupported(reason)),
        Operation::Action { dig, action, body } => {
            match client.post_as::<DeploymentState>(&format!("v2/{dig}/{action}"), &body) {
                Ok(answer) => Ok(Outcome::Done(format!(
                    "{action:<12}{dig}: {}",
                    answer.deployed_status
                ))),
                // Applying a file twice meets a DIG already past this step;
                // any other state the action is refused in is a failure.
                Err(error)
                    if error.status() == Some(StatusCode::CONFLICT)
                        && already_done(client, &dig, action) =>
                {
                    Ok(Outcome::Skipped(api_message(&error)))
                }
                Err(error) => Err(error.into()),
            }
        }
        Operation::Note { reason } => Ok(Outcome::Skipped(reason)),
        Operation::Resource {
            kind,
            collection,
            item,
            body,
            multipart,
            files,
            part,
        } => {
            let uploads = uploads(kind, multipart, &files, part)?;
            let created = client.create_or_replace(
                &format!("v2/{collection}"),
                &format!("v2/{item}"),
                &body,
                multipart,
                uploads,
            )?;
            let verb = if created { "created" } else { "updated" };
            Ok(Outcome::Done(format!("{verb:<12}{item}")))
        }
    }
}

fn update_one(client: &ApiClient, document: &Document) -> Result<Outcome, CliError> {
    match document.operation() {
        Operation::Unsupported { reason } => Ok(Outcome::Unsupported(reason)),
        Operation::Action { action, .. } => Ok(Outcome::Skipped(format!(
            "{action} is an action; update only replaces resources"
        ))),
        Operation::Note { reason } => Ok(Outcome::Skipped(reason)),
        Operation::Resource {
            kind,
            item,
            body,
            multipart,
            files,
            part,
            ..
        } => {
            let uploads = uploads(kind, multipart, &files, part)?;
            let path = format!("v2/{item}");
            match multipart {
                true => client.upload(&path, true, &body, uploads)?,
                false => client.put(&path, &body)?,
            };
            Ok(Outcome::Done(format!("{:<12}{item}", "updated")))
        }
    }
}

/// The files a resource's document uploads, read (and built or packed).
fn uploads(
    kind: Kind,
    multipart: bool,
    files: &[std::path::PathBuf],
    part: &'static str,
) -> Result<Vec<Upload>, CliError> {
    if !multipart && !files.is_empty() {
        return Err(CliError::Usage(format!(
            "a {} takes no `file`",
            kind.info().title
        )));
    }
    files
        .iter()
        .map(|path| read_file(kind, path, part))
        .collect()
}

/// Whether the DIG already is where `action` leads (so applying the same
/// file again has nothing to do for it).
fn already_done(client: &ApiClient, dig: &str, action: Action) -> bool {
    use DeployState::*;
    // Where an action leads, or past it: its table says where it leads
    // from, not which states lie beyond.
    let reached: &[DeployState] = match action {
        Action::Dig(DigAction::Approve) => &[Approved, Instantiated, Updated],
        _ if action.is_instantiate() => &[Instantiated, Updated],
        Action::Dig(DigAction::Terminate)
        | Action::Cloud(CloudAction::Terminate)
        | Action::Network(NetworkAction::Terminate)
        | Action::Cert(CertAction::Terminate) => &[Terminated],
        Action::Dig(DigAction::Stop)
        | Action::Cloud(CloudAction::Stop)
        | Action::Network(NetworkAction::Stop) => &[InstantiateStopped, TerminateStopped],
        _ => &[],
    };
    client
        .get_as::<DeploymentStatus>(&format!("v2/{dig}/status?output=summary"))
        .is_ok_and(|status| reached.contains(&status.deployment.deployed_status))
}

/// The `file` part: a controller's may be its crate's directory, built
/// here; any other may be a directory (a Helm chart, a profile's files),
/// packed here as `helm package` packs a chart.
fn read_file(kind: Kind, path: &std::path::Path, part: &'static str) -> Result<Upload, CliError> {
    let (file, bytes) = if kind == Kind::Controller {
        super::controller::component_bytes(path)?
    } else if path.is_dir() {
        let packed = pack_directory(path).map_err(|source| CliError::Io {
            path: path.to_owned(),
            source,
        })?;
        (path.with_extension("tgz"), packed)
    } else {
        let bytes = std::fs::read(path).map_err(|source| CliError::Io {
            path: path.to_owned(),
            source,
        })?;
        (path.to_owned(), bytes)
    };
    let file_name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    Ok(Upload {
        part,
        file_name,
        bytes,
    })
}

/// A `.tgz` of `dir` under its own name, as `helm package` makes a chart's.
fn pack_directory(dir: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let top = dir
        .canonicalize()?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "package".into());
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut archive = tar::Builder::new(gzip);
    archive.follow_symlinks(false);
    archive.append_dir_all(&top, dir)?;
    archive.into_inner()?.finish()
}

fn delete_one(
    client: &ApiClient,
    document: &Document,
    terminate_timeout: Duration,
) -> Result<Outcome, CliError> {
    match document.operation() {
        Operation::Unsupported { reason } => Ok(Outcome::Unsupported(reason)),
        Operation::Action { dig, action, .. } if action.is_instantiate() => {
            let path = format!("v2/{dig}");
            match client.post(&format!("{path}/terminate"), &Value::Null) {
                Ok(_) => {}
                Err(error) if error.status() == Some(StatusCode::CONFLICT) => {
                    return Ok(Outcome::Skipped(api_message(&error)));
                }
                Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => {
                    return Ok(Outcome::Skipped("already gone".into()));
                }
                Err(error) => return Err(error.into()),
            }
            let options = WatchOptions {
                watch: true,
                timeout: terminate_timeout,
                progress: false,
            };
            let finished = super::status::show(client, &path, &options, &mut std::io::sink())?;
            Ok(Outcome::Done(format!(
                "{:<12}{dig}: {}",
                "terminated",
                summary_counts(&finished)
            )))
        }
        // emcoctl undoes a cluster's network `apply` by its `terminate`.
        Operation::Action {
            dig,
            action: Action::Network(NetworkAction::Apply),
            ..
        } => match client.post(&format!("v2/{dig}/terminate"), &Value::Null) {
            Ok(_) => Ok(Outcome::Done(format!("{:<12}{dig}", "terminated"))),
            Err(error)
                if matches!(
                    error.status(),
                    Some(StatusCode::CONFLICT | StatusCode::NOT_FOUND)
                ) =>
            {
                Ok(Outcome::Skipped(api_message(&error)))
            }
            Err(error) => Err(error.into()),
        },
        Operation::Action { action, .. } => {
            Ok(Outcome::Skipped(format!("`{action}` has nothing to undo")))
        }
        Operation::Note { reason } => Ok(Outcome::Skipped(reason)),
        Operation::Resource { item, .. } => match client.delete(&format!("v2/{item}")) {
            Ok(()) => Ok(Outcome::Done(format!("{:<12}{item}", "deleted"))),
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => {
                Ok(Outcome::Skipped("already gone".into()))
            }
            Err(error) => Err(error.into()),
        },
    }
}

fn summary_counts(snapshot: &Snapshot) -> String {
    let total: usize = snapshot.apps.values().map(Vec::len).sum();
    format!("{total} resource(s) deleted")
}

pub(super) fn api_message(error: &ClientError) -> String {
    match error {
        ClientError::Api { message, .. } => message.clone(),
        other => other.to_string(),
    }
}
