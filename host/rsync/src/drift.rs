//! Telling whether a deployed object drifted from what rsync applied.
//!
//! The cluster holds more than rsync sent: defaults, status, metadata, and
//! values in its own normal form (`0.5` CPU becomes `500m`). So an object
//! is compared on the fields rsync applies only, and against the cluster's
//! own copy right after the apply, not against the manifest: a fingerprint
//! of those fields then changes only when someone changes them.

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::Value;

use wasmco_core::ClusterRef;

/// What rsync last applied to one object, and what the cluster made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    /// Of the manifest applied (labels included).
    pub(crate) applied: u64,
    /// Of the cluster's copy right after, on the applied fields.
    pub(crate) held: u64,
}

impl Fingerprint {
    /// `applied` as the cluster answered it with `held`.
    pub(crate) fn of(applied: &Value, held: &Value) -> Self {
        Fingerprint {
            applied: stable_hash(applied.to_string().as_bytes()),
            held: fingerprint(applied, held),
        }
    }

    /// Whether `applied` is what this fingerprint was taken of.
    pub(crate) fn applies(&self, applied: &Value) -> bool {
        self.applied == stable_hash(applied.to_string().as_bytes())
    }

    /// Whether `live` holds the applied fields as the cluster held them
    /// right after the apply.
    pub(crate) fn holds(&self, applied: &Value, live: &Value) -> bool {
        self.held == fingerprint(applied, live)
    }
}

/// What rsync last applied where, as fingerprints; a worker's memory.
/// After a restart it is empty, and the first look at an object compares
/// it with its manifest instead.
#[derive(Default)]
pub(crate) struct Applied {
    fingerprints: Mutex<HashMap<(ClusterRef, String, String), Fingerprint>>,
    /// Repairs recorded so far: a reconcile that began before one reads
    /// the statuses again before it writes its own over them.
    repairs: AtomicU64,
    /// The clusters this worker cleaned up on once already.
    looked: Mutex<std::collections::HashSet<ClusterRef>>,
    /// The revision this worker last reconciled towards.
    revision: AtomicU64,
    /// When this worker last read what a cluster holds, for each app
    /// (`None`: for the clean-up, all of the target's objects).
    looks: Mutex<HashMap<(ClusterRef, Option<String>), Instant>>,
    /// The DIG's action count this worker last recorded a whole pass for.
    passed: AtomicU64,
}

impl Applied {
    /// How many repairs were recorded.
    pub(crate) fn repairs(&self) -> u64 {
        self.repairs.load(Ordering::SeqCst)
    }

    /// Notes that a repair recorded a status.
    pub(crate) fn repaired(&self) {
        self.repairs.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether this is this worker's first clean-up on `cluster`.
    pub(crate) fn first_look(&self, cluster: &ClusterRef) -> bool {
        self.looked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cluster.clone())
    }

    /// Makes the next clean-up on `cluster` a first one again.
    pub(crate) fn look_again(&self, cluster: &ClusterRef) {
        self.looked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(cluster);
    }

    /// Notes that the worker reconciles towards `revision`; whether it did
    /// so before too (when not, nothing it read vouches for it).
    pub(crate) fn reconciles(&self, revision: u64) -> bool {
        self.revision.swap(revision, Ordering::SeqCst) == revision
    }

    /// Whether this worker recorded a whole pass towards the DIG's
    /// `actions`-th action already.
    pub(crate) fn passed(&self, actions: u64) -> bool {
        self.passed.load(Ordering::SeqCst) == actions
    }

    /// Notes that a whole pass towards the `actions`-th action is recorded.
    pub(crate) fn pass_recorded(&self, actions: u64) {
        self.passed.store(actions, Ordering::SeqCst);
    }

    /// Notes that `app`'s objects on `cluster` (`None`: all of them) were
    /// read as they were at `at`.
    pub(crate) fn looked(&self, cluster: &ClusterRef, app: Option<&str>, at: Instant) {
        self.looks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((cluster.clone(), app.map(str::to_owned)), at);
    }

    /// Makes the next resync read `app`'s objects on `cluster` again.
    pub(crate) fn forget_look(&self, cluster: &ClusterRef, app: &str) {
        self.looks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(cluster.clone(), Some(app.to_owned())));
    }

    /// When `app`'s objects on `cluster` were last read, if they were.
    pub(crate) fn last_look(&self, cluster: &ClusterRef, app: Option<&str>) -> Option<Instant> {
        self.looks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(cluster.clone(), app.map(str::to_owned)))
            .copied()
    }

    /// The fingerprint of `app`'s object `key` on `cluster`, when known.
    pub(crate) fn get(&self, cluster: &ClusterRef, app: &str, key: &str) -> Option<Fingerprint> {
        self.lock()
            .get(&(cluster.clone(), app.to_owned(), key.to_owned()))
            .copied()
    }

    /// Records the fingerprint after an apply (or a look that found it unchanged).
    pub(crate) fn set(&self, cluster: &ClusterRef, app: &str, key: &str, fingerprint: Fingerprint) {
        self.lock().insert(
            (cluster.clone(), app.to_owned(), key.to_owned()),
            fingerprint,
        );
    }

    /// Forgets an object that was deleted.
    pub(crate) fn forget(&self, cluster: &ClusterRef, app: &str, key: &str) {
        self.lock()
            .remove(&(cluster.clone(), app.to_owned(), key.to_owned()));
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(ClusterRef, String, String), Fingerprint>> {
        self.fingerprints.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The fields of `live` that `applied` sets, in `applied`'s shape.
pub(crate) fn project(applied: &Value, live: &Value) -> Value {
    match (applied, live) {
        (Value::Object(applied), Value::Object(live)) => Value::Object(
            applied
                .iter()
                .map(|(key, value)| {
                    let live = live.get(key).unwrap_or(&Value::Null);
                    (key.clone(), project(value, live))
                })
                .collect(),
        ),
        (Value::Array(applied), Value::Array(live)) => Value::Array(
            applied
                .iter()
                .enumerate()
                .map(|(i, value)| project(value, live.get(i).unwrap_or(&Value::Null)))
                .collect(),
        ),
        _ => live.clone(),
    }
}

/// A fingerprint of the fields of `live` that `applied` sets.
fn fingerprint(applied: &Value, live: &Value) -> u64 {
    stable_hash(project(applied, live).to_string().as_bytes())
}

/// Whether `live` holds every field of `applied` as applied (defaults and
/// status aside).
pub(crate) fn matches(applied: &Value, live: &Value) -> bool {
    project(applied, live) == *applied
}

/// A hash that is the same in every process (for names and labels).
pub(crate) fn stable_hash(bytes: &[u8]) -> u64 {
    // FNV-1a: small, stable, good enough for fingerprints and short names.
    let mut hasher = Fnv(0xcbf2_9ce4_8422_2325);
    hasher.write(bytes);
    hasher.finish()
}

struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_applied_fields_count() {
        let applied = json!({"metadata": {"name": "a", "labels": {"x": "1"}},
                             "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let live = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"},
                                       "resourceVersion": "7"},
                          "spec": {"containers": [{"name": "c", "image": "i",
                                                   "imagePullPolicy": "Always"}]},
                          "status": {"phase": "Running"}});
        assert!(matches(&applied, &live));
        assert_eq!(
            fingerprint(&applied, &live),
            fingerprint(&applied, &applied)
        );

        let edited = json!({"metadata": {"name": "a", "labels": {"x": "2"}},
                            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        assert!(!matches(&applied, &edited));
        assert_ne!(
            Fingerprint::of(&applied, &edited).held,
            Fingerprint::of(&applied, &live).held
        );
        // A new manifest is not what the old fingerprint was taken of.
        assert!(Fingerprint::of(&applied, &live).applies(&applied));
        assert!(!Fingerprint::of(&applied, &live).applies(&edited));
    }

    #[test]
    fn the_hash_is_stable_across_processes() {
        assert_eq!(stable_hash(b"p/ca/v1/dig"), stable_hash(b"p/ca/v1/dig"));
        assert_ne!(stable_hash(b"a"), stable_hash(b"b"));
        // Pinned: label values made from it must not change between versions.
        assert_eq!(stable_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
