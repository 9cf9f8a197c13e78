//! The `wasmco` binary: parses the command line and hands it to the verb's
//! module in `commands/`.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use commands::{
    Connect, cluster, compile, controller, dev, dig, documents, get, helm, rollout, scenario,
    serve, token, virtual_cluster,
};
use wasmco::telemetry::{self, LogFormat};
use wasmco_core::wire::DigAction;

#[derive(Parser)]
#[command(
    name = "wasmco",
    version,
    about = "Multi-cluster orchestration with WebAssembly controllers"
)]
struct Cli {
    #[command(flatten)]
    connect: Connect,
    /// How logs (stderr) are written: `text` for people, `json` (one
    /// object per line, with the span fields) for log collectors.
    #[arg(long, global = true, env = "WASMCO_LOG_FORMAT", default_value = "text")]
    log_format: LogFormat,
    /// Export spans over OTLP (HTTP, protobuf) to this collector, e.g.
    /// `http://127.0.0.1:4318` (its `/v1/traces`); builds with the `otlp`
    /// feature only. `RUST_LOG` chooses which spans, as for the logs.
    #[arg(long, global = true, env = "WASMCO_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run controllers against a scenario file and print where apps land and
    /// the manifests each cluster gets.
    Run(scenario::Args),
    /// Serve the REST API (`/v2`) with its data in one directory.
    Serve(Box<serve::Args>),
    /// Compile a component read from stdin (the server runs this in a child
    /// process, so a compile can be stopped).
    #[command(hide = true)]
    CompileController(compile::Args),
    /// Compile the Helm renderer into this machine's cache now (a server
    /// otherwise does it in the background when it starts).
    HelmPrepare(helm::Args),
    /// Start a development orchestrator: the API on 127.0.0.1:9015, the
    /// built-in controllers, three virtual clusters, and hot reload of
    /// `.wasm` controllers.
    Dev(dev::Args),
    /// Create or replace what emcoctl documents describe, and post their actions.
    Apply(documents::DocumentArgs),
    /// Delete what emcoctl documents describe, in reverse order
    /// (terminating a DIG they instantiated first).
    Delete(documents::DeleteArgs),
    /// Show resources: a kind (`clusters`, `projects`, `digs`, …) or a
    /// collection path, with its parents given by flags.
    Get(get::Args),
    /// Approve a DIG (Created -> Approved).
    Approve(dig::DigArgs),
    /// Instantiate a DIG: work out its AppContext and deploy it.
    Instantiate(dig::DigArgs),
    /// Terminate a DIG: remove what it deployed.
    Terminate(dig::DigArgs),
    /// Stop rsync working on a DIG (a cluster that never answers, say);
    /// terminate (or, after a stopped terminate, instantiate) follows.
    Stop(dig::DigArgs),
    /// Update a DIG to its current inputs (`update DIG`), or replace what
    /// emcoctl documents describe, a PUT each (`update -f FILE`, as
    /// emcoctl's update).
    Update(documents::UpdateArgs),
    /// Roll a DIG back to an earlier context revision.
    Rollback(dig::RollbackArgs),
    /// Show a DIG's status, refreshing until its last action has finished.
    Status(dig::StatusArgs),
    /// Follow, pause, resume or abort a DIG's progressive rollout.
    Rollout {
        #[command(subcommand)]
        command: rollout::RolloutCommand,
    },
    /// Write, build, register, list and try controllers.
    Controller {
        #[command(subcommand)]
        command: controller::ControllerCommand,
    },
    /// Make clusters on machines from Eggo's deploy files (admin only).
    Cluster {
        #[command(subcommand)]
        command: cluster::ClusterCommand,
    },
    /// Issue, list and revoke scoped API tokens (admin only).
    Token {
        #[command(subcommand)]
        command: token::TokenCommand,
    },
    /// Serve a Kubernetes-API-compatible virtual cluster (in memory).
    VirtualCluster(virtual_cluster::Args),
}

fn main() -> ExitCode {
    // Every TLS client in the process (kube, etcd, gix's and the OTLP
    // exporter's reqwest, built without a provider of their own) takes
    // ring; installed before any of them is made.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    // The compiler child's stderr is its error message, nothing else.
    let _telemetry = if matches!(cli.command, Command::CompileController(_)) {
        None
    } else {
        match telemetry::install(cli.log_format, cli.otlp_endpoint.as_deref()) {
            Ok(telemetry) => Some(telemetry),
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::FAILURE;
            }
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let connect = &cli.connect;
    match cli.command {
        Command::Run(args) => scenario::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::CompileController(args) => compile::run(args),
        Command::Dev(args) => dev::run(args),
        Command::HelmPrepare(args) => helm::run(args),
        Command::Apply(args) => documents::apply(connect, args),
        Command::Delete(args) => documents::delete(connect, args),
        Command::Get(args) => get::run(connect, args),
        Command::Cluster { command } => cluster::run(connect, command),
        Command::Approve(args) => dig::act(connect, &args, DigAction::Approve),
        Command::Instantiate(args) => dig::act(connect, &args, DigAction::Instantiate),
        Command::Terminate(args) => dig::act(connect, &args, DigAction::Terminate),
        Command::Stop(args) => dig::act(connect, &args, DigAction::Stop),
        Command::Update(args) => documents::update(connect, args),
        Command::Rollback(args) => dig::rollback(connect, args),
        Command::Status(args) => dig::status(connect, args),
        Command::Rollout { command } => rollout::run(connect, command),
        Command::Controller { command } => controller::run(connect, command),
        Command::Token { command } => token::run(connect, command),
        Command::VirtualCluster(args) => virtual_cluster::run(args),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
