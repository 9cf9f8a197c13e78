//! Opening a host's state: the store, the runtime, the orchestrator and
//! rsync, wired together.

use std::path::Path;
use std::sync::Arc;

use wasmco_api::auth::{AuditLog, Tokens};
use wasmco_api::{AppState, WorkPool};
use wasmco_core::Kind;
use wasmco_orchestrator::{Background, ControllerRegistry, NoSync, Orchestrator};
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_runtime::LimitOverrides;
use wasmco_runtime::builtin;
use wasmco_runtime::{Runtime, RuntimeConfig};
use wasmco_store::appcontext::ContextStore;
use wasmco_store::db::ResourceDb;
use wasmco_store::hosts::{HostGroup, HostInfo, SoloHost};
use wasmco_store::secrets::MasterKey;
use wasmco_store::{EtcdStore, KvStore, SledStore};

use super::error::ServeError;
use super::keys::{
    AUDIT_LOG_FILE, PACKAGE_DIR, master_key_fits_store, open_admin_token, open_master_key,
};
use super::options::{HostOptions, StoreLocation, default_host_id};

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
    let kubeconfigs = options.kubeconfigs.clone();
    // Before the store opens: a refused key must leave its files untouched.
    let master_key = open_master_key(data_dir)?;
    let me = HostInfo {
        id: options.host.id.clone().unwrap_or_else(default_host_id),
        address: options.host.address.clone(),
        started: wasmco_store::appcontext::now(),
    };
    let (store, hosts) = open_store(data_dir, &options, me, &master_key)?;
    let mut runtime_config = RuntimeConfig::new(data_dir.join("cache"));
    runtime_config.compiler = options.compiler;
    runtime_config.default_limits = options.controller_limits;
    let runtime = Runtime::new(runtime_config)?;
    let db = ResourceDb::with_master_key(store.clone(), master_key);
    let controllers = ControllerRegistry::with_runtime(runtime.clone());
    let loaded = controllers.load_stored(&db, &runtime)?;
    tracing::info!(controllers = loaded, data_dir = %data_dir.display(), "state loaded");
    let generic = load_generic(&runtime)?;
    let helm = start_helm(options.helm);
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
    )
    .with_package_dir(data_dir.join(PACKAGE_DIR));
    if hosts.shared() {
        orchestrator = orchestrator.with_hosts(hosts.clone());
    }
    // Listening before rsync takes its work up, so that the first
    // reconciles after a restart are heard too.
    let background = std::sync::Arc::new(Background::start(&orchestrator));
    if let Some(rsync) = &rsync {
        resume(rsync, &mut registry)?;
        resume_deploys(&orchestrator, hosts.clone())?;
    }
    check_kubeconfigs(&db, &kubeconfigs)?;
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
        background,
    })
}

/// A cluster run a stopped host left goes on: now, and whenever a host
/// sharing the store goes away.
fn resume_deploys(
    orchestrator: &Orchestrator,
    hosts: Arc<dyn HostGroup>,
) -> Result<(), ServeError> {
    let deployments = orchestrator.cluster_deployments();
    deployments
        .follow_hosts(hosts)
        .map_err(ServeError::ResumeDeploys)?;
    let resumed = deployments.resume().map_err(ServeError::ResumeDeploys)?;
    if resumed > 0 {
        tracing::info!(resumed, "cluster deploys resumed");
    }
    Ok(())
}

/// A store, and the hosts sharing it.
type SharedStore = (Arc<dyn KvStore>, Arc<dyn HostGroup>);

/// The store `options` name, and the hosts sharing it (`me` alone, but for
/// etcd).
fn open_store(
    data_dir: &Path,
    options: &HostOptions,
    me: HostInfo,
    master_key: &MasterKey,
) -> Result<SharedStore, ServeError> {
    Ok(match &options.store {
        None => (
            Arc::new(SledStore::open(&data_dir.join("db"))?),
            Arc::new(SoloHost::new(me)),
        ),
        Some(StoreLocation::Sled(dir)) => {
            (Arc::new(SledStore::open(dir)?), Arc::new(SoloHost::new(me)))
        }
        Some(StoreLocation::Etcd(endpoints)) => {
            let etcd = EtcdStore::connect_with(&options.etcd.options(endpoints)?)?;
            master_key_fits_store(&etcd, master_key)?;
            let hosts = etcd.join(me, options.host.lease_ttl)?;
            (Arc::new(etcd), Arc::new(hosts))
        }
    })
}

/// The built-in generic placement controller, which every deployment runs.
fn load_generic(runtime: &Runtime) -> Result<wasmco_runtime::Controller, ServeError> {
    let generic = builtin::builtin("generic-placement").ok_or(ServeError::Builtin)?;
    runtime
        .load(
            generic.name,
            generic.kind,
            generic.wasm,
            &LimitOverrides::default(),
        )
        .map_err(ServeError::Generic)
}

/// Has rsync take up the deployments it was working on, and registers its
/// metrics.
fn resume(
    rsync: &wasmco_rsync::Rsync,
    registry: &mut prometheus_client::registry::Registry,
) -> Result<(), ServeError> {
    let resumed = rsync.resume().map_err(ServeError::Resume)?;
    tracing::info!(resumed, "deployments taken up again");
    rsync.metrics().register(registry);
    Ok(())
}

/// The Helm renderer, compiling in the background when this build has it.
fn start_helm(config: wasmco_runtime::helm::HelmConfig) -> wasmco_runtime::helm::HelmRenderer {
    let helm = wasmco_runtime::helm::HelmRenderer::new(config);
    if helm.available() {
        // Off the request path: only a request that needs a chart waits.
        helm.start();
    } else {
        tracing::warn!("built without Helm support (no Go at build time): charts are refused");
    }
    helm
}

/// Marks the stored clusters whose kubeconfigs `policy` refuses, and warns
/// of them.
fn check_kubeconfigs(db: &ResourceDb, policy: &KubeconfigPolicy) -> Result<(), ServeError> {
    let refused = mark_cluster_kubeconfigs(db, policy)?;
    if refused > 0 {
        tracing::warn!(
            clusters = refused,
            "stored clusters whose kubeconfigs this server refuses; they are marked and not synced"
        );
    }
    Ok(())
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
