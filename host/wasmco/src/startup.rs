//! Start-up: the composition root. Opens the data directory (master key,
//! store, compile cache, admin token, audit log), wires the runtime, the
//! orchestrator and rsync together, checks what is stored against this
//! host's policies, and serves the router the API builds from the result.
//! The API itself only gets a ready [`AppState`].

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use wasmco_api::auth::{AuditLog, Tokens};
use wasmco_api::{AppState, WorkPool, router};
use wasmco_core::Kind;
use wasmco_orchestrator::{ControllerRegistry, NoSync, Orchestrator};
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_runtime::LimitOverrides;
use wasmco_runtime::builtin;
use wasmco_runtime::{Runtime, RuntimeConfig, RuntimeError};
use wasmco_store::appcontext::ContextStore;
use wasmco_store::db::ResourceDb;
use wasmco_store::hosts::{HostGroup, HostInfo, SoloHost};
use wasmco_store::secrets::MasterKey;
use wasmco_store::{BatchOp, EtcdStore, Expect, KvStore, SledStore, StoreError};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The store would not open.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The runtime would not start.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The resource database could not be read (controllers, clusters, tokens).
    #[error("cannot read the resource database: {0}")]
    Db(#[from] wasmco_store::db::DbError),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The built-in generic placement controller is missing from this build.
    #[error("this build has no built-in generic placement controller")]
    Builtin,
    /// The built-in generic placement controller does not load.
    #[error("the built-in generic placement controller does not load: {0}")]
    Generic(wasmco_runtime::RegistrationError),
    /// Deployments could not be taken up again.
    #[error("cannot resume deployments: {0}")]
    Resume(String),
    /// The server stopped with an error.
    #[error("server failed: {0}")]
    Io(#[from] std::io::Error),
    /// The TLS set-up failed.
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    /// The master key is wrong or unreadable.
    #[error(transparent)]
    MasterKey(#[from] wasmco_store::secrets::SecretError),
    /// The shared store's secrets are sealed under another master key.
    #[error(
        "the store's secrets are sealed under another master key: every host sharing a \
         store needs the same one (point WASMCO_MASTER_KEY_FILE at a copy of the first \
         host's DATA_DIR/master.key)"
    )]
    SharedMasterKey,
    /// The store holds sealed secrets and no master key was given.
    #[error(
        "this data directory's secrets are sealed and there is no master key: set \
         WASMCO_MASTER_KEY or put the key in {}", file.display()
    )]
    NoMasterKey {
        /// Where the key was looked for.
        file: std::path::PathBuf,
    },
}

/// What users' input may ask of this host.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Where the state lives; `None` is sled in the data directory.
    pub store: Option<StoreLocation>,
    /// What a cluster's kubeconfig may ask.
    pub kubeconfigs: Arc<KubeconfigPolicy>,
    /// Where uploaded components compile: a child process with a time
    /// limit, or (when unset) this process.
    pub compiler: Option<wasmco_runtime::CompilerProcess>,
    /// The limits a controller gets unless its registration tightens them.
    pub controller_limits: wasmco_runtime::ControllerLimits,
    /// Where the Helm renderer is cached and what a render may use.
    pub helm: wasmco_runtime::helm::HelmConfig,
    /// How this host appears to the others sharing its store.
    pub host: HostIdentity,
    /// Credentials and TLS for an etcd store.
    pub etcd: EtcdAccess,
}

/// How a host appears to the others sharing its store.
#[derive(Debug, Clone)]
pub struct HostIdentity {
    /// Unique among the hosts; `None` makes one from the machine's name.
    pub id: Option<String>,
    /// Where it serves the API.
    pub address: String,
    /// How long the others wait for a host that stopped answering before
    /// they take over its work.
    pub lease_ttl: std::time::Duration,
}

impl Default for HostIdentity {
    fn default() -> Self {
        HostIdentity {
            id: None,
            address: String::new(),
            lease_ttl: std::time::Duration::from_secs(10),
        }
    }
}

/// Credentials and TLS for an etcd store.
#[derive(Debug, Clone, Default)]
pub struct EtcdAccess {
    /// User name and password (etcd's authentication).
    pub user: Option<(String, String)>,
    /// The CA that signed etcd's serving certificate: the endpoints are
    /// then reached over TLS.
    pub ca: Option<std::path::PathBuf>,
    /// The client certificate and key this host shows etcd.
    pub identity: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl EtcdAccess {
    /// The store options for `endpoints` (written `http://…`).
    fn options(&self, endpoints: &[String]) -> Result<wasmco_store::EtcdOptions, ServeError> {
        let read = |path: &std::path::PathBuf| {
            std::fs::read(path).map_err(|e| {
                ServeError::Io(std::io::Error::new(
                    e.kind(),
                    format!("cannot read {}: {e}", path.display()),
                ))
            })
        };
        let tls = self.ca.is_some() || self.identity.is_some();
        let endpoints = endpoints
            .iter()
            .map(|endpoint| match endpoint.strip_prefix("http://") {
                Some(host) if tls => format!("https://{host}"),
                _ => endpoint.clone(),
            })
            .collect();
        Ok(wasmco_store::EtcdOptions {
            endpoints,
            user: self.user.clone(),
            ca_pem: self.ca.as_ref().map(read).transpose()?,
            identity_pem: match &self.identity {
                Some((certificate, key)) => Some((read(certificate)?, read(key)?)),
                None => None,
            },
        })
    }
}

/// A host id from the machine's name and a random suffix, so two hosts
/// started on one machine differ.
fn default_host_id() -> String {
    let machine = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "wasmco".into());
    format!("{machine}-{:06x}", fastrand::u32(..0x100_0000))
}

/// Where a host keeps its state: `--store sled:DIR` or
/// `--store etcd://host:2379[,host2:2379…]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// sled, embedded, in this directory.
    Sled(std::path::PathBuf),
    /// An etcd cluster, by its client endpoints (`http://host:port`).
    Etcd(Vec<String>),
}

impl std::str::FromStr for StoreLocation {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(dir) = text.strip_prefix("sled:").filter(|d| !d.is_empty()) {
            return Ok(StoreLocation::Sled(dir.into()));
        }
        if let Some(hosts) = text.strip_prefix("etcd://") {
            let endpoints: Vec<String> = hosts
                .split(',')
                .map(|host| format!("http://{host}"))
                .collect();
            let valid = hosts.split(',').all(|host| {
                host.rsplit_once(':')
                    .is_some_and(|(name, port)| !name.is_empty() && port.parse::<u16>().is_ok())
            });
            if valid {
                return Ok(StoreLocation::Etcd(endpoints));
            }
        }
        Err(format!(
            "{text:?} is neither sled:DIR nor etcd://host:port[,host:port…]"
        ))
    }
}

/// Opens the data directory (store and compile cache) and loads the stored controllers.
/// `sync` runs rsync on that runtime; without it, finished contexts are only
/// recorded (for tools that build contexts and deploy nothing).
/// `options` say what users' input may ask of this host; the stored
/// clusters are checked against them now.
pub fn open_state(
    data_dir: &Path,
    sync: Option<(tokio::runtime::Handle, wasmco_rsync::RsyncConfig)>,
    options: HostOptions,
) -> Result<AppState, ServeError> {
    let kubeconfigs = options.kubeconfigs;
    // Before the store opens: a refused key must leave its files untouched.
    let master_key = open_master_key(data_dir)?;
    let me = HostInfo {
        id: options.host.id.clone().unwrap_or_else(default_host_id),
        address: options.host.address.clone(),
        started: wasmco_store::appcontext::now(),
    };
    let (store, hosts): (Arc<dyn KvStore>, Arc<dyn HostGroup>) = match &options.store {
        None => (
            Arc::new(SledStore::open(&data_dir.join("db"))?),
            Arc::new(SoloHost::new(me)),
        ),
        Some(StoreLocation::Sled(dir)) => {
            (Arc::new(SledStore::open(dir)?), Arc::new(SoloHost::new(me)))
        }
        Some(StoreLocation::Etcd(endpoints)) => {
            let etcd = EtcdStore::connect_with(&options.etcd.options(endpoints)?)?;
            master_key_fits_store(&etcd, &master_key)?;
            let hosts = etcd.join(me, options.host.lease_ttl)?;
            (Arc::new(etcd), Arc::new(hosts))
        }
    };
    let mut runtime_config = RuntimeConfig::new(data_dir.join("cache"));
    runtime_config.compiler = options.compiler;
    runtime_config.default_limits = options.controller_limits;
    let runtime = Runtime::new(runtime_config)?;
    let db = ResourceDb::with_master_key(store.clone(), master_key);
    let controllers = ControllerRegistry::with_runtime(runtime.clone());
    let loaded = controllers.load_stored(&db, &runtime)?;
    tracing::info!(controllers = loaded, data_dir = %data_dir.display(), "state loaded");
    let generic = builtin::builtin("generic-placement").ok_or(ServeError::Builtin)?;
    let generic = runtime
        .load(
            generic.name,
            generic.kind,
            generic.wasm,
            &LimitOverrides::default(),
        )
        .map_err(ServeError::Generic)?;
    let helm = wasmco_runtime::helm::HelmRenderer::new(options.helm);
    if helm.available() {
        // Off the request path: only a request that needs a chart waits.
        helm.start();
    } else {
        tracing::warn!("built without Helm support (no Go at build time): charts are refused");
    }
    let mut registry = prometheus_client::registry::Registry::default();
    store.metrics().register(&mut registry);
    let contexts = ContextStore::new(store);
    runtime.metrics().register(&mut registry);
    let rsync = sync.map(|(handle, mut config)| {
        config.kubeconfigs = kubeconfigs.clone();
        Arc::new(wasmco_rsync::Rsync::new(
            db.clone(),
            contexts.clone(),
            handle,
            config,
            hosts.clone(),
        ))
    });
    let engine: Arc<dyn wasmco_orchestrator::SyncEngine> = match &rsync {
        Some(rsync) => rsync.clone(),
        None => Arc::new(NoSync),
    };
    let mut orchestrator = Orchestrator::new(
        db.clone(),
        contexts,
        controllers.clone(),
        Arc::new(generic),
        helm,
        engine,
        kubeconfigs.clone(),
    );
    if hosts.shared() {
        orchestrator = orchestrator.with_hosts(hosts.clone());
    }
    // Listening before rsync takes its work up, so that the first
    // reconciles after a restart are heard too.
    let follow_ups = wasmco_orchestrator::FollowUps::start(&orchestrator);
    if let Some(rsync) = &rsync {
        let resumed = rsync
            .resume()
            .map_err(|e| ServeError::Resume(e.to_string()))?;
        tracing::info!(resumed, "deployments taken up again");
        rsync.metrics().register(&mut registry);
    }
    let refused = mark_cluster_kubeconfigs(&db, &kubeconfigs)?;
    if refused > 0 {
        tracing::warn!(
            clusters = refused,
            "stored clusters whose kubeconfigs this server refuses; they are marked and not synced"
        );
    }
    let admin_token: Arc<str> = open_admin_token(data_dir)?.into();
    let tokens = Tokens::load(admin_token.clone(), &db)?;
    let audit = AuditLog::open(&data_dir.join(AUDIT_LOG_FILE))?;
    orchestrator.metrics().register(&mut registry);
    let metrics = Arc::new(wasmco_api::metrics::Metrics::new(registry, db.clone()));
    Ok(AppState {
        db,
        runtime,
        controllers,
        orchestrator,
        admin_token,
        tokens: Arc::new(tokens),
        audit,
        kubeconfigs,
        work: WorkPool::default(),
        hosts,
        metrics,
        follow_ups,
    })
}

/// Checks every stored cluster's kubeconfig against `policy` and records
/// the verdict in the cluster's `status` (a kubeconfig an older version
/// accepted may be refused now); answers how many are refused.
fn mark_cluster_kubeconfigs(
    db: &ResourceDb,
    policy: &KubeconfigPolicy,
) -> Result<usize, wasmco_store::db::DbError> {
    let mut refused = 0;
    for (provider, _) in db.list(Kind::ClusterProvider, &[])? {
        for (id, mut body) in db.list(Kind::Cluster, &provider.path)? {
            let kubeconfig = db.file(&id)?.unwrap_or_default();
            let status = wasmco_pki::kubeconfig::cluster_status(policy, &kubeconfig).unwrap_or_else(|e| {
                refused += 1;
                tracing::warn!(cluster = %id.describe(), reason = %e, "kubeconfig refused");
                serde_json::json!({"kubeconfig": {"refused": {"field": e.field, "reason": e.reason}}})
            });
            if body["status"] == status {
                continue;
            }
            body["status"] = status;
            db.update(
                &id,
                wasmco_store::db::Write {
                    body,
                    references: Vec::new(),
                    file: None,
                },
            )?;
        }
    }
    Ok(refused)
}

/// The audit log in the data directory: one JSON line per request.
pub const AUDIT_LOG_FILE: &str = "audit.log";

/// The file holding the admin bearer token, made (0600) on first start.
pub const ADMIN_TOKEN_FILE: &str = "admin.token";

fn open_admin_token(data_dir: &Path) -> Result<String, ServeError> {
    let path = data_dir.join(ADMIN_TOKEN_FILE);
    match wasmco_store::secrets::read_or_make_hex(&path, true)? {
        Some(token) if !token.is_empty() => Ok(token),
        _ => Err(ServeError::Io(std::io::Error::other(format!(
            "{} is empty; delete it to have a new token made",
            path.display()
        )))),
    }
}

/// The file beside the store that tells a right master key from a wrong
/// one (a value sealed under the key; no secret).
const MASTER_KEY_CHECK: &str = "master-key.check";

/// The master key: `WASMCO_MASTER_KEY`, else the file named by
/// `WASMCO_MASTER_KEY_FILE`, else `DATA_DIR/master.key`, made (0600) for a
/// data directory that has sealed nothing yet. A key that did not seal
/// this data directory is refused before the store is opened.
fn open_master_key(data_dir: &Path) -> Result<Arc<MasterKey>, ServeError> {
    let file = std::env::var_os("WASMCO_MASTER_KEY_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| data_dir.join("master.key"));
    let check_path = data_dir.join(MASTER_KEY_CHECK);
    let check = match std::fs::read(&check_path) {
        Ok(check) => Some(check),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(ServeError::Io(e)),
    };
    let key = MasterKey::load(&file, check.is_none())?
        .ok_or_else(|| ServeError::NoMasterKey { file: file.clone() })?;
    match check {
        Some(check) => key.verify(&check)?,
        None => wasmco_store::secrets::write_private(&check_path, &key.check_value())?,
    }
    Ok(Arc::new(key))
}

/// The store's record of the master key its secrets are sealed under.
const STORE_MASTER_KEY_CHECK: &[u8] = b"meta/master-key-check";

/// Refuses a master key other than the one the store's secrets are sealed
/// under (hosts sharing a store must share the key); records it when the
/// store has none yet.
fn master_key_fits_store(store: &dyn KvStore, key: &MasterKey) -> Result<(), ServeError> {
    let check = key.check_value();
    let recorded = store.batch_if(
        vec![Expect::Absent(STORE_MASTER_KEY_CHECK.to_vec())],
        vec![BatchOp::Put(STORE_MASTER_KEY_CHECK.to_vec(), check.clone())],
    )?;
    if recorded {
        return Ok(());
    }
    let stored = store.get(STORE_MASTER_KEY_CHECK)?.unwrap_or_default();
    key.verify(&stored).map_err(|_| ServeError::SharedMasterKey)
}

/// The host CA's certificate in the data directory, for clients to trust.
pub const TLS_CA_FILE: &str = "tls/ca.crt";

/// HTTPS for the API: a server certificate for `names` (DNS names or IPs)
/// from the host's own CA, made on first start (its key sealed in the
/// store; its certificate written to `DATA_DIR/tls/ca.crt`).
pub fn tls_config(
    state: &AppState,
    data_dir: &Path,
    names: &[String],
) -> Result<Arc<rustls::ServerConfig>, ServeError> {
    let tls = |reason: String| ServeError::Tls(reason);
    let ca = match state.db.host_secret("tls-ca")? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| tls(e.to_string()))?,
        None => {
            let ca = wasmco_pki::new_ca("wasmco host CA").map_err(|e| tls(e.to_string()))?;
            let bytes = serde_json::to_vec(&ca).map_err(|e| tls(e.to_string()))?;
            state.db.put_host_secret("tls-ca", &bytes)?;
            ca
        }
    };
    let ca_file = data_dir.join(TLS_CA_FILE);
    if let Some(dir) = ca_file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&ca_file, ca.certificate.as_bytes())?;
    let server = wasmco_pki::issue(&ca, "wasmco", &[], names, wasmco_pki::Usage::Server)
        .map_err(|e| tls(e.to_string()))?;
    wasmco_pki::rustls_server(&server, None).map_err(|e| tls(e.to_string()))
}

/// [`serve`] over HTTPS.
pub async fn serve_tls(
    state: AppState,
    listener: tokio::net::TcpListener,
    config: Arc<rustls::ServerConfig>,
) -> Result<(), ServeError> {
    let handle = axum_server::Handle::new();
    let shutdown = handle.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.graceful_shutdown(Some(std::time::Duration::from_secs(5)));
    });
    let listener = listener.into_std()?;
    axum_server::from_tcp_rustls(
        listener,
        axum_server::tls_rustls::RustlsConfig::from_config(config),
    )?
    .handle(handle)
    .serve(router(state).into_make_service())
    .await?;
    Ok(())
}

/// Binds the API's address (port 0 picks a free one).
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves `/metrics` alone, unauthenticated, on `listener` (an address
/// only the scraper reaches) until the process gets Ctrl-C.
pub async fn serve_metrics(
    state: AppState,
    listener: tokio::net::TcpListener,
) -> Result<(), ServeError> {
    axum::serve(listener, wasmco_api::metrics_router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// Serves the API on `listener` until the process gets Ctrl-C.
pub async fn serve(state: AppState, listener: tokio::net::TcpListener) -> Result<(), ServeError> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::StoreLocation;

    #[test]
    fn a_store_is_sled_in_a_directory_or_etcd_by_its_endpoints() {
        assert_eq!(
            "sled:/var/lib/wasmco".parse(),
            Ok(StoreLocation::Sled("/var/lib/wasmco".into()))
        );
        assert_eq!(
            "etcd://10.0.0.1:2379,etcd-2:2379".parse(),
            Ok(StoreLocation::Etcd(vec![
                "http://10.0.0.1:2379".into(),
                "http://etcd-2:2379".into()
            ]))
        );
        for refused in [
            "etcd://",
            "etcd://host",
            "etcd://host:x",
            "sled:",
            "mongodb://db",
        ] {
            assert!(refused.parse::<StoreLocation>().is_err(), "{refused}");
        }
    }
}
