//! One lock per deployment target (a DIG or a logical cloud): an action
//! reads a target's state, runs its controllers and writes the new state
//! under it, so two actions on one target never interleave, while actions
//! on other targets (another tenant's, say) go on beside a slow one.
//! With other hosts on the store, the lock is held across hosts too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use wasmco_store::StoreError;
use wasmco_store::hosts::{HostGroup, HostLock};

/// Held for the length of one action on one target.
pub struct TargetGuard {
    // Dropped first: the other hosts' turn comes after this host's.
    hosts: HostLock,
    _local: tokio::sync::OwnedMutexGuard<()>,
}

impl TargetGuard {
    /// What every write of the action carries, so that it lands only
    /// while this host still holds the lock across hosts.
    pub fn fence(&self) -> Option<&wasmco_store::Expect> {
        self.hosts.fence()
    }
}

/// Held while a controller's declaration is checked against the stored
/// ones and the controller is stored (see
/// [`crate::Orchestrator::lock_declarations`]).
pub struct DeclarationLock {
    pub(crate) _guard: TargetGuard,
}

/// The locks of the targets that have an action under way.
#[derive(Default)]
pub struct TargetLocks {
    locks: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
    hosts: Option<Arc<dyn HostGroup>>,
}

impl TargetLocks {
    /// Locks held across `hosts` as well as in this process.
    pub fn across(hosts: Arc<dyn HostGroup>) -> Self {
        TargetLocks {
            hosts: Some(hosts),
            ..TargetLocks::default()
        }
    }

    /// Waits for `key`'s lock. Call from a blocking thread, not from async
    /// code: it blocks until the lock is free.
    pub fn lock(&self, key: &str) -> Result<TargetGuard, StoreError> {
        let local = self.local(key);
        let hosts = match &self.hosts {
            Some(hosts) => hosts.lock(key)?,
            None => HostLock::local(),
        };
        Ok(TargetGuard {
            hosts,
            _local: local,
        })
    }

    fn local(&self, key: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            // The map is only looked up and filled; a panic cannot leave it half-done.
            let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
            match locks.get(key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    // Forget targets no action holds any more.
                    if locks.len() >= 64 {
                        locks.retain(|_, lock| lock.strong_count() > 0);
                    }
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    locks.insert(key.to_owned(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.blocking_lock_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_target_waits_and_another_does_not() {
        let locks = Arc::new(TargetLocks::default());
        let held = locks.lock("p/ca/v1/slow").unwrap();
        // Another target is free at once.
        drop(locks.lock("p/ca/v1/other").unwrap());
        let waiter = {
            let locks = locks.clone();
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                drop(locks.lock("p/ca/v1/slow").unwrap());
                started.elapsed()
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(held);
        assert!(waiter.join().unwrap() >= std::time::Duration::from_millis(90));
    }
}
