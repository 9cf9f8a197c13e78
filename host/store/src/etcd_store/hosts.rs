//! The hosts sharing one etcd: each keeps a lease alive, and what it owns
//! or locks is a key bound to that lease.
//!
//! Key layout (this module owns the `hosts/` key space):
//!
//! ```text
//! hosts/live/<host id>     HostInfo, bound to the host's lease
//! hosts/owner/<work>       the id of the host that owns the work, bound to its lease
//! hosts/lock/<name>        the holder of a lock (host id and a nonce), bound to its lease
//! hosts/signal/<topic>     moved whenever a host tells the others about the topic
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};

use super::connection::EtcdStore;
use super::failure::failed;
use crate::error::StoreError;
use crate::hosts::{HostEvent, HostGroup, HostInfo, HostLock, OnHostEvent};
use crate::kv::{Change, Expect, KvStore};

const LIVE: &str = "hosts/live/";
const OWNER: &str = "hosts/owner/";
const LOCK: &str = "hosts/lock/";
const SIGNAL: &str = "hosts/signal/";

/// How often a lock that another host holds is tried again.
const LOCK_POLL: Duration = Duration::from_millis(50);

/// This host among those on one etcd.
pub struct EtcdHosts {
    store: EtcdStore,
    me: HostInfo,
    lease: Arc<Lease>,
}

/// The host's lease, renewed by a task on the store's runtime.
struct Lease {
    ttl: Duration,
    /// The lease id; `None` after etcd said it expired, until a new one is granted.
    id: Mutex<Option<i64>>,
    /// When etcd last confirmed the lease, in milliseconds since `epoch`.
    renewed_ms: AtomicU64,
    epoch: Instant,
}

impl Lease {
    fn id(&self) -> Option<i64> {
        *self.id.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, id: Option<i64>) {
        *self.id.lock().unwrap_or_else(|p| p.into_inner()) = id;
        if id.is_some() {
            self.renewed();
        }
    }

    fn renewed(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.renewed_ms.store(now, Ordering::SeqCst);
    }

    /// Whether etcd confirmed the lease within its time to live: past
    /// that, other hosts may have taken this one's work.
    fn current(&self) -> bool {
        let renewed = Duration::from_millis(self.renewed_ms.load(Ordering::SeqCst));
        self.id().is_some() && self.epoch.elapsed().saturating_sub(renewed) < self.ttl
    }
}

fn unavailable(operation: &'static str) -> StoreError {
    StoreError::Unavailable {
        operation,
        reason: "this host holds no lease on etcd (it lost etcd for longer than the lease lasts)"
            .into(),
    }
}

impl EtcdStore {
    /// Joins the hosts on this etcd as `me`, with a lease that lasts `ttl`
    /// without renewal: the time within which the others take over the
    /// work of a host that died.
    pub fn join(&self, me: HostInfo, ttl: Duration) -> Result<EtcdHosts, StoreError> {
        let ttl = ttl.max(Duration::from_secs(2));
        let lease = Arc::new(Lease {
            ttl,
            id: Mutex::new(None),
            renewed_ms: AtomicU64::new(0),
            epoch: Instant::now(),
        });
        let value = serde_json::to_vec(&me).map_err(|e| StoreError::Io {
            operation: "join",
            reason: e.to_string(),
        })?;
        let client = self.connection.client.clone();
        let key = format!("{LIVE}{}", me.id);
        let taken = self.get(key.as_bytes())?.is_some();
        if taken {
            return Err(StoreError::Io {
                operation: "join",
                reason: format!(
                    "another live host has the id {} (or this host's last run, until its \
                     lease of at most {}s runs out); give this one another id or wait",
                    me.id,
                    ttl.as_secs()
                ),
            });
        }
        let id = self
            .run(register(client.clone(), key.clone(), value.clone(), ttl))
            .map_err(failed("join"))?;
        lease.set(Some(id));
        self.connection
            .runtime
            .spawn(keep_alive(client, lease.clone(), key, value));
        Ok(EtcdHosts {
            store: self.clone(),
            me,
            lease,
        })
    }
}

/// Grants a lease and puts this host's entry under it.
async fn register(
    client: Client,
    key: String,
    value: Vec<u8>,
    ttl: Duration,
) -> Result<i64, etcd_client::Error> {
    let seconds = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
    let granted = client.lease_client().grant(seconds, None).await?;
    let options = PutOptions::new().with_lease(granted.id());
    client.kv_client().put(key, value, Some(options)).await?;
    Ok(granted.id())
}

/// Renews the lease a few times per time to live, for as long as the
/// runtime runs; grants a new one (and registers again) if etcd let it
/// expire.
async fn keep_alive(client: Client, lease: Arc<Lease>, key: String, value: Vec<u8>) {
    let period = lease.ttl / 4;
    loop {
        let id = match lease.id() {
            Some(id) => id,
            None => match register(client.clone(), key.clone(), value.clone(), lease.ttl).await {
                Ok(id) => {
                    tracing::warn!(lease = id, "the host's lease had expired; joined again");
                    lease.set(Some(id));
                    id
                }
                Err(error) => {
                    tracing::debug!(%error, "cannot join the hosts yet");
                    tokio::time::sleep(period).await;
                    continue;
                }
            },
        };
        if let Ok((mut keeper, mut answers)) = client.lease_client().keep_alive(id).await {
            loop {
                if keeper.keep_alive().await.is_err() {
                    break;
                }
                match tokio::time::timeout(period, answers.message()).await {
                    Ok(Ok(Some(answer))) if answer.ttl() > 0 => lease.renewed(),
                    Ok(Ok(Some(_))) => {
                        lease.set(None);
                        break;
                    }
                    _ => break,
                }
                tokio::time::sleep(period).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

impl EtcdHosts {
    fn lease_id(&self, operation: &'static str) -> Result<i64, StoreError> {
        self.lease.id().ok_or_else(|| unavailable(operation))
    }

    /// Puts `key` = `value` under the lease if `key` is free; whether it was.
    fn put_if_free(&self, key: String, value: Vec<u8>) -> Result<bool, StoreError> {
        let lease = self.lease_id("claim")?;
        let txn = Txn::new()
            .when([Compare::version(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key,
                value,
                Some(PutOptions::new().with_lease(lease)),
            )]);
        self.store.commit("claim", txn)
    }
}

/// Removes `key` if it still holds `value`.
fn remove_if(store: &EtcdStore, key: String, value: Vec<u8>) -> Result<(), StoreError> {
    let txn = Txn::new()
        .when([Compare::value(key.clone(), CompareOp::Equal, value)])
        .and_then([TxnOp::delete(key, None)]);
    store.commit("release", txn).map(drop)
}

impl HostGroup for EtcdHosts {
    fn me(&self) -> &HostInfo {
        &self.me
    }

    fn shared(&self) -> bool {
        true
    }

    fn holds_lease(&self) -> bool {
        self.lease.current()
    }

    fn live(&self) -> Result<Vec<HostInfo>, StoreError> {
        Ok(self
            .store
            .scan_prefix(LIVE.as_bytes())?
            .into_iter()
            .filter_map(|(_, value)| serde_json::from_slice(&value).ok())
            .collect())
    }

    fn owners(&self) -> Result<BTreeMap<String, String>, StoreError> {
        Ok(self
            .store
            .scan_prefix(OWNER.as_bytes())?
            .into_iter()
            .map(|(key, value)| {
                (
                    String::from_utf8_lossy(&key[OWNER.len()..]).into_owned(),
                    String::from_utf8_lossy(&value).into_owned(),
                )
            })
            .collect())
    }

    fn claim(&self, work: &str) -> Result<bool, StoreError> {
        let key = format!("{OWNER}{work}");
        if self.put_if_free(key.clone(), self.me.id.clone().into_bytes())? {
            return Ok(true);
        }
        Ok(self.store.get(key.as_bytes())?.as_deref() == Some(self.me.id.as_bytes()))
    }

    fn release(&self, work: &str) -> Result<(), StoreError> {
        remove_if(
            &self.store,
            format!("{OWNER}{work}"),
            self.me.id.clone().into_bytes(),
        )
    }

    fn ownership_fence(&self, work: &str) -> Option<Expect> {
        Some(Expect::Value(
            format!("{OWNER}{work}").into_bytes(),
            self.me.id.clone().into_bytes(),
        ))
    }

    fn lock(&self, name: &str) -> Result<HostLock, StoreError> {
        let key = format!("{LOCK}{name}");
        let holder = format!("{}/{:016x}", self.me.id, fastrand::u64(..)).into_bytes();
        while !self.put_if_free(key.clone(), holder.clone())? {
            std::thread::sleep(LOCK_POLL);
        }
        let store = self.store.clone();
        // The holder is unique to this taking of the lock, and the key goes
        // with the lease: a write carrying it lands only while it is held.
        let fence = Expect::Value(key.clone().into_bytes(), holder.clone());
        Ok(HostLock::new(
            move || {
                if let Err(error) = remove_if(&store, key, holder) {
                    // Its lease frees it anyway, when the host goes.
                    tracing::warn!(%error, "could not release a lock");
                }
            },
            fence,
        ))
    }

    fn tell(&self, topic: &str) -> Result<(), StoreError> {
        let options = self
            .lease
            .id()
            .map(|lease| PutOptions::new().with_lease(lease));
        let mut kv = self.store.kv();
        let (key, nonce) = (format!("{SIGNAL}{topic}"), fastrand::u64(..).to_le_bytes());
        self.store
            .run(async move { kv.put(key, nonce.to_vec(), options).await })
            .map(drop)
            .map_err(failed("tell"))
    }

    fn listen(&self, on_event: OnHostEvent) -> Result<(), StoreError> {
        for prefix in [LIVE, OWNER] {
            let on_event = on_event.clone();
            self.store.watch_prefix(
                prefix.as_bytes(),
                Arc::new(move |_| on_event(HostEvent::Membership)),
            )?;
        }
        self.store.watch_prefix(
            SIGNAL.as_bytes(),
            Arc::new(move |change| match change {
                Change::Key(key) => on_event(HostEvent::Told(
                    String::from_utf8_lossy(&key[SIGNAL.len()..]).into_owned(),
                )),
                Change::Missed => on_event(HostEvent::Membership),
            }),
        )
    }
}
