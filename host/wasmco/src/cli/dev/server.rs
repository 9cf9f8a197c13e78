//! The dev server: the API, the clusters and the hot reload, started in
//! order, until Ctrl-C.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use wasmco_runtime::builtin::BUILTINS;
use wasmco_vcluster::VirtualCluster;

use crate::cli::client::{ApiClient, Connection};
use crate::cli::error::CliError;
use crate::startup::{ADMIN_TOKEN_FILE, ServeError};

use super::clusters::{DEV_CLUSTERS, DEV_PROVIDER, register, start_clusters};
use super::console::{Console, say, say_next_steps};
use super::example::run_example;
use super::hot_reload::start_hot_reload;
use super::options::DevOptions;

/// Runs the dev server until Ctrl-C.
pub async fn run(options: DevOptions, console: Console) -> Result<(), CliError> {
    // Kept until the server stops, when a throwaway directory goes.
    let (data_dir, _throwaway) = data_dir(&options)?;
    let clusters_dir = data_dir.join("clusters");
    let controllers_dir = options
        .controllers_dir
        .clone()
        .unwrap_or_else(|| data_dir.join("controllers"));
    for dir in [&clusters_dir, &controllers_dir] {
        create_dir(dir)?;
    }
    let (api_addr, server) = start_api(&data_dir, options.listen).await?;
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
    let setup = SetUp {
        base: format!("http://{api_addr}"),
        admin_token,
        kubeconfigs,
        summary,
        controllers_dir,
        example: options.example.clone(),
        progress: options.progress,
        console: console.clone(),
    };
    let watcher = tokio::task::spawn_blocking(move || setup.run())
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

/// The data directory the options name, or a throwaway one (returned too,
/// as it is removed when dropped).
fn data_dir(options: &DevOptions) -> Result<(PathBuf, Option<tempfile::TempDir>), CliError> {
    match &options.data_dir {
        Some(dir) => Ok((dir.clone(), None)),
        None => {
            let throwaway = tempfile::tempdir().map_err(|source| CliError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
            Ok((throwaway.path().to_owned(), Some(throwaway)))
        }
    }
}

/// Opens the state in `data_dir` and serves the API on `listen`.
async fn start_api(
    data_dir: &Path,
    listen: SocketAddr,
) -> Result<(SocketAddr, tokio::task::JoinHandle<Result<(), ServeError>>), CliError> {
    let state = crate::startup::open_state(
        data_dir,
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
    let listener = crate::startup::bind(listen).await?;
    let api_addr = listener.local_addr()?;
    Ok((
        api_addr,
        tokio::spawn(crate::startup::serve(state, listener)),
    ))
}

/// What is done through the API once it is up: the clusters and built-in
/// controllers registered, the hot reload started, the example applied.
struct SetUp {
    base: String,
    admin_token: String,
    kubeconfigs: Vec<PathBuf>,
    summary: Vec<String>,
    controllers_dir: PathBuf,
    example: Option<PathBuf>,
    progress: bool,
    console: Console,
}

impl SetUp {
    /// Does it, on a blocking thread; the hot reload's watcher, which
    /// stops when dropped.
    fn run(self) -> Result<notify::RecommendedWatcher, CliError> {
        let console = self.console;
        let client = ApiClient::new(&Connection {
            server: self.base,
            token: Some(self.admin_token),
            ca_file: None,
        })?;
        register(&client, &self.kubeconfigs)?;
        self.summary.iter().for_each(|line| say(&console, line));
        let watcher = start_hot_reload(&client, &self.controllers_dir, console.clone())?;
        match &self.example {
            Some(example) => {
                if let Err(error) = run_example(&client, example, self.progress, &console) {
                    say(&console, format!("example failed: {error}"));
                }
            }
            None => say_next_steps(&console, &self.kubeconfigs[0]),
        }
        Ok(watcher)
    }
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
            data_dir.join(ADMIN_TOKEN_FILE).display()
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
    let path = data_dir.join(ADMIN_TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(token) => Ok(token.trim().to_owned()),
        Err(source) => Err(CliError::Io { path, source }),
    }
}

fn display_dir(given: &Option<PathBuf>, actual: &Path) -> String {
    match given {
        Some(_) => actual.display().to_string(),
        None => format!("{} (thrown away at exit)", actual.display()),
    }
}
