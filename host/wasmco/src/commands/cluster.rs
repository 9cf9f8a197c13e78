//! `wasmco cluster`: clusters made on machines from Eggo's deploy file
//! (`deploy -f`, `status`, `cleanup`, `join`, `delete`, `upgrade -f`,
//! `template`, `gitops`),
//! through the REST API.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use wasmco::cli::client::{ApiClient, Upload};
use wasmco::cli::deploys;
use wasmco_core::eggo::{HostConfig, JoinFile};
use wasmco_core::wire::{
    ClusterDeploymentAction, ClusterDeploymentState, ClusterDeploymentStatus, GitOpsStatus,
};

use super::connect::Connect;

/// The cluster verbs.
#[derive(clap::Subcommand)]
pub enum ClusterCommand {
    /// Make a cluster from an Eggo deploy file (as `eggo deploy -f`): the
    /// file and its SSH key are uploaded, the deploy runs on the server,
    /// and its progress is shown until it ends.
    Deploy(DeployArgs),
    /// Show a cluster deployment's state: each machine's phase, the step
    /// under way and the last error.
    Status(StatusArgs),
    /// Take a deployed cluster down (as `eggo cleanup`): its services
    /// stopped and what the deploy put on the machines removed, then the
    /// cluster unregistered; followed until it ends.
    Cleanup(CleanupArgs),
    /// Add a machine (or a join file's machines) to a deployed cluster, as
    /// `eggo join` does; followed until it ends.
    Join(JoinArgs),
    /// Take machines out of a deployed cluster, as `eggo delete` does
    /// (drained first); followed until it ends.
    Delete(DeleteArgs),
    /// Roll a changed deploy file (a package archive with a new Kubernetes
    /// or etcd) out over a deployed cluster one machine at a time, the
    /// masters first and each worker drained; followed until it ends.
    Upgrade(DeployArgs),
    /// Write a deploy file to start from: Eggo's template, with what wasmco
    /// does not deploy changed to what it does.
    Template(TemplateArgs),
    /// Show GitOps mode's status (`wasmco serve --cluster-repo`): the
    /// commit read, and per deploy file its cluster, state, the commit it
    /// reached and what stops it.
    Gitops,
}

/// `wasmco cluster deploy`.
#[derive(clap::Args)]
pub struct DeployArgs {
    /// Eggo's deploy file.
    #[arg(short = 'f', long = "file")]
    file: PathBuf,
    /// The cluster provider it is made under (created when missing).
    #[arg(long, default_value = "eggo")]
    provider: String,
    /// The deployment's name (and the cluster's, under the provider):
    /// the file's `cluster-id` when absent.
    #[arg(long)]
    name: Option<String>,
    /// A label the cluster is registered with (repeatable).
    #[arg(long = "label")]
    labels: Vec<String>,
    #[command(flatten)]
    wait: Wait,
}

/// `wasmco cluster status`.
#[derive(clap::Args)]
pub struct StatusArgs {
    /// The deployment's name.
    name: String,
    /// Its cluster provider.
    #[arg(long, default_value = "eggo")]
    provider: String,
    /// Follow it until its run ends.
    #[arg(long, short = 'w')]
    watch: bool,
    /// Give up following after this long.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

/// `wasmco cluster cleanup`.
#[derive(clap::Args)]
pub struct CleanupArgs {
    /// The deployment's name.
    #[arg(required_unless_present = "id")]
    name: Option<String>,
    /// The deployment's name, as Eggo's `--id` gives it.
    #[arg(long, conflicts_with = "name")]
    id: Option<String>,
    /// Its cluster provider.
    #[arg(long, default_value = "eggo")]
    provider: String,
    /// Terminate what wasmco deployed on the cluster (DIGs, logical
    /// clouds, network intents) first, instead of refusing.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    wait: Wait,
}

/// Whether and how long a verb follows its run.
#[derive(clap::Args)]
pub struct Wait {
    /// Start the run and return.
    #[arg(long)]
    no_wait: bool,
    /// Give up waiting after this long (the run goes on on the server).
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

impl Wait {
    fn limit(&self) -> Option<Duration> {
        (!self.no_wait).then_some(self.timeout)
    }
}

/// `wasmco cluster join`.
#[derive(clap::Args)]
pub struct JoinArgs {
    /// The machine's address (without `--file`).
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    ip: Option<String>,
    /// The deployment's name (Eggo's cluster id).
    #[arg(long)]
    id: String,
    /// Its cluster provider.
    #[arg(long, default_value = "eggo")]
    provider: String,
    /// What the machine joins as: `master`, `worker` or `master,worker`.
    #[arg(long = "type", default_value = "worker", conflicts_with = "file")]
    roles: String,
    /// The machine's node name.
    #[arg(long, required_unless_present = "file", conflicts_with = "file")]
    name: Option<String>,
    /// Its SSH port.
    #[arg(long, default_value_t = 22, conflicts_with = "file")]
    port: u16,
    /// Its architecture.
    #[arg(long, default_value = "amd64", conflicts_with = "file")]
    arch: String,
    /// Eggo's join file: a deploy file whose `masters` and `workers` join.
    #[arg(short = 'f', long)]
    file: Option<PathBuf>,
    #[command(flatten)]
    wait: Wait,
}

/// `wasmco cluster delete`.
#[derive(clap::Args)]
pub struct DeleteArgs {
    /// The machines' node names.
    #[arg(required = true)]
    nodes: Vec<String>,
    /// The deployment's name (Eggo's cluster id).
    #[arg(long)]
    id: String,
    /// Its cluster provider.
    #[arg(long, default_value = "eggo")]
    provider: String,
    #[command(flatten)]
    wait: Wait,
}

/// `wasmco cluster template`.
#[derive(clap::Args)]
pub struct TemplateArgs {
    /// Where to write it (standard output when absent).
    #[arg(short = 'f', long = "file")]
    file: Option<PathBuf>,
}

pub fn run(connect: &Connect, command: ClusterCommand) -> anyhow::Result<()> {
    match command {
        ClusterCommand::Deploy(args) => deploy(connect, args, ClusterDeploymentAction::Deploy),
        ClusterCommand::Upgrade(args) => deploy(connect, args, ClusterDeploymentAction::Upgrade),
        ClusterCommand::Status(args) => {
            let client = connect.client()?;
            let path = deploys::item(&args.provider, &args.name);
            follow(&client, &path, args.watch, args.timeout)
        }
        ClusterCommand::Cleanup(args) => {
            let client = connect.client()?;
            let name = args.name.or(args.id).unwrap_or_default();
            let item = deploys::item(&args.provider, &name);
            let body = json!({"force": args.force});
            let action = ClusterDeploymentAction::Cleanup;
            act(&client, &item, action, &body, args.wait.limit())
        }
        ClusterCommand::Join(args) => {
            let body = join_body(&args)?;
            let client = connect.client()?;
            let item = deploys::item(&args.provider, &args.id);
            let action = ClusterDeploymentAction::Join;
            act(&client, &item, action, &body, args.wait.limit())
        }
        ClusterCommand::Delete(args) => {
            let client = connect.client()?;
            let item = deploys::item(&args.provider, &args.id);
            let body = json!({"nodes": args.nodes});
            let action = ClusterDeploymentAction::Delete;
            act(&client, &item, action, &body, args.wait.limit())
        }
        ClusterCommand::Gitops => {
            let status: GitOpsStatus = connect.client()?.get_as("/v2/gitops")?;
            Ok(std::io::stdout().write_all(gitops_table(&status).as_bytes())?)
        }
        ClusterCommand::Template(args) => {
            let text = wasmco_core::eggo::to_yaml(&wasmco_clusters::template())
                .map_err(|e| anyhow::anyhow!("{}: {}", e.field, e.reason))?;
            match args.file {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display())),
                None => Ok(std::io::stdout().write_all(text.as_bytes())?),
            }
        }
    }
}

/// Uploads the deploy file (and its key) and posts `action` (`deploy`,
/// `upgrade`) on it.
fn deploy(
    connect: &Connect,
    args: DeployArgs,
    action: ClusterDeploymentAction,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let config = wasmco_core::eggo::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}: {}", args.file.display(), e.field, e.reason))?;
    let name = args
        .name
        .unwrap_or_else(|| config.with_defaults().cluster_id);
    let mut files = vec![Upload {
        part: "file",
        file_name: file_name(&args.file),
        bytes: text.into_bytes(),
    }];
    if config.password.is_empty() && !config.private_key_path.is_empty() {
        // Read here, where Eggo reads it: the server reads no key from its disk.
        let key = Path::new(&config.private_key_path);
        let bytes = std::fs::read(key).with_context(|| {
            format!(
                "cannot read private-key-path {} named by {}",
                key.display(),
                args.file.display()
            )
        })?;
        files.push(Upload {
            part: "privateKey",
            file_name: file_name(key),
            bytes,
        });
    }
    let client = connect.client()?;
    deploys::ensure_provider(&client, &args.provider)?;
    let body = json!({
        "metadata": {"name": name},
        "spec": {"labels": args.labels},
    });
    let collection = deploys::collection(&args.provider);
    let item = deploys::item(&args.provider, &name);
    client.create_or_replace(&collection, &item, &body, true, files)?;
    act(
        &client,
        &item,
        action,
        &serde_json::Value::Null,
        args.wait.limit(),
    )
}

/// The join's body: the join file's machines, or the one machine the
/// flags name, with each role `--type` gives it.
fn join_body(args: &JoinArgs) -> anyhow::Result<serde_json::Value> {
    let join = match &args.file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let config = wasmco_core::eggo::parse(&text)
                .map_err(|e| anyhow::anyhow!("{}: {}: {}", path.display(), e.field, e.reason))?;
            JoinFile {
                masters: config.masters,
                workers: config.workers,
            }
        }
        None => {
            let host = HostConfig {
                name: args.name.clone().unwrap_or_default(),
                ip: args.ip.clone().unwrap_or_default(),
                port: i64::from(args.port),
                arch: args.arch.clone(),
            };
            let mut join = JoinFile::default();
            for role in args.roles.split(',').map(str::trim) {
                match role {
                    "master" => join.masters.push(host.clone()),
                    "worker" => join.workers.push(host.clone()),
                    other => anyhow::bail!(
                        "--type {other:?}: a machine joins as master, worker or master,worker"
                    ),
                }
            }
            join
        }
    };
    Ok(serde_json::to_value(join)?)
}

/// Posts `action` on the deployment at `item` and says what started;
/// with `wait`, follows the run until it ends (or `wait` passes).
fn act(
    client: &ApiClient,
    item: &str,
    action: ClusterDeploymentAction,
    body: &serde_json::Value,
    wait: Option<Duration>,
) -> anyhow::Result<()> {
    let started: ClusterDeploymentStatus =
        client.post_as(&format!("{item}/{}", action.route()), body)?;
    let doing = match action {
        ClusterDeploymentAction::Deploy => "deploying",
        ClusterDeploymentAction::Cleanup => "cleaning up",
        ClusterDeploymentAction::Join => "joining machines to",
        ClusterDeploymentAction::Delete => "taking machines out of",
        ClusterDeploymentAction::Upgrade => "upgrading",
    };
    println!(
        "{doing} cluster {} under provider {} ({} machines); `wasmco cluster status {}` follows it",
        started.cluster,
        started.cluster_provider,
        started.progress.nodes.len(),
        started.name
    );
    match wait {
        Some(timeout) => follow(client, item, true, timeout),
        None => Ok(()),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Shows the deployment at `item`; with `watch`, until its run ends: bars
/// on a terminal, a line per change elsewhere. A failed run is an error.
fn follow(client: &ApiClient, item: &str, watch: bool, timeout: Duration) -> anyhow::Result<()> {
    let status_path = format!("{item}/status");
    let deadline = Instant::now() + timeout;
    let mut view = deploys::View::new(std::io::stderr().is_terminal() && watch);
    loop {
        let status: ClusterDeploymentStatus = client.get_as(&status_path)?;
        view.show(&status);
        if !watch || !status.state.is_running() {
            view.finish(&status, &mut std::io::stdout().lock())?;
            if status.state == ClusterDeploymentState::Failed {
                anyhow::bail!(
                    "the run of {} failed: {}",
                    status.name,
                    status
                        .progress
                        .error
                        .as_deref()
                        .unwrap_or("no error recorded")
                );
            }
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "still {} after {timeout:?}; it goes on on the server",
                status.state
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The repository's line, then a row per deploy file.
fn gitops_table(status: &GitOpsStatus) -> String {
    let short = |commit: &Option<String>| -> String {
        commit
            .as_deref()
            .map_or("-".to_owned(), |c| c.chars().take(12).collect())
    };
    let mut out = format!(
        "repository {}{} (provider {}) at {}, read {}\n",
        status.repo,
        status
            .branch
            .as_ref()
            .map(|b| format!("#{b}"))
            .unwrap_or_default(),
        status.cluster_provider,
        short(&status.commit),
        status.polled.as_deref().unwrap_or("never"),
    );
    if let Some(error) = &status.error {
        out.push_str(&format!("cannot read it: {error}\n"));
    }
    out.push_str(&format!(
        "{:<28} {:<20} {:<14} {:<13} {}\n",
        "FILE", "DEPLOYMENT", "STATE", "REACHED", "PROBLEM"
    ));
    for file in &status.files {
        let state = file.state.map_or("-".to_owned(), |s| s.to_string());
        let state = if file.removed {
            format!("{state} (removed)")
        } else {
            state
        };
        let problem = file
            .error
            .as_ref()
            .map_or(String::new(), |e| match &e.field {
                Some(field) => format!("{field}: {}", e.reason),
                None => e.reason.clone(),
            });
        out.push_str(&format!(
            "{:<28} {:<20} {:<14} {:<13} {}\n",
            file.path,
            file.cluster_deployment.as_deref().unwrap_or("-"),
            state,
            short(&file.reached),
            problem
        ));
    }
    out
}
