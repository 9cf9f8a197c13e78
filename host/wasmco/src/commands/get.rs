//! `wasmco get`: resources by kind or path.

use std::io::Write;

use wasmco::cli::resources::{self, Output, Scope};

use super::connect::Connect;

/// Show resources: a kind (`clusters`, `projects`, `digs`, …) or a
/// collection path, with its parents given by flags.
#[derive(clap::Args)]
pub struct Args {
    /// The kind or path.
    kind: String,
    /// One resource's name.
    name: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    output: Output,
    #[command(flatten)]
    scope: Scope,
}

pub fn run(connect: &Connect, args: Args) -> anyhow::Result<()> {
    let text = resources::get(
        &connect.client()?,
        &args.kind,
        args.name.as_deref(),
        &args.scope,
        args.output,
    )?;
    writeln!(std::io::stdout().lock(), "{}", text.trim_end())?;
    Ok(())
}
