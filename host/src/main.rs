//! The `wasmco` binary.

use std::path::PathBuf;
use std::process::ExitCode;

use std::io::{IsTerminal, Write};

use anyhow::Context;
use clap::{Parser, Subcommand};

use wasmco::cli::client::{ApiClient, Connection};
use wasmco::cli::resources::{Output, Scope};
use wasmco::cli::scenario::{Scenario, render};
use wasmco::cli::{apply, controller, dev, emcoctl, resources, status};
use wasmco::runtime::{ControllerKind, Runtime, RuntimeConfig};

#[derive(Parser)]
#[command(
    name = "wasmco",
    version,
    about = "Multi-cluster orchestration with WebAssembly controllers"
)]
struct Cli {
    /// The wasmco API the client verbs talk to (default: the config file's
    /// `server`, else http://127.0.0.1:9015).
    #[arg(long, global = true, env = "WASMCO_SERVER")]
    server: Option<String>,
    /// The API's bearer token (default: the config file's `token`, else
    /// ./.wasmco/admin.token, which `wasmco dev` writes).
    #[arg(long, global = true, env = "WASMCO_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A CA certificate (PEM) to trust for an https server (default: the
    /// config file's `ca-file`, else ./.wasmco/tls/ca.crt).
    #[arg(long, global = true, env = "WASMCO_CA_FILE")]
    ca_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// Where the emcoctl documents come from.
#[derive(clap::Args)]
struct DocumentArgs {
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

/// What a cluster's kubeconfig may ask of this host.
#[derive(clap::Args)]
struct KubeconfigArgs {
    /// Accept kubeconfigs whose clusters are reached through `proxy-url`.
    #[arg(long)]
    allow_kubeconfig_proxy: bool,
    /// A network (CIDR) no cluster's API server may be in, besides
    /// link-local, metadata and unspecified addresses; repeatable.
    #[arg(long = "deny-network", value_name = "CIDR")]
    denied: Vec<ipnet::IpNet>,
    /// A network (CIDR) allowed although a wider denied one holds it (the
    /// most specific network wins); repeatable.
    #[arg(long = "allow-network", value_name = "CIDR")]
    allowed: Vec<ipnet::IpNet>,
}

impl KubeconfigArgs {
    fn policy(&self) -> std::sync::Arc<wasmco::kubeconfig::KubeconfigPolicy> {
        std::sync::Arc::new(wasmco::kubeconfig::KubeconfigPolicy::new(
            self.allow_kubeconfig_proxy,
            &self.denied,
            &self.allowed,
        ))
    }
}

/// Which DIG a DIG verb acts on.
#[derive(clap::Args)]
struct DigArgs {
    /// The DIG's name (found in every project when unique) or its path
    /// (`projects/P/composite-apps/CA/V/deployment-intent-groups/D`).
    #[arg(value_name = "DIG")]
    name: String,
    #[command(flatten)]
    scope: Scope,
}

#[derive(Subcommand)]
enum ControllerCommand {
    /// Write a new controller crate from the template; it builds as is.
    New {
        /// The controller's (and crate's) name.
        name: String,
        /// Placement (chooses clusters) or action (changes resources).
        #[arg(long = "type", value_enum)]
        kind: KindArg,
        /// Where to write it (default: ./NAME).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Build a controller crate into a `.wasm` component and print its path.
    Build {
        /// The crate's directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Register a controller (or replace it): a `.wasm`, or a crate
    /// directory, built first.
    Upload {
        /// The component or crate.
        path: PathBuf,
        /// Its name (default: the file's or directory's name).
        #[arg(long)]
        name: Option<String>,
        /// Placement or action (default: what the component exports).
        #[arg(long = "type", value_enum)]
        kind: Option<KindArg>,
        /// Lower runs first within its kind.
        #[arg(long, default_value_t = 10)]
        priority: u32,
    },
    /// List the registered controllers.
    List,
    /// Run a controller once against a fixture, with no server, and print
    /// its edits.
    Test {
        /// The component.
        wasm: PathBuf,
        /// The fixture (JSON or YAML): clusters, apps, optional placement, intent.
        #[arg(long)]
        input: PathBuf,
        /// Where compiled controllers are cached.
        #[arg(long, env = "WASMCO_CACHE_DIR", default_value = ".wasmco/cache")]
        cache_dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Issue a token scoped to some projects; prints its secret, which is
    /// shown only this once.
    Create {
        /// The token's name (the audit log's "who").
        name: String,
        /// A project it may touch; repeatable.
        #[arg(long = "project", required = true)]
        projects: Vec<String>,
        /// What it may do there.
        #[arg(long, value_enum)]
        role: RoleArg,
        /// When it stops working: a duration (30d, 12h) or an RFC 3339 time.
        #[arg(long, default_value = "30d")]
        expires: String,
    },
    /// List the tokens (never their secrets).
    List,
    /// Revoke a token; it stops working at once.
    Revoke {
        /// The token's name.
        name: String,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    Viewer,
    Editor,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum KindArg {
    Placement,
    Action,
}

impl From<KindArg> for ControllerKind {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Placement => ControllerKind::Placement,
            KindArg::Action => ControllerKind::Action,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run controllers against a scenario file and print where apps land and
    /// the manifests each cluster gets.
    Run {
        /// The scenario (YAML or JSON).
        scenario: PathBuf,
        /// Where compiled controllers are cached.
        #[arg(long, env = "WASMCO_CACHE_DIR", default_value = ".wasmco/cache")]
        cache_dir: PathBuf,
    },
    /// Serve the REST API (`/v2`) with its data in one directory.
    Serve {
        /// Where the resource database and the controller cache live.
        #[arg(long, env = "WASMCO_DATA_DIR", default_value = ".wasmco")]
        data_dir: PathBuf,
        /// Address to listen on.
        #[arg(long, env = "WASMCO_LISTEN", default_value = "127.0.0.1:9015")]
        listen: std::net::SocketAddr,
        /// Write deployments as YAML files under this directory (one folder
        /// per cluster) instead of applying them: dry runs and GitOps.
        #[arg(long)]
        sync_to_directory: Option<PathBuf>,
        /// Serve HTTPS with a certificate from the host's own CA (made on
        /// first start; clients trust DATA_DIR/tls/ca.crt).
        #[arg(long)]
        tls: bool,
        /// More names (DNS or IP) for the HTTPS certificate, besides
        /// localhost, 127.0.0.1, ::1 and the listen address.
        #[arg(long = "tls-san")]
        tls_sans: Vec<String>,
        #[command(flatten)]
        kubeconfigs: KubeconfigArgs,
        /// How long an uploaded controller may take to compile (it compiles
        /// in a child process, stopped past this).
        #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
        compile_timeout: std::time::Duration,
        /// The limits controllers get unless their registration tightens
        /// them, as JSON fields to replace:
        /// `{"maxEdits": 50000, "outputBytes": 1073741824, "deadlineMs": 5000}`.
        #[arg(long, value_name = "JSON")]
        controller_limits: Option<String>,
    },
    /// Compile a component read from stdin (the server runs this in a child
    /// process, so a compile can be stopped).
    #[command(hide = true)]
    CompileController {
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
    },
    /// Start a development orchestrator: the API on 127.0.0.1:9015, the
    /// built-in controllers, three virtual clusters, and hot reload of
    /// `.wasm` controllers.
    Dev {
        /// Where its data lives between runs.
        #[arg(long, env = "WASMCO_DATA_DIR", default_value = ".wasmco")]
        data_dir: PathBuf,
        /// Keep nothing: data in a temporary directory removed at exit.
        #[arg(long)]
        ephemeral: bool,
        /// The API's address; the clusters take the next three ports.
        #[arg(long, default_value = "127.0.0.1:9015")]
        listen: std::net::SocketAddr,
        /// Milliseconds a workload takes to become ready in the clusters.
        #[arg(long, default_value_t = 1500)]
        ready_after_ms: u64,
        /// The directory of `.wasm` controllers to hot-reload
        /// (default: DATA_DIR/controllers).
        #[arg(long)]
        controllers: Option<PathBuf>,
        /// Apply this example (a name under examples/, or a directory) and
        /// show its status.
        #[arg(long)]
        example: Option<String>,
    },
    /// Create or replace what emcoctl documents describe, and post their actions.
    Apply(DocumentArgs),
    /// Delete what emcoctl documents describe, in reverse order
    /// (terminating a DIG they instantiated first).
    Delete {
        #[command(flatten)]
        documents: DocumentArgs,
        /// How long to wait for a terminate to finish.
        #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
    },
    /// Show resources: a kind (`clusters`, `projects`, `digs`, …) or a
    /// collection path, with its parents given by flags.
    Get {
        /// The kind or path.
        kind: String,
        /// One resource's name.
        name: Option<String>,
        /// Output format.
        #[arg(short, long, value_enum, default_value = "table")]
        output: Output,
        #[command(flatten)]
        scope: Scope,
    },
    /// Approve a DIG (Created -> Approved).
    Approve(DigArgs),
    /// Instantiate a DIG: work out its AppContext and deploy it.
    Instantiate(DigArgs),
    /// Terminate a DIG: remove what it deployed.
    Terminate(DigArgs),
    /// Update a DIG to its current inputs.
    Update(DigArgs),
    /// Roll a DIG back to an earlier context revision.
    Rollback {
        #[command(flatten)]
        dig: DigArgs,
        /// The revision to go back to.
        #[arg(long)]
        revision: u64,
    },
    /// Show a DIG's status, refreshing until its last action has finished.
    Status {
        #[command(flatten)]
        dig: DigArgs,
        /// Show it once and return.
        #[arg(long)]
        once: bool,
        /// Give up waiting after this long.
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
    },
    /// Write, build, register, list and try controllers.
    Controller {
        #[command(subcommand)]
        command: ControllerCommand,
    },
    /// Issue, list and revoke scoped API tokens (admin only).
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Serve a Kubernetes-API-compatible virtual cluster (in memory).
    VirtualCluster {
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// The cluster's name in its kubeconfig.
        #[arg(long, default_value = "virtual")]
        name: String,
        /// Where to write a kubeconfig for it.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Milliseconds a workload takes to become ready.
        #[arg(long, default_value_t = 0)]
        ready_after_ms: u64,
        /// Milliseconds added to every request.
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
    },
}

fn run_token(
    command: TokenCommand,
    client: &ApiClient,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create {
            name,
            projects,
            role,
            expires,
        } => {
            let role = match role {
                RoleArg::Viewer => "viewer",
                RoleArg::Editor => "editor",
            };
            let answer = client.post(
                "/v2/tokens",
                &serde_json::json!({"metadata": {"name": name},
                    "spec": {"projects": projects, "role": role, "expires": expires}}),
            )?;
            let secret = answer["status"]["token"].as_str().unwrap_or_default();
            writeln!(out, "{secret}")?;
        }
        TokenCommand::List => {
            let tokens = client.get("/v2/tokens")?;
            let mut table = comfy_table::Table::new();
            table
                .load_preset(comfy_table::presets::NOTHING)
                .set_header(["NAME", "ROLE", "PROJECTS", "EXPIRES", "EXPIRED"]);
            for token in tokens.as_array().into_iter().flatten() {
                let projects: Vec<&str> = token["spec"]["projects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str())
                    .collect();
                table.add_row([
                    token["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    token["spec"]["role"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    projects.join(","),
                    token["spec"]["expires"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    token["status"]["expired"].to_string(),
                ]);
            }
            writeln!(out, "{table}")?;
        }
        TokenCommand::Revoke { name } => {
            client.delete(&format!("/v2/tokens/{name}"))?;
            writeln!(out, "token {name} revoked")?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The compiler child's stderr is its error message, nothing else.
    if !matches!(cli.command, Command::CompileController { .. }) {
        tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .with_writer(std::io::stderr)
            .init();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let (server, token, ca_file) = (cli.server, cli.token, cli.ca_file);
    let client = || -> anyhow::Result<ApiClient> {
        let connection = Connection::resolve(server.clone(), token.clone(), ca_file.clone())?;
        Ok(ApiClient::new(&connection)?)
    };
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Dev {
            data_dir,
            ephemeral,
            listen,
            ready_after_ms,
            controllers,
            example,
        } => {
            let example = example.as_deref().map(dev::find_example).transpose()?;
            drop(stdout);
            let options = dev::DevOptions {
                data_dir: (!ephemeral).then_some(data_dir),
                listen,
                ready_after: std::time::Duration::from_millis(ready_after_ms),
                controllers_dir: controllers,
                example,
                progress: std::io::stderr().is_terminal(),
            };
            let console: dev::Console =
                std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            runtime.block_on(dev::run(options, console))?;
            Ok(())
        }
        Command::Apply(args) => {
            let documents = emcoctl::load(&args.files, args.values.as_deref())?;
            let options = apply::RunOptions {
                stop_on_error: args.stop_on_error,
                terminate_timeout: std::time::Duration::ZERO,
            };
            let tally = apply::apply(&client()?, &documents, options, &mut stdout)?;
            finish(tally)
        }
        Command::Delete { documents, timeout } => {
            let loaded = emcoctl::load(&documents.files, documents.values.as_deref())?;
            let options = apply::RunOptions {
                stop_on_error: documents.stop_on_error,
                terminate_timeout: timeout,
            };
            let tally = apply::delete(&client()?, &loaded, options, &mut stdout)?;
            finish(tally)
        }
        Command::Get {
            kind,
            name,
            output,
            scope,
        } => {
            let text = resources::get(&client()?, &kind, name.as_deref(), &scope, output)?;
            writeln!(stdout, "{}", text.trim_end())?;
            Ok(())
        }
        Command::Approve(dig) => act(&client()?, &dig, "approve", &mut stdout),
        Command::Instantiate(dig) => act(&client()?, &dig, "instantiate", &mut stdout),
        Command::Terminate(dig) => act(&client()?, &dig, "terminate", &mut stdout),
        Command::Update(dig) => act(&client()?, &dig, "update", &mut stdout),
        Command::Rollback { dig, revision } => {
            let client = client()?;
            let path = resources::find_dig(&client, &dig.name, &dig.scope)?;
            let answer = client.post(
                &format!("{path}/rollback"),
                &serde_json::json!({ "revision": revision }),
            )?;
            report_state(&mut stdout, "rollback", &path, &answer)
        }
        Command::Status { dig, once, timeout } => {
            let client = client()?;
            let path = resources::find_dig(&client, &dig.name, &dig.scope)?;
            let options = status::WatchOptions {
                watch: !once,
                timeout,
                progress: std::io::stderr().is_terminal(),
            };
            status::show(&client, &path, &options, &mut stdout)?;
            Ok(())
        }
        Command::Controller { command } => run_controller(command, client, &mut stdout),
        Command::Token { command } => run_token(command, &client()?, &mut stdout),
        Command::CompileController {
            out,
            pooling,
            memory_bytes,
            max_instances,
            timeout_secs,
        } => {
            // A second stop besides the server's kill: the kernel ends a
            // compile past its CPU time even if the server is gone.
            rlimit::setrlimit(rlimit::Resource::CPU, timeout_secs + 1, timeout_secs + 2)
                .context("limiting the compile's CPU time")?;
            let mut wasm = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut wasm)
                .context("reading the component from stdin")?;
            wasmco::runtime::compile_to_file(&wasm, pooling, memory_bytes, max_instances, &out)
                .map_err(anyhow::Error::msg)
        }
        Command::Run {
            scenario,
            cache_dir,
        } => {
            let loaded = Scenario::load(&scenario)?;
            let runtime =
                Runtime::new(RuntimeConfig::new(cache_dir)).context("starting the wasm runtime")?;
            let base_dir = scenario.parent().unwrap_or(std::path::Path::new("."));
            let outcome = loaded.run(&runtime, base_dir)?;
            print!("{}", render(&outcome));
            Ok(())
        }
        Command::VirtualCluster {
            listen,
            name,
            kubeconfig,
            ready_after_ms,
            latency_ms,
        } => {
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            runtime.block_on(async {
                let behaviour = wasmco::vcluster::Behaviour {
                    ready_after: std::time::Duration::from_millis(ready_after_ms),
                    latency: std::time::Duration::from_millis(latency_ms),
                    ..Default::default()
                };
                let cluster = wasmco::vcluster::VirtualCluster::start(&name, listen, behaviour)
                    .await
                    .with_context(|| format!("listening on {listen}"))?;
                if let Some(path) = &kubeconfig {
                    cluster
                        .write_kubeconfig(path)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
                println!(
                    "virtual cluster {name} listening on http://{}",
                    cluster.addr()
                );
                cluster.wait().await;
                anyhow::Ok(())
            })
        }
        Command::Serve {
            data_dir,
            listen,
            sync_to_directory,
            tls,
            tls_sans,
            kubeconfigs,
            compile_timeout,
            controller_limits,
        } => {
            let controller_limits = match controller_limits {
                None => wasmco::runtime::ControllerLimits::default(),
                Some(json) => {
                    let overrides: wasmco::runtime::LimitOverrides = serde_json::from_str(&json)
                        .context("--controller-limits is not a JSON object of limits")?;
                    wasmco::runtime::ControllerLimits::default()
                        .replaced_by(&overrides)
                        .context("--controller-limits")?
                }
            };
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            let rsync = wasmco::rsync::RsyncConfig {
                directory: sync_to_directory,
                ..Default::default()
            };
            let options = wasmco::api::HostOptions {
                kubeconfigs: kubeconfigs.policy(),
                compiler: wasmco::runtime::CompilerProcess::this_program(compile_timeout),
                controller_limits,
            };
            let state = wasmco::api::open_state(
                &data_dir,
                Some((runtime.handle().clone(), rsync)),
                options,
            )
            .with_context(|| format!("opening the data directory {}", data_dir.display()))?;
            let tls_config = if tls {
                let mut names: Vec<String> =
                    vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
                if !listen.ip().is_unspecified() {
                    names.push(listen.ip().to_string());
                }
                names.extend(tls_sans);
                Some(wasmco::api::tls_config(&state, &data_dir, &names)?)
            } else {
                None
            };
            runtime.block_on(async {
                let listener = wasmco::api::bind(listen).await?;
                let scheme = if tls_config.is_some() {
                    "https"
                } else {
                    "http"
                };
                // Tests and scripts read the address (port 0 picks a free one).
                println!(
                    "wasmco API listening on {scheme}://{}",
                    listener.local_addr()?
                );
                match tls_config {
                    Some(config) => wasmco::api::serve_tls(state, listener, config).await,
                    None => wasmco::api::serve(state, listener).await,
                }
            })?;
            Ok(())
        }
    }
}

/// Fails the command when any document failed, after its report.
fn finish(tally: apply::Tally) -> anyhow::Result<()> {
    if tally.failed > 0 {
        anyhow::bail!("{tally}");
    }
    println!("{tally}");
    Ok(())
}

fn act(client: &ApiClient, dig: &DigArgs, action: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    let path = resources::find_dig(client, &dig.name, &dig.scope)?;
    let answer = client.post(&format!("{path}/{action}"), &serde_json::Value::Null)?;
    report_state(out, action, &path, &answer)
}

fn report_state(
    out: &mut dyn Write,
    action: &str,
    path: &str,
    answer: &serde_json::Value,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{action}: {} is {} (revision {}); `wasmco status {}` follows it",
        path.trim_start_matches("v2/"),
        answer["deployedStatus"].as_str().unwrap_or("?"),
        answer["revision"],
        answer["name"].as_str().unwrap_or(path),
    )?;
    Ok(())
}

fn run_controller(
    command: ControllerCommand,
    client: impl Fn() -> anyhow::Result<ApiClient>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match command {
        ControllerCommand::New { name, kind, dir } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            controller::new_crate(&dir, &name, kind.into())?;
            writeln!(
                out,
                "wrote {}; next: `wasmco controller build {}`",
                dir.display(),
                dir.display()
            )?;
        }
        ControllerCommand::Build { dir } => {
            let wasm = controller::build_crate(&dir)?;
            writeln!(out, "{}", wasm.display())?;
        }
        ControllerCommand::Upload {
            path,
            name,
            kind,
            priority,
        } => {
            let name = match name {
                Some(name) => name,
                None => path
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().replace('_', "-")))
                    .context("give the controller's name with --name")?,
            };
            let (file, wasm) = controller::component_bytes(&path)?;
            let registration = controller::Registration {
                name: name.clone(),
                kind: kind.map(ControllerKind::from),
                priority,
            };
            let new = controller::upload(&client()?, &registration, wasm)?;
            writeln!(
                out,
                "{} controller {name} from {}",
                if new { "registered" } else { "replaced" },
                file.display()
            )?;
        }
        ControllerCommand::List => {
            let text = resources::get(
                &client()?,
                "controllers",
                None,
                &Scope::default(),
                Output::Table,
            )?;
            writeln!(out, "{}", text.trim_end())?;
        }
        ControllerCommand::Test {
            wasm,
            input,
            cache_dir,
        } => {
            let bytes =
                std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;
            let text = std::fs::read_to_string(&input)
                .with_context(|| format!("reading {}", input.display()))?;
            let fixture: controller::Fixture = serde_norway::from_str(&text)
                .with_context(|| format!("{} is not a controller fixture", input.display()))?;
            let runtime =
                Runtime::new(RuntimeConfig::new(cache_dir)).context("starting the wasm runtime")?;
            let report = controller::test(&runtime, &bytes, &fixture)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
