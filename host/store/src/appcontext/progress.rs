//! What rsync records while it makes clusters match a revision: each
//! resource's status, whether it reaches each cluster, and the hook events
//! already run there.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::ClusterRef;
use wasmco_core::wire::{Connectivity, Deployed, Readiness, ResourceStatus};

use super::error::ContextError;
use super::store::{ContextStore, Fence, json};
use crate::kv::BatchOp;

impl ContextStore {
    /// The hook events already run for `app` on `cluster` (by any revision).
    pub fn hooks_run(
        &self,
        dig: &str,
        app: &str,
        cluster: &ClusterRef,
    ) -> Result<BTreeSet<HookEvent>, ContextError> {
        Ok(self
            .get_json(&format!("ctx/{dig}/hooks/{app}/{cluster}"))?
            .unwrap_or_default())
    }

    /// Records the hook events run for `app` on `cluster`; an empty set
    /// forgets them (the app is gone from there).
    pub fn put_hooks_run(
        &self,
        dig: &str,
        app: &str,
        cluster: &ClusterRef,
        events: &BTreeSet<HookEvent>,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let key = format!("ctx/{dig}/hooks/{app}/{cluster}").into_bytes();
        let op = if events.is_empty() {
            BatchOp::Delete(key)
        } else {
            BatchOp::Put(key, json(events))
        };
        self.commit(dig, vec![op], fence, false)
    }

    /// Records the status of resources of `app` on `cluster`, and the
    /// cell's [`Tally`] over the resources `counted` (the app's on that
    /// cluster; a Helm hook's status is kept but not counted).
    pub fn put_statuses(
        &self,
        at: &StatusCell,
        statuses: &[(String, ResourceStatus)],
        counted: &BTreeSet<String>,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let StatusCell {
            dig,
            revision,
            app,
            cluster,
        } = at;
        let rev = format!("ctx/{dig}/rev/{revision:010}");
        let cell = format!("{app}/{cluster}");
        let status_key = |key: &str| format!("{rev}/status/{cell}/{key}");
        // The tally is kept from what is stored, so two writers of one
        // cell (a reconcile and a repair) take turns.
        let stripe = dig
            .bytes()
            .chain(cell.bytes())
            .fold(0usize, |h, b| h.wrapping_mul(31) ^ usize::from(b));
        let _turn = self.tallying[stripe % self.tallying.len()]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let tally_key = format!("{rev}/tally/{cell}");
        let stored: Option<Tally> = self.get_json(&tally_key)?;
        let tally = match stored {
            // What each write replaces is taken out and the new status
            // counted: a write costs what it writes, not the whole cell
            // (an app of many objects records them one at a time).
            Some(mut tally) => {
                let mut written: HashMap<&str, &ResourceStatus> = HashMap::new();
                for (key, status) in statuses.iter().filter(|(k, _)| counted.contains(k)) {
                    let replaced = match written.get(key.as_str()) {
                        Some(earlier) => Some((*earlier).clone()),
                        None => self.get_json::<ResourceStatus>(&status_key(key))?,
                    };
                    tally.uncount(replaced.as_ref());
                    tally.count(status);
                    written.insert(key, status);
                }
                tally
            }
            // The cell's first write, or one made before tallies were kept.
            None => {
                let mut cell_statuses = self.statuses_on(dig, *revision, app, cluster)?;
                for (key, status) in statuses {
                    cell_statuses.insert(key.clone(), status.clone());
                }
                Tally::of(counted.iter().filter_map(|key| cell_statuses.get(key)))
            }
        };
        let mut chunks: Vec<Vec<BatchOp>> = statuses
            .chunks(self.store.max_batch().saturating_sub(1).max(1))
            .map(|chunk| {
                let put = |(key, status): &(String, ResourceStatus)| {
                    BatchOp::Put(status_key(key).into_bytes(), json(status))
                };
                chunk.iter().map(put).collect()
            })
            .collect();
        // The tally goes with the last statuses, never alone: if its write
        // fails, a status is unwritten too, and the retry that writes that
        // status counts the cell again.
        if stored != Some(tally)
            && let Some(last) = chunks.last_mut()
        {
            last.push(BatchOp::Put(tally_key.into_bytes(), json(&tally)));
        }
        // Progress only: after a crash rsync applies the context again
        // anyway, so a write split to fit the store is no loss.
        for chunk in chunks {
            self.commit(dig, chunk, fence, true)?;
        }
        Ok(())
    }

    /// The recorded statuses of `app`'s resources on `cluster`, by `name+Kind`.
    pub fn statuses_on(
        &self,
        dig: &str,
        revision: u64,
        app: &str,
        cluster: &ClusterRef,
    ) -> Result<HashMap<String, ResourceStatus>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/status/{app}/{cluster}/");
        self.store
            .scan_prefix(prefix.as_bytes())?
            .into_iter()
            .map(|(key, value)| {
                let key = String::from_utf8_lossy(&key).into_owned();
                let status =
                    serde_json::from_slice(&value).map_err(|e| ContextError::corrupt(&key, e))?;
                Ok((key[prefix.len()..].to_owned(), status))
            })
            .collect()
    }

    /// Every tally of a revision, by app and cluster: what the status page
    /// shows of a cell without reading each resource's status.
    pub fn tallies(
        &self,
        dig: &str,
        revision: u64,
    ) -> Result<HashMap<String, HashMap<ClusterRef, Tally>>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/tally/");
        let mut out: HashMap<String, HashMap<ClusterRef, Tally>> = HashMap::new();
        let mut corrupt = None;
        self.store
            .visit_prefix(prefix.as_bytes(), &mut |key, value| {
                let key = String::from_utf8_lossy(key);
                let cell = key[prefix.len()..].split_once('/');
                let Some((app, cluster)) = cell.and_then(|(a, c)| Some((a, ClusterRef::parse(c)?)))
                else {
                    return;
                };
                match serde_json::from_slice(value) {
                    Ok(tally) => {
                        out.entry(app.to_owned())
                            .or_default()
                            .insert(cluster, tally);
                    }
                    Err(e) => corrupt = Some(ContextError::corrupt(&key, e)),
                }
            })?;
        corrupt.map_or(Ok(out), Err)
    }

    /// Records whether rsync reaches `cluster`.
    pub fn put_connectivity(
        &self,
        dig: &str,
        revision: u64,
        cluster: &ClusterRef,
        state: Connectivity,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let key = format!("ctx/{dig}/rev/{revision:010}/connectivity/{cluster}");
        let value = state.as_str().as_bytes();
        if self.store.get(key.as_bytes())?.as_deref() == Some(value) {
            return Ok(());
        }
        let op = BatchOp::Put(key.into_bytes(), value.to_vec());
        self.commit(dig, vec![op], fence, true)
    }

    /// How many of the DIG's actions rsync had seen when it last finished
    /// a whole pass (every app applied, and what earlier revisions put
    /// where this one does not removed); 0 before the first.
    pub fn reconciled(&self, dig: &str) -> Result<u64, ContextError> {
        Ok(self
            .get_json(&format!("ctx/{dig}/reconciled"))?
            .unwrap_or_default())
    }

    /// Records [`Self::reconciled`].
    pub fn put_reconciled(
        &self,
        dig: &str,
        actions: u64,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let op = BatchOp::Put(format!("ctx/{dig}/reconciled").into_bytes(), json(&actions));
        self.commit(dig, vec![op], fence, true)
    }

    /// Every recorded resource status of a revision: (app, cluster, `name+Kind`) → status.
    pub fn statuses(
        &self,
        dig: &str,
        revision: u64,
    ) -> Result<BTreeMap<(String, ClusterRef, String), ResourceStatus>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/status/");
        let mut out = BTreeMap::new();
        for (key, value) in self.store.scan_prefix(prefix.as_bytes())? {
            let key = String::from_utf8_lossy(&key).into_owned();
            let mut parts = key[prefix.len()..].splitn(3, '/');
            let (Some(app), Some(cluster), Some(resource)) = (
                parts.next(),
                parts.next().and_then(ClusterRef::parse),
                parts.next(),
            ) else {
                continue;
            };
            let status =
                serde_json::from_slice(&value).map_err(|e| ContextError::corrupt(&key, e))?;
            out.insert((app.to_owned(), cluster, resource.to_owned()), status);
        }
        Ok(out)
    }

    /// Per cluster, whether rsync reaches it.
    pub fn connectivity(
        &self,
        dig: &str,
        revision: u64,
    ) -> Result<BTreeMap<ClusterRef, Connectivity>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/connectivity/");
        self.store
            .scan_prefix(prefix.as_bytes())?
            .into_iter()
            .map(|(key, value)| {
                let key = String::from_utf8_lossy(&key).into_owned();
                let cluster = ClusterRef::parse(&key[prefix.len()..]);
                let state = Connectivity::parse(&value);
                match (cluster, state) {
                    (Some(cluster), Some(state)) => Ok((cluster, state)),
                    _ => Err(ContextError::corrupt(
                        &key,
                        format!(
                            "{:?} is not a connectivity",
                            String::from_utf8_lossy(&value)
                        ),
                    )),
                }
            })
            .collect()
    }
}

/// Where rsync records the statuses of an app's resources on one cluster
/// in one revision of a DIG's context.
#[derive(Debug, Clone)]
pub struct StatusCell {
    /// The DIG's key.
    pub dig: String,
    /// The revision.
    pub revision: u64,
    /// The app.
    pub app: String,
    /// The cluster.
    pub cluster: ClusterRef,
}

/// How an app's resources on one cluster stand, counted from their
/// recorded statuses each time rsync records some.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Resources with a status recorded; the others are pending.
    pub recorded: usize,
    /// Those ready.
    pub ready: usize,
    /// Those that failed to apply.
    pub failed: usize,
    /// Those recorded as still to apply.
    pub pending: usize,
    /// Deleted or released.
    pub deleted: usize,
}

impl Tally {
    /// The tally of a cell's counted `statuses`.
    pub fn of<'a>(statuses: impl IntoIterator<Item = &'a ResourceStatus>) -> Tally {
        let mut tally = Tally::default();
        for status in statuses {
            tally.count(status);
        }
        tally
    }

    fn count(&mut self, status: &ResourceStatus) {
        for (counter, counts) in self.counters(status) {
            if counts {
                *counter += 1;
            }
        }
    }

    /// Takes out what `replaced` counted (nothing when there was none).
    fn uncount(&mut self, replaced: Option<&ResourceStatus>) {
        for (counter, counts) in replaced.map(|r| self.counters(r)).into_iter().flatten() {
            if counts {
                *counter = counter.saturating_sub(1);
            }
        }
    }

    /// Each counter, and whether `status` counts in it.
    fn counters(&mut self, status: &ResourceStatus) -> [(&mut usize, bool); 5] {
        let deployed = status.deployed;
        [
            (&mut self.recorded, true),
            (&mut self.ready, status.ready == Readiness::Ready),
            (&mut self.failed, deployed == Deployed::Failed),
            (&mut self.pending, deployed == Deployed::Pending),
            (
                &mut self.deleted,
                matches!(deployed, Deployed::Deleted | Deployed::Released),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wasmco_core::resource::Resource;

    use super::*;
    use crate::sled_store::SledStore;

    fn status(name: &str, deployed: Deployed, ready: Readiness) -> (String, ResourceStatus) {
        let manifest = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        });
        let resource = Resource::from_manifest(manifest).expect("a manifest");
        let mut status = match deployed {
            Deployed::Failed => ResourceStatus::failed(&resource, "refused".into()),
            _ => ResourceStatus::applied(&resource),
        };
        status.ready = ready;
        (resource.key.to_string(), status)
    }

    #[test]
    fn a_cells_tally_counts_what_is_stored_of_its_resources_and_not_its_hooks() {
        let dir = tempfile::tempdir().expect("a directory");
        let contexts = ContextStore::new(Arc::new(SledStore::open(dir.path()).expect("sled")));
        let cluster = ClusterRef::new("p", "c1");
        let (one, two, hook) = (
            status("one", Deployed::Applied, Readiness::NotReady),
            status("two", Deployed::Applied, Readiness::Ready),
            status("hook", Deployed::Applied, Readiness::Ready),
        );
        let counted: BTreeSet<String> = [one.0.clone(), two.0.clone()].into();
        let tally =
            |contexts: &ContextStore| contexts.tallies("d", 1).expect("tallies")["app"][&cluster];
        let at = StatusCell {
            dig: "d".into(),
            revision: 1,
            app: "app".into(),
            cluster: cluster.clone(),
        };
        let put = |statuses: &[(String, ResourceStatus)]| {
            contexts
                .put_statuses(&at, statuses, &counted, None)
                .expect("recorded");
        };

        put(&[one.clone(), hook]);
        let expected = Tally {
            recorded: 1,
            ..Tally::default()
        };
        assert_eq!(tally(&contexts), expected, "the hook is not counted");

        // A later write of another resource counts the first one too.
        put(std::slice::from_ref(&two));
        let expected = Tally {
            recorded: 2,
            ready: 1,
            ..Tally::default()
        };
        assert_eq!(tally(&contexts), expected);

        put(&[status("one", Deployed::Failed, Readiness::NotReady)]);
        let expected = Tally {
            recorded: 2,
            ready: 1,
            failed: 1,
            ..Tally::default()
        };
        assert_eq!(tally(&contexts), expected);
        assert_eq!(
            contexts.statuses("d", 1).expect("statuses").len(),
            3,
            "every status is kept, the hook's too"
        );
    }
}
