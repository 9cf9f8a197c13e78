//! `wasmco dev`: the API, the built-in controllers and three virtual
//! clusters in one process, with controllers hot-reloaded from a directory.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use wasmco_core::ControllerSpec;
use wasmco_core::wire::Answered;
use wasmco_runtime::ControllerKind;
use wasmco_runtime::builtin::BUILTINS;
use wasmco_vcluster::{Behaviour, VirtualCluster};

use super::CliError;
use super::apply::{RunOptions, apply};
use super::client::{ApiClient, Connection};
use super::controller::{Registration, upload};
use super::emcoctl::{Document, Operation};
use super::status::WatchOptions;

/// Where the dev server writes what it has to say.
pub type Console = Arc<Mutex<dyn Write + Send>>;

fn say(console: &Console, line: impl AsRef<str>) {
    let mut out = console.lock().unwrap_or_else(|p| p.into_inner());
    // The console is stdout; if it is gone there is no one to tell.
    let _ = writeln!(out, "{}", line.as_ref());
    let _ = out.flush();
}

/// A dev cluster: name, labels, capacity (kv-pairs).
type DevCluster = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// The clusters `wasmco dev` starts.
const DEV_CLUSTERS: [DevCluster; 3] = [
    (
        "dev-1",
        &["edge", "east"],
        &[("cpu", "8"), ("memory", "16Gi")],
    ),
    (
        "dev-2",
        &["edge", "west"],
        &[("cpu", "4"), ("memory", "8Gi")],
    ),
    (
        "dev-3",
        &["core", "west"],
        &[("cpu", "32"), ("memory", "128Gi"), ("nvidia.com/gpu", "2")],
    ),
];

/// The provider of the dev clusters.
pub const DEV_PROVIDER: &str = "dev";

/// How the dev server is set up.
#[derive(Debug, Clone)]
pub struct DevOptions {
    /// The data directory; `None` for a throwaway one.
    pub data_dir: Option<PathBuf>,
    /// The API's address; the clusters take the next ports (any free ones
    /// when it is port 0).
    pub listen: SocketAddr,
    /// How long a workload takes to become ready in the virtual clusters.
    pub ready_after: Duration,
    /// Where `.wasm` controllers are watched; `<data>/controllers` by default.
    pub controllers_dir: Option<PathBuf>,
    /// An example directory to apply once everything is up.
    pub example: Option<PathBuf>,
    /// Draw the example's status as progress bars.
    pub progress: bool,
}

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

/// Runs the dev server until Ctrl-C.
pub async fn run(options: DevOptions, console: Console) -> Result<(), CliError> {
    let throwaway;
    let data_dir = match &options.data_dir {
        Some(dir) => dir.clone(),
        None => {
            throwaway = tempfile::tempdir().map_err(|source| CliError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
            throwaway.path().to_owned()
        }
    };
    let clusters_dir = data_dir.join("clusters");
    let controllers_dir = options
        .controllers_dir
        .clone()
        .unwrap_or_else(|| data_dir.join("controllers"));
    for dir in [&clusters_dir, &controllers_dir] {
        create_dir(dir)?;
    }

    let state = crate::startup::open_state(
        &data_dir,
        Some((
            tokio::runtime::Handle::current(),
            wasmco_rsync::RsyncConfig::default(),
        )),
        crate::startup::HostOptions {
            compiler: wasmco_runtime::CompilerProcess::this_program(
                wasmco_runtime::DEFAULT_COMPILE_TIMEOUT,
            ),
            ..Default::default()
        },
    )?;
    let listener = crate::startup::bind(options.listen).await?;
    let api_addr = listener.local_addr()?;
    let server = tokio::spawn(crate::startup::serve(state, listener));
    say(&console, format!("wasmco dev: API on http://{api_addr}"));
    say(
        &console,
        format!("wasmco dev: status page on http://{api_addr}/ui (sign in with the admin token)"),
    );

    let clusters = start_clusters(&options, &clusters_dir).await?;
    let kubeconfigs: Vec<PathBuf> = clusters.iter().map(|(_, k)| k.clone()).collect();
    let admin_token = read_admin_token(&data_dir)?;
    let _token_for_cli = TokenForCli::leave(options.data_dir.is_none(), &admin_token)?;
    let summary = summary(
        &options,
        &data_dir,
        &clusters,
        &controllers_dir,
        &admin_token,
    );
    // The client blocks, so it lives on blocking threads only.
    let base = format!("http://{api_addr}");
    let example = options.example.clone();
    let progress = options.progress;
    let setup_console = console.clone();
    let watcher = tokio::task::spawn_blocking(move || -> Result<_, CliError> {
        let console = setup_console;
        let client = ApiClient::new(&Connection {
            server: base,
            token: Some(admin_token),
            ca_file: None,
        })?;
        register(&client, &kubeconfigs)?;
        summary.iter().for_each(|line| say(&console, line));
        let watcher = start_hot_reload(&client, &controllers_dir, console.clone())?;
        match &example {
            Some(example) => {
                if let Err(error) = run_example(&client, example, progress, &console) {
                    say(&console, format!("example failed: {error}"));
                }
            }
            None => say_next_steps(&console, &kubeconfigs[0]),
        }
        Ok(watcher)
    })
    .await
    .map_err(|e| CliError::Usage(format!("setting up failed: {e}")))??;
    say(&console, "wasmco dev is running; Ctrl-C stops it.");
    let served = server
        .await
        .map_err(|e| CliError::Usage(format!("the API stopped: {e}")))?;
    drop(watcher);
    drop(clusters);
    served.map_err(CliError::from)
}

/// Starts the dev clusters next to the API's port (or anywhere, when that
/// port is busy) and writes their kubeconfigs into `clusters_dir`.
async fn start_clusters(
    options: &DevOptions,
    clusters_dir: &Path,
) -> Result<Vec<(VirtualCluster, PathBuf)>, CliError> {
    let behaviour = Behaviour {
        ready_after: options.ready_after,
        ..Default::default()
    };
    let mut clusters = Vec::new();
    for (offset, (name, _, _)) in DEV_CLUSTERS.iter().enumerate() {
        let port = match options.listen.port() {
            0 => 0,
            base => base.saturating_add(offset as u16 + 1),
        };
        let preferred = SocketAddr::new(options.listen.ip(), port);
        // A fixed port keeps kubeconfigs valid across restarts; a busy one
        // is no reason not to start.
        let cluster = match VirtualCluster::start(name, preferred, behaviour.clone()).await {
            Ok(cluster) => cluster,
            Err(_) => {
                VirtualCluster::start(
                    name,
                    SocketAddr::new(options.listen.ip(), 0),
                    behaviour.clone(),
                )
                .await?
            }
        };
        let kubeconfig = clusters_dir.join(format!("{name}.kubeconfig"));
        cluster
            .write_kubeconfig(&kubeconfig)
            .map_err(|source| CliError::Io {
                path: kubeconfig.clone(),
                source,
            })?;
        clusters.push((cluster, kubeconfig));
    }
    Ok(clusters)
}

/// What the dev server tells its user at start.
fn summary(
    options: &DevOptions,
    data_dir: &Path,
    clusters: &[(VirtualCluster, PathBuf)],
    controllers_dir: &Path,
    admin_token: &str,
) -> Vec<String> {
    let mut summary = vec![format!(
        "  data          {}",
        display_dir(&options.data_dir, data_dir)
    )];
    for ((cluster, kubeconfig), (name, labels, _)) in clusters.iter().zip(DEV_CLUSTERS) {
        summary.push(format!(
            "  cluster       {DEV_PROVIDER}/{name} [{}] at http://{} (kubeconfig {})",
            labels.join(", "),
            cluster.addr(),
            kubeconfig.display()
        ));
    }
    let builtins: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
    summary.push(format!(
        "  controllers   {} (built in)",
        builtins.join(", ")
    ));
    summary.push(format!(
        "  hot reload    {}/*.wasm (a file's name is its controller's name)",
        controllers_dir.display()
    ));
    summary.push(match options.data_dir {
        Some(_) => format!(
            "  token         {} (the CLI reads it from there when run here)",
            data_dir.join(crate::startup::ADMIN_TOKEN_FILE).display()
        ),
        None => format!(
            "  token         export WASMCO_TOKEN={admin_token}  (the CLI run here reads {} while this runs)",
            crate::cli::client::ephemeral_token_file().display()
        ),
    });
    summary
}

/// The ephemeral server's token where the CLI looks, removed when the
/// server stops; a kept server removes one a killed ephemeral run left.
struct TokenForCli {
    file: Option<PathBuf>,
}

impl TokenForCli {
    fn leave(ephemeral: bool, token: &str) -> Result<Self, CliError> {
        let file = crate::cli::client::ephemeral_token_file();
        if !ephemeral {
            let _ = std::fs::remove_file(&file);
            return Ok(TokenForCli { file: None });
        }
        wasmco_store::secrets::write_private(&file, token.as_bytes()).map_err(|source| {
            CliError::Io {
                path: file.clone(),
                source,
            }
        })?;
        Ok(TokenForCli { file: Some(file) })
    }
}

impl Drop for TokenForCli {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _ = std::fs::remove_file(file);
        }
    }
}

fn create_dir(dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir).map_err(|source| CliError::Io {
        path: dir.to_owned(),
        source,
    })
}

fn read_admin_token(data_dir: &Path) -> Result<String, CliError> {
    let path = data_dir.join(crate::startup::ADMIN_TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(token) => Ok(token.trim().to_owned()),
        Err(source) => Err(CliError::Io { path, source }),
    }
}

fn say_next_steps(console: &Console, kubeconfig: &Path) {
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

fn display_dir(given: &Option<PathBuf>, actual: &Path) -> String {
    match given {
        Some(_) => actual.display().to_string(),
        None => format!("{} (thrown away at exit)", actual.display()),
    }
}

/// The provider, the clusters with their labels and capacity, and the
/// built-in controllers, through the API like any client; a second start
/// replaces what the first registered.
fn register(client: &ApiClient, kubeconfigs: &[PathBuf]) -> Result<(), CliError> {
    let document =
        |anchor: String, metadata: serde_json::Value, spec, file: Option<PathBuf>| Document {
            origin: "wasmco dev".into(),
            anchor,
            metadata: Some(metadata),
            spec: Some(spec),
            cluster_label: None,
            files: file.into_iter().collect(),
            many: false,
            unsupported: None,
        };
    let mut documents = vec![document(
        "cluster-providers".into(),
        json!({"name": DEV_PROVIDER, "description": "virtual clusters of wasmco dev"}),
        json!({}),
        None,
    )];
    for ((name, labels, kv), kubeconfig) in DEV_CLUSTERS.iter().zip(kubeconfigs) {
        let clusters = format!("cluster-providers/{DEV_PROVIDER}/clusters");
        documents.push(document(
            clusters.clone(),
            json!({"name": name}),
            json!({}),
            Some(kubeconfig.clone()),
        ));
        for label in labels.iter() {
            documents.push(Document {
                cluster_label: Some((*label).to_owned()),
                metadata: None,
                spec: None,
                ..document(
                    format!("{clusters}/{name}/labels"),
                    json!({}),
                    json!({}),
                    None,
                )
            });
        }
        let pairs: Vec<_> = kv.iter().map(|(k, v)| json!({ *k: v })).collect();
        documents.push(document(
            format!("{clusters}/{name}/kv-pairs"),
            json!({"name": "capacity"}),
            json!({"kv": pairs}),
            None,
        ));
    }
    let mut report = Vec::new();
    let options = RunOptions {
        stop_on_error: true,
        terminate_timeout: Duration::ZERO,
    };
    apply(client, &documents, options, &mut report).map_err(|e| {
        CliError::Usage(format!(
            "registering the dev clusters failed: {e}\n{}",
            String::from_utf8_lossy(&report)
        ))
    })?;
    for builtin in BUILTINS.iter().filter(|b| b.name != "generic-placement") {
        let registration = Registration {
            name: builtin.name.to_owned(),
            kind: Some(builtin.kind),
            priority: builtin.priority,
        };
        upload(client, &registration, builtin.wasm.to_vec())?;
    }
    Ok(())
}

/// Applies an example's documents, then follows its DIG until it is Ready.
fn run_example(
    client: &ApiClient,
    example: &Path,
    progress: bool,
    console: &Console,
) -> Result<(), CliError> {
    say(console, format!("Applying {}:", example.display()));
    let loaded = super::emcoctl::load(&[example.to_owned()], None)?;
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
            && action == "instantiate"
        {
            let mut shown = Vec::new();
            let watch = WatchOptions {
                watch: true,
                timeout: Duration::from_secs(120),
                progress,
            };
            let outcome = super::status::show(client, &format!("v2/{dig}"), &watch, &mut shown);
            say(console, String::from_utf8_lossy(&shown).trim_end());
            outcome?;
        }
    }
    Ok(())
}

/// Registers every `.wasm` in `dir` now and again whenever one changes.
/// The watcher stops when the returned value is dropped.
fn start_hot_reload(
    client: &ApiClient,
    dir: &Path,
    console: Console,
) -> Result<notify::RecommendedWatcher, CliError> {
    use notify::Watcher;
    let (events, incoming) = std::sync::mpsc::channel::<notify::Result<notify::Event>>();
    let mut watcher = notify::recommended_watcher(events)
        .map_err(|e| CliError::Usage(format!("cannot watch {}: {e}", dir.display())))?;
    watcher
        .watch(dir, notify::RecursiveMode::NonRecursive)
        .map_err(|e| CliError::Usage(format!("cannot watch {}: {e}", dir.display())))?;
    let client = client.clone();
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        let existing: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_wasm(p))
            .collect();
        for path in existing {
            reload(&client, &path, &console);
        }
        while let Ok(event) = incoming.recv() {
            let mut changed: Vec<PathBuf> = Vec::new();
            let mut note = |event: notify::Result<notify::Event>| {
                if let Ok(event) = event
                    && (event.kind.is_create() || event.kind.is_modify())
                {
                    changed.extend(event.paths.into_iter().filter(|p| is_wasm(p)));
                }
            };
            note(event);
            // A copy arrives as several events; wait for the file to settle.
            std::thread::sleep(Duration::from_millis(300));
            while let Ok(event) = incoming.try_recv() {
                note(event);
            }
            changed.sort();
            changed.dedup();
            for path in changed {
                if path.exists() {
                    reload(&client, &path, &console);
                }
            }
        }
    });
    Ok(watcher)
}

fn is_wasm(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wasm")
}

/// Registers one `.wasm`, keeping the priority it was registered with.
fn reload(client: &ApiClient, path: &Path, console: &Console) {
    let Some(name) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        return;
    };
    let outcome = (|| -> Result<(bool, ControllerKind), CliError> {
        let wasm = std::fs::read(path).map_err(|source| CliError::Io {
            path: path.to_owned(),
            source,
        })?;
        let kind = wasmco_runtime::kind_exported_by(&wasm)
            .ok_or_else(|| CliError::Usage("exports no wasmco controller world".into()))?;
        let priority = client
            .get_as::<Answered<ControllerSpec>>(&format!("v2/controllers/{name}"))
            .map_or(100, |c| c.spec.priority);
        let registration = Registration {
            name: name.clone(),
            kind: Some(kind),
            priority,
        };
        Ok((upload(client, &registration, wasm)?, kind))
    })();
    match outcome {
        Ok((new, kind)) => say(
            console,
            format!(
                "hot reload: {} {kind} controller {name} from {}",
                if new { "registered" } else { "reloaded" },
                path.display()
            ),
        ),
        Err(error) => say(
            console,
            format!(
                "hot reload: {name} from {} refused: {error}",
                path.display()
            ),
        ),
    }
}
