//! `wasmco compile-controller`: the child process the server compiles an
//! uploaded component in, so a compile can be stopped.

use std::path::PathBuf;

use anyhow::Context;

/// Compile a component read from stdin.
#[derive(clap::Args)]
pub struct Args {
    /// Where to write the compiled code.
    #[arg(long)]
    out: PathBuf,
    /// The server's engine settings.
    #[arg(long, action = clap::ArgAction::Set)]
    pooling: bool,
    #[arg(long)]
    memory_bytes: u64,
    #[arg(long)]
    max_instances: u32,
    /// CPU seconds before the kernel stops this process.
    #[arg(long)]
    timeout_secs: u64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    // A second stop besides the server's kill: the kernel ends a compile
    // past its CPU time even if the server is gone.
    rlimit::setrlimit(
        rlimit::Resource::CPU,
        args.timeout_secs + 1,
        args.timeout_secs + 2,
    )
    .context("limiting the compile's CPU time")?;
    let mut wasm = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut wasm)
        .context("reading the component from stdin")?;
    wasmco_runtime::compile_to_file(
        &wasm,
        args.pooling,
        args.memory_bytes,
        args.max_instances,
        &args.out,
    )
    .map_err(anyhow::Error::msg)
}
