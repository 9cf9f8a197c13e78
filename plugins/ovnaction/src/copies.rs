//! The copies of one resource of an app, kept as this call's edits leave
//! them, so that a workload intent sees what earlier ones wrote.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::spec::WorkloadSpec;
use crate::workload::{self, Annotations, Place};
use crate::{ActionRequest, Resource};

/// The copies of one resource of an app: the base every cluster without a
/// resource list of its own gets, and those lists' copies (`None` where
/// the list lacks it).
#[derive(Debug, Default)]
pub struct Copies {
    pub base: Option<Value>,
    pub own: BTreeMap<u32, Option<Value>>,
}

impl Copies {
    /// The copies of `spec`'s resource among `app`'s resources.
    pub fn read(request: &ActionRequest, app: u32, spec: &WorkloadSpec) -> Result<Self, String> {
        let Some(resources) = request.resources.iter().find(|r| r.app == app) else {
            return Ok(Copies::default());
        };
        let find = |list: &[Resource]| -> Result<Option<Value>, String> {
            list.iter()
                .find(|r| r.kind == spec.kind && r.name == spec.workload_resource)
                .map(|r| {
                    serde_json::from_str(&r.manifest).map_err(|e| {
                        format!("resource {}+{} is not valid JSON: {e}", r.name, r.kind)
                    })
                })
                .transpose()
        };
        let mut copies = Copies {
            base: find(&resources.base)?,
            own: BTreeMap::new(),
        };
        for differing in &resources.differing {
            copies
                .own
                .insert(differing.cluster, find(&differing.resources)?);
        }
        Ok(copies)
    }

    /// The copy `cluster` holds, if it holds one.
    pub fn on(&self, cluster: u32) -> Option<&Value> {
        match self.own.get(&cluster) {
            Some(copy) => copy.as_ref(),
            None => self.base.as_ref(),
        }
    }

    /// Annotates every copy, as an edit scoped to all the app's clusters does.
    pub fn annotate_all(&mut self, place: Place, values: &Annotations) {
        for copy in self.base.iter_mut().chain(self.own.values_mut().flatten()) {
            workload::apply(copy, place, values);
        }
    }

    /// Annotates the copies of `clusters` only.
    pub fn annotate_on(&mut self, clusters: &[u32], place: Place, values: &Annotations) {
        for &cluster in clusters {
            // The host gives a cluster sharing the base its own copy.
            if !self.own.contains_key(&cluster) {
                self.own.insert(cluster, self.base.clone());
            }
            if let Some(Some(copy)) = self.own.get_mut(&cluster) {
                workload::apply(copy, place, values);
            }
        }
    }
}
