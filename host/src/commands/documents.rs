//! `wasmco apply` and `wasmco delete`: emcoctl documents as they are.

use std::path::PathBuf;

use wasmco::cli::{apply, emcoctl};

use super::Connect;

/// Where the emcoctl documents come from.
#[derive(clap::Args)]
pub struct DocumentArgs {
    /// A file of emcoctl documents, or a directory of them (`*.yaml`, in
    /// name order); repeatable.
    #[arg(short = 'f', long = "file", required = true)]
    files: Vec<PathBuf>,
    /// Values for the documents' Go-template placeholders (`{{.ProjectName}}`);
    /// a directory's own `values.yaml` is used when this is not given.
    #[arg(short = 'v', long = "values")]
    values: Option<PathBuf>,
    /// Stop at the first document that fails.
    #[arg(short = 's', long = "stop-on-error")]
    stop_on_error: bool,
}

/// Delete what emcoctl documents describe, in reverse order (terminating a
/// DIG they instantiated first).
#[derive(clap::Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    documents: DocumentArgs,
    /// How long to wait for a terminate to finish.
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    timeout: std::time::Duration,
}

pub fn apply(connect: &Connect, args: DocumentArgs) -> anyhow::Result<()> {
    let documents = emcoctl::load(&args.files, args.values.as_deref())?;
    let options = apply::RunOptions {
        stop_on_error: args.stop_on_error,
        terminate_timeout: std::time::Duration::ZERO,
    };
    let tally = apply::apply(
        &connect.client()?,
        &documents,
        options,
        &mut std::io::stdout().lock(),
    )?;
    finish(tally)
}

pub fn delete(connect: &Connect, args: DeleteArgs) -> anyhow::Result<()> {
    let loaded = emcoctl::load(&args.documents.files, args.documents.values.as_deref())?;
    let options = apply::RunOptions {
        stop_on_error: args.documents.stop_on_error,
        terminate_timeout: args.timeout,
    };
    let tally = apply::delete(
        &connect.client()?,
        &loaded,
        options,
        &mut std::io::stdout().lock(),
    )?;
    finish(tally)
}

/// Fails the command when any document failed, after its report.
fn finish(tally: apply::Tally) -> anyhow::Result<()> {
    if tally.failed > 0 {
        anyhow::bail!("{tally}");
    }
    println!("{tally}");
    Ok(())
}
