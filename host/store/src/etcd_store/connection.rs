//! How the store reaches etcd: the client, and the runtime of its own
//! that drives it.

use std::future::Future;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use etcd_client::{Client, KvClient, MaintenanceClient};

use crate::error::StoreError;
use crate::metrics::StoreMetrics;

/// The largest answer etcd is asked for: a scan's page of values.
const MAX_ANSWER_BYTES: usize = 1 << 30;

/// How to reach etcd.
#[derive(Debug, Clone, Default)]
pub struct EtcdOptions {
    /// `http://host:2379` or `https://…`, one per member.
    pub endpoints: Vec<String>,
    /// User name and password, when etcd has authentication on.
    pub user: Option<(String, String)>,
    /// PEM of the CA that signed etcd's serving certificate (TLS).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM certificate and key this host shows etcd (TLS client auth).
    pub identity_pem: Option<(Vec<u8>, Vec<u8>)>,
}

/// etcd as a [`KvStore`](crate::KvStore); cheap to clone.
#[derive(Clone)]
pub struct EtcdStore {
    pub(super) connection: Arc<Connection>,
    pub(super) metrics: StoreMetrics,
}

/// The client and the runtime that drives it.
pub(super) struct Connection {
    pub(super) runtime: tokio::runtime::Runtime,
    pub(super) client: Client,
}

impl EtcdStore {
    /// Connects to the etcd cluster at `endpoints` (`http://host:2379`).
    pub fn connect(endpoints: &[String]) -> Result<Self, StoreError> {
        Self::connect_with(&EtcdOptions {
            endpoints: endpoints.to_vec(),
            ..EtcdOptions::default()
        })
    }

    /// Connects to etcd as `options` say.
    pub fn connect_with(options: &EtcdOptions) -> Result<Self, StoreError> {
        let refused = |reason: String| StoreError::Open {
            path: options.endpoints.join(",").into(),
            reason,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("etcd-store")
            .enable_all()
            .build()
            .map_err(|e| refused(e.to_string()))?;
        // Bounded, so a request while etcd is away fails (and can be
        // retried) instead of holding its caller.
        let mut connect = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(Duration::from_secs(5));
        if let Some((user, password)) = &options.user {
            connect = connect.with_user(user, password);
        }
        if options.ca_pem.is_some() || options.identity_pem.is_some() {
            let mut tls = etcd_client::TlsOptions::new();
            if let Some(ca) = &options.ca_pem {
                tls = tls.ca_certificate(etcd_client::Certificate::from_pem(ca));
            }
            if let Some((certificate, key)) = &options.identity_pem {
                tls = tls.identity(etcd_client::Identity::from_pem(certificate, key));
            }
            connect = connect.with_tls(tls);
        }
        let client = runtime
            .block_on(Client::connect(options.endpoints.clone(), Some(connect)))
            .map_err(|e| refused(format!("etcd: {e}")))?;
        Ok(EtcdStore {
            connection: Arc::new(Connection { runtime, client }),
            metrics: Default::default(),
        })
    }

    pub(super) fn kv(&self) -> KvClient {
        self.connection
            .client
            .kv_client()
            .max_decoding_message_size(MAX_ANSWER_BYTES)
    }

    pub(super) fn maintenance(&self) -> MaintenanceClient {
        self.connection.client.maintenance_client()
    }

    /// Runs `work` on the store's runtime and waits for its answer.
    pub(super) fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> T {
        let (answer, answered) = mpsc::sync_channel(1);
        self.connection.runtime.spawn(async move {
            let _ = answer.send(work.await);
        });
        // The task ends by sending, unless the runtime shut down under it.
        answered
            .recv()
            .unwrap_or_else(|_| panic!("the etcd store's runtime stopped"))
    }
}
