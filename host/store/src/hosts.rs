//! The hosts that share one store, and how they divide the work.
//!
//! A host on sled is alone: it owns every piece of work and needs no lock
//! but its own ([`SoloHost`]). Hosts on etcd each hold a lease; what a host
//! claims (a reconcile target) or locks (a DIG action) is a key bound to
//! that lease, so it is given up when the host stops renewing it, by
//! dying or by losing etcd for longer than the lease lasts.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Expect, StoreError};

/// One host, as the others see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Unique among the hosts sharing the store.
    pub id: String,
    /// Where it serves the API.
    pub address: String,
    /// When it joined, RFC 3339.
    pub started: String,
}

/// What a host hears from the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// A host came or went, or work changed owner: who does what may
    /// need deciding again. Also sent when events may have been missed.
    Membership,
    /// Another host (or this one) told the hosts about `topic`.
    Told(String),
}

/// Called with each [`HostEvent`]; must return quickly (it runs on the
/// store's own thread).
pub type OnHostEvent = Arc<dyn Fn(HostEvent) + Send + Sync>;

/// A lock held across hosts until dropped.
pub struct HostLock {
    release: Option<Box<dyn FnOnce() + Send>>,
    fence: Option<Expect>,
}

impl HostLock {
    /// A lock that `release` gives up; it is held exactly while `fence`
    /// holds in the store.
    pub fn new(release: impl FnOnce() + Send + 'static, fence: Expect) -> Self {
        HostLock {
            release: Some(Box::new(release)),
            fence: Some(fence),
        }
    }

    /// A lock with nothing to give up (a host alone on its store).
    pub fn local() -> Self {
        HostLock {
            release: None,
            fence: None,
        }
    }

    /// The fencing token: the condition a write made under the lock must
    /// carry, so that a host that lost the lock (its lease ran out while it
    /// was stopped, say) cannot write after the next holder did. `None`
    /// for a host alone on its store.
    pub fn fence(&self) -> Option<&Expect> {
        self.fence.as_ref()
    }
}

impl Drop for HostLock {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

/// The hosts on one store, from one host's side.
pub trait HostGroup: Send + Sync {
    /// This host.
    fn me(&self) -> &HostInfo;
    /// Whether other hosts may share the store, so that work must be
    /// claimed before it is done.
    fn shared(&self) -> bool;
    /// Whether this host may do its work: false once it lost its place
    /// among the hosts (etcd gone for longer than its lease), since others
    /// may be doing that work now.
    fn holds_lease(&self) -> bool;
    /// The hosts alive now, this one included, by id.
    fn live(&self) -> Result<Vec<HostInfo>, StoreError>;
    /// Each claimed piece of work and the id of the host that owns it.
    fn owners(&self) -> Result<BTreeMap<String, String>, StoreError>;
    /// Makes this host the owner of `work` unless another host is; whether
    /// this host owns it now.
    fn claim(&self, work: &str) -> Result<bool, StoreError>;
    /// Gives `work` up, if this host owns it.
    fn release(&self, work: &str) -> Result<(), StoreError>;
    /// The condition under which this host still owns `work`, for its
    /// writes about it to carry; `None` for a host alone on its store.
    fn ownership_fence(&self, work: &str) -> Option<Expect> {
        let _ = work;
        None
    }
    /// Waits until this host holds the lock `name` (from a blocking
    /// thread); a host that dies holding it loses it with its lease.
    fn lock(&self, name: &str) -> Result<HostLock, StoreError>;
    /// Tells every host (this one too) about `topic`.
    fn tell(&self, topic: &str) -> Result<(), StoreError>;
    /// Calls `on_event` for what happens among the hosts from now on.
    fn listen(&self, on_event: OnHostEvent) -> Result<(), StoreError>;
}

/// A host alone on its store (sled).
pub struct SoloHost {
    me: HostInfo,
}

impl SoloHost {
    /// `me`, alone.
    pub fn new(me: HostInfo) -> Self {
        SoloHost { me }
    }
}

impl HostGroup for SoloHost {
    fn me(&self) -> &HostInfo {
        &self.me
    }

    fn shared(&self) -> bool {
        false
    }

    fn holds_lease(&self) -> bool {
        true
    }

    fn live(&self) -> Result<Vec<HostInfo>, StoreError> {
        Ok(vec![self.me.clone()])
    }

    fn owners(&self) -> Result<BTreeMap<String, String>, StoreError> {
        Ok(BTreeMap::new())
    }

    fn claim(&self, _work: &str) -> Result<bool, StoreError> {
        Ok(true)
    }

    fn release(&self, _work: &str) -> Result<(), StoreError> {
        Ok(())
    }

    fn lock(&self, _name: &str) -> Result<HostLock, StoreError> {
        Ok(HostLock::local())
    }

    fn tell(&self, _topic: &str) -> Result<(), StoreError> {
        Ok(())
    }

    fn listen(&self, _on_event: OnHostEvent) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The host that `work` should go to among `live`: the highest of a hash
/// of each host's id with the work (rendezvous hashing), so the work
/// spreads evenly and only the departed host's share moves when one goes.
pub fn preferred_host<'a>(live: &'a [HostInfo], work: &str) -> Option<&'a HostInfo> {
    live.iter().max_by_key(|host| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in host.id.bytes().chain([0]).chain(work.bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        // FNV alone clusters on keys that differ in their last bytes.
        hash ^= hash >> 33;
        hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
        hash ^ (hash >> 33)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(id: &str) -> HostInfo {
        HostInfo {
            id: id.into(),
            address: String::new(),
            started: String::new(),
        }
    }

    #[test]
    fn work_spreads_over_hosts_and_only_a_departed_hosts_share_moves() {
        let three = [host("a"), host("b"), host("c")];
        let works: Vec<String> = (0..300).map(|i| format!("p/ca/v1/dig{i}")).collect();
        let owner = |live: &[HostInfo], work: &str| preferred_host(live, work).unwrap().id.clone();
        for id in ["a", "b", "c"] {
            let share = works.iter().filter(|w| owner(&three, w) == id).count();
            assert!((60..=140).contains(&share), "{id} gets {share} of 300");
        }
        let two = [host("a"), host("c")];
        for work in &works {
            let before = owner(&three, work);
            if before != "b" {
                assert_eq!(owner(&two, work), before, "{work} moved needlessly");
            }
        }
    }
}
