//! `wasmco serve`: the REST API with its data in one directory.

use std::path::PathBuf;

use anyhow::Context;

/// What a cluster's kubeconfig may ask of this host.
#[derive(clap::Args)]
pub struct KubeconfigArgs {
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
    pub fn policy(&self) -> std::sync::Arc<wasmco_pki::kubeconfig::KubeconfigPolicy> {
        std::sync::Arc::new(wasmco_pki::kubeconfig::KubeconfigPolicy::new(
            self.allow_kubeconfig_proxy,
            &self.denied,
            &self.allowed,
        ))
    }
}

/// How this host reaches etcd and appears to the other hosts on it.
#[derive(clap::Args)]
pub struct EtcdArgs {
    /// This host's id among the hosts sharing the store (default: the
    /// machine's name and a random suffix).
    #[arg(long, env = "WASMCO_HOST_ID")]
    host_id: Option<String>,
    /// How long the other hosts wait for this one, when it stops
    /// answering, before they take over its deployments.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    lease_ttl: std::time::Duration,
    /// The address the other hosts and clients know this host by
    /// (default: the listen address).
    #[arg(long)]
    advertise: Option<String>,
    /// The CA certificate (PEM) that signed etcd's: etcd is then reached over TLS.
    #[arg(long, value_name = "FILE")]
    etcd_ca: Option<PathBuf>,
    /// The client certificate (PEM) this host shows etcd; with --etcd-key.
    #[arg(long, value_name = "FILE", requires = "etcd_key")]
    etcd_cert: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, value_name = "FILE", requires = "etcd_cert")]
    etcd_key: Option<PathBuf>,
    /// The etcd user (its password from WASMCO_ETCD_PASSWORD).
    #[arg(long, env = "WASMCO_ETCD_USER")]
    etcd_user: Option<String>,
}

impl EtcdArgs {
    fn access(&self) -> anyhow::Result<wasmco::startup::EtcdAccess> {
        let user = match &self.etcd_user {
            None => None,
            Some(user) => {
                let password = std::env::var("WASMCO_ETCD_PASSWORD")
                    .context("--etcd-user needs the password in WASMCO_ETCD_PASSWORD")?;
                Some((user.clone(), password))
            }
        };
        Ok(wasmco::startup::EtcdAccess {
            user,
            ca: self.etcd_ca.clone(),
            identity: self.etcd_cert.clone().zip(self.etcd_key.clone()),
        })
    }
}

/// Serve the REST API (`/v2`) with its data in one directory.
#[derive(clap::Args)]
pub struct Args {
    /// Where the resource database and the controller cache live.
    #[arg(long, env = "WASMCO_DATA_DIR", default_value = ".wasmco")]
    data_dir: PathBuf,
    /// Where the state lives: `sled:DIR`, or `etcd://host:2379[,host:port…]`
    /// for several hosts sharing one store (default: sled in DATA_DIR/db).
    #[arg(long, env = "WASMCO_STORE", value_name = "STORE")]
    store: Option<wasmco::startup::StoreLocation>,
    #[command(flatten)]
    etcd: EtcdArgs,
    /// Address to listen on.
    #[arg(long, env = "WASMCO_LISTEN", default_value = "127.0.0.1:9015")]
    listen: std::net::SocketAddr,
    /// Serve `/metrics` on this address too, without the API token (an
    /// address only the scraper reaches); on the API's address it needs
    /// the token like every route.
    #[arg(long, env = "WASMCO_METRICS_LISTEN")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Record no metrics: `/metrics` keeps its families, at zero (the
    /// status page's controller calls stay empty too).
    #[arg(long, conflicts_with = "metrics_listen")]
    no_metrics: bool,
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
    #[command(flatten)]
    cluster_repo: super::cluster_repo::ClusterRepoArgs,
    /// How long an uploaded controller may take to compile (it compiles
    /// in a child process, stopped past this).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    compile_timeout: std::time::Duration,
    /// The limits controllers get unless their registration tightens
    /// them, as JSON fields to replace:
    /// `{"maxEdits": 50000, "outputBytes": 1073741824, "deadlineMs": 5000}`.
    #[arg(long, value_name = "JSON")]
    controller_limits: Option<String>,
    /// How long one request to a cluster may take; a cluster slower than
    /// this is marked Retrying and tried again with backoff.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    cluster_timeout: std::time::Duration,
    /// How often each deployment is compared with its clusters again; an
    /// object changed or deleted there is put back (plus up to a tenth as
    /// jitter).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    resync_interval: std::time::Duration,
    /// How often each reachable cluster's API server is probed.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    probe_interval: std::time::Duration,
    /// Where the compiled Helm renderer is cached, shared by every server
    /// on the machine (default: `$XDG_CACHE_HOME/wasmco` or `~/.cache/wasmco`).
    #[arg(long, env = "WASMCO_HELM_CACHE")]
    helm_cache: Option<std::path::PathBuf>,
    /// Helm charts rendered (or checked) at once; each may take its 256 MiB,
    /// so this bounds what charts take of the host together (default: the
    /// cores, at most 4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    helm_renders: Option<u16>,
    /// How long a chart waits for a render slot before the request is
    /// answered 503.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    helm_queue_wait: std::time::Duration,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    wasmco_core::instrumentation::set_recording(!args.no_metrics);
    let controller_limits = args.controller_limits()?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    // Bound before the state opens, so the other hosts learn the real
    // address (port 0 picks a free one).
    let listener = runtime.block_on(wasmco::startup::bind(args.listen))?;
    let address = listener.local_addr()?;
    let options = args.host_options(address, controller_limits)?;
    let sync = Some((runtime.handle().clone(), args.rsync_config()));
    let state = wasmco::startup::open_state(&args.data_dir, sync, options)
        .with_context(|| format!("opening the data directory {}", args.data_dir.display()))?;
    args.cluster_repo
        .start(&state.orchestrator, &args.data_dir)?;
    let tls_config = if args.tls {
        Some(wasmco::startup::tls_config(
            &state,
            &args.data_dir,
            &args.tls_names(),
        )?)
    } else {
        None
    };
    runtime.block_on(async {
        let scheme = if tls_config.is_some() {
            "https"
        } else {
            "http"
        };
        // Tests and scripts read the address (port 0 picks a free one).
        println!("wasmco API listening on {scheme}://{address}");
        if let Some(metrics_listen) = args.metrics_listen {
            let metrics = wasmco::startup::bind(metrics_listen).await?;
            tracing::info!(address = %metrics.local_addr()?, "metrics without a token");
            tokio::spawn(wasmco::startup::serve_metrics(state.clone(), metrics));
        }
        match tls_config {
            Some(config) => wasmco::startup::serve_tls(state, listener, config).await,
            None => wasmco::startup::serve(state, listener).await,
        }
    })?;
    Ok(())
}

impl Args {
    /// The controller limits, `--controller-limits` replacing the defaults.
    fn controller_limits(&self) -> anyhow::Result<wasmco_runtime::ControllerLimits> {
        let Some(json) = &self.controller_limits else {
            return Ok(wasmco_runtime::ControllerLimits::default());
        };
        let overrides: wasmco_runtime::LimitOverrides = serde_json::from_str(json)
            .context("--controller-limits is not a JSON object of limits")?;
        wasmco_runtime::ControllerLimits::default()
            .replaced_by(&overrides)
            .context("--controller-limits")
    }

    /// What users' input may ask of this host, which serves at `address`.
    fn host_options(
        &self,
        address: std::net::SocketAddr,
        controller_limits: wasmco_runtime::ControllerLimits,
    ) -> anyhow::Result<wasmco::startup::HostOptions> {
        let etcd = &self.etcd;
        Ok(wasmco::startup::HostOptions {
            host: wasmco::startup::HostIdentity {
                id: etcd.host_id.clone(),
                address: etcd
                    .advertise
                    .clone()
                    .unwrap_or_else(|| address.to_string()),
                lease_ttl: etcd.lease_ttl,
            },
            etcd: etcd.access()?,
            store: self.store.clone(),
            kubeconfigs: self.kubeconfigs.policy(),
            compiler: wasmco_runtime::CompilerProcess::this_program(self.compile_timeout),
            controller_limits,
            helm: self.helm_config(),
        })
    }

    fn helm_config(&self) -> wasmco_runtime::helm::HelmConfig {
        let defaults = wasmco_runtime::helm::HelmConfig::default();
        wasmco_runtime::helm::HelmConfig {
            cache_dir: self.helm_cache.clone().unwrap_or(defaults.cache_dir),
            concurrent_renders: self
                .helm_renders
                .map_or(defaults.concurrent_renders, usize::from),
            queue_wait: self.helm_queue_wait,
            ..defaults
        }
    }

    fn rsync_config(&self) -> wasmco_rsync::RsyncConfig {
        wasmco_rsync::RsyncConfig {
            directory: self.sync_to_directory.clone(),
            request_timeout: self.cluster_timeout,
            resync: self.resync_interval,
            probe_interval: self.probe_interval,
            ..Default::default()
        }
    }

    /// The HTTPS certificate's names: the local ones, the listen address
    /// and `--tls-san`.
    fn tls_names(&self) -> Vec<String> {
        let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        if !self.listen.ip().is_unspecified() {
            names.push(self.listen.ip().to_string());
        }
        names.extend(self.tls_sans.iter().cloned());
        names
    }
}
