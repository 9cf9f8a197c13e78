//! `wasmco apply` and `wasmco delete`: emcoctl documents as they are.

use std::path::PathBuf;

use wasmco::cli::resources::Scope;
use wasmco::cli::{apply, eggops, emcoctl};
use wasmco_core::wire::DigAction;

use super::connect::Connect;

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
    /// For Eggops' documents (`eggo.isula.org/v1`): the cluster provider
    /// they go under, instead of each one's namespace.
    #[arg(long)]
    provider: Option<String>,
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
    if eggops::is_eggops(&args.files) {
        return run_eggops(connect, &args, std::time::Duration::ZERO, eggops::apply);
    }
    run(connect, &args, std::time::Duration::ZERO, apply::apply)
}

/// `wasmco update`: a DIG to its current inputs, or emcoctl's `update -f`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["name", "files"])))]
pub struct UpdateArgs {
    /// The DIG to update to its current inputs (found in every project
    /// when unique), or its path.
    #[arg(value_name = "DIG", conflicts_with = "files")]
    name: Option<String>,
    #[command(flatten)]
    scope: Scope,
    /// A file (or directory) of emcoctl documents whose resources are
    /// replaced, each with a PUT, as emcoctl's `update -f`; repeatable.
    #[arg(short = 'f', long = "file")]
    files: Vec<PathBuf>,
    /// Values for the documents' Go-template placeholders.
    #[arg(short = 'v', long = "values", requires = "files")]
    values: Option<PathBuf>,
    /// Stop at the first document that fails.
    #[arg(short = 's', long = "stop-on-error", requires = "files")]
    stop_on_error: bool,
}

pub fn update(connect: &Connect, args: UpdateArgs) -> anyhow::Result<()> {
    match args.name {
        Some(dig) => super::dig::act_on(connect, &dig, &args.scope, DigAction::Update),
        None => {
            let documents = DocumentArgs {
                files: args.files,
                values: args.values,
                stop_on_error: args.stop_on_error,
                provider: None,
            };
            run(
                connect,
                &documents,
                std::time::Duration::ZERO,
                apply::update,
            )
        }
    }
}

pub fn delete(connect: &Connect, args: DeleteArgs) -> anyhow::Result<()> {
    if eggops::is_eggops(&args.documents.files) {
        let timeout = args.timeout;
        return run_eggops(connect, &args.documents, timeout, eggops::delete);
    }
    run(connect, &args.documents, args.timeout, apply::delete)
}

/// Loads emcoctl's documents and runs `verb` over them.
fn run(
    connect: &Connect,
    args: &DocumentArgs,
    terminate_timeout: std::time::Duration,
    verb: Verb<emcoctl::Document>,
) -> anyhow::Result<()> {
    let loaded = emcoctl::load(&args.files, args.values.as_deref())?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    run_over(connect, args, terminate_timeout, &loaded.documents, verb)
}

/// Loads Eggops' documents (the provider's machines, logins,
/// infrastructures and requested clusters) and runs `verb` over them.
fn run_eggops(
    connect: &Connect,
    args: &DocumentArgs,
    terminate_timeout: std::time::Duration,
    verb: Verb<eggops::Item>,
) -> anyhow::Result<()> {
    let items = eggops::load(&args.files, args.provider.as_deref())?;
    run_over(connect, args, terminate_timeout, &items, verb)
}

/// What `apply`, `update` or `delete` does with a file's documents.
type Verb<T> = fn(
    &wasmco::cli::client::ApiClient,
    &[T],
    apply::RunOptions,
    &mut dyn std::io::Write,
) -> Result<apply::Tally, wasmco::cli::CliError>;

/// Runs `verb` over `documents`, then reports.
fn run_over<T>(
    connect: &Connect,
    args: &DocumentArgs,
    terminate_timeout: std::time::Duration,
    documents: &[T],
    verb: Verb<T>,
) -> anyhow::Result<()> {
    let options = apply::RunOptions {
        stop_on_error: args.stop_on_error,
        terminate_timeout,
    };
    let tally = verb(
        &connect.client()?,
        documents,
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
