//! Long-running tasks kept one per key (a cluster's probe, a cluster's
//! watch of one kind), aborted when stopped or when the engine goes.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::Mutex;

use tokio::task::AbortHandle;

/// The running tasks, by key.
pub(crate) struct KeyedTasks<K> {
    running: Mutex<HashMap<K, AbortHandle>>,
}

impl<K> Default for KeyedTasks<K> {
    fn default() -> Self {
        KeyedTasks {
            running: Mutex::default(),
        }
    }
}

impl<K: Eq + Hash> KeyedTasks<K> {
    /// Runs `task` on `runtime` for `key`, unless one still runs for it;
    /// whether it started.
    pub(crate) fn start<F>(
        &self,
        key: K,
        runtime: &tokio::runtime::Handle,
        task: impl FnOnce() -> F,
    ) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut running = self.lock();
        if running.get(&key).is_some_and(|t| !t.is_finished()) {
            return false;
        }
        running.insert(key, runtime.spawn(task()).abort_handle());
        true
    }

    /// Stops the tasks whose key `matches`.
    pub(crate) fn stop(&self, matches: impl Fn(&K) -> bool) {
        self.lock().retain(|key, task| {
            if matches(key) {
                task.abort();
            }
            !matches(key)
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, AbortHandle>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<K> Drop for KeyedTasks<K> {
    fn drop(&mut self) {
        let running = self.running.get_mut().unwrap_or_else(|p| p.into_inner());
        for task in running.values() {
            task.abort();
        }
    }
}
