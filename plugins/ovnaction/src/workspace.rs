//! Annotating one workload intent's resource on its app's clusters, with
//! the request's resources as this call's edits leave them.

use std::collections::BTreeMap;

use serde_json::Value;
use wasmco_guest::{Clusters, StringTable};

use crate::cni::CniKeys;
use crate::copies::Copies;
use crate::nfn::NfnInterface;
use crate::spec::WorkloadSpec;
use crate::workload::{self, Annotations, Place};
use crate::{ActionEdit, ActionRequest, ClusterScope, Patch, PatchResource, ResourceRef};

/// The request's resources as this call's edits leave them, so that a
/// workload intent sees what earlier ones wrote on the same resource.
pub struct Workspace<'r> {
    request: &'r ActionRequest,
    strings: StringTable<'r>,
    clusters: Clusters<'r>,
    cni: CniKeys,
    copies: BTreeMap<(u32, String, String), Copies>,
}

/// Clusters that get the same annotations, with the patch that sets them.
struct Group {
    values: Annotations,
    place: Place,
    clusters: Vec<u32>,
}

/// What one workload intent asks: its spec and its interfaces.
#[derive(Clone, Copy)]
struct Intent<'s> {
    spec: &'s WorkloadSpec,
    interfaces: &'s [NfnInterface],
}

impl<'r> Workspace<'r> {
    pub fn new(request: &'r ActionRequest) -> Self {
        let strings = StringTable::new(&request.strings.data, &request.strings.ends);
        Workspace {
            request,
            strings,
            clusters: wasmco_guest::clusters!(request.clusters),
            cni: CniKeys::new(&strings),
            copies: BTreeMap::new(),
        }
    }

    /// The edits annotating `spec`'s workload on each of its app's clusters.
    pub fn annotate(
        &mut self,
        spec: &WorkloadSpec,
        interfaces: &[NfnInterface],
        notes: &mut Vec<String>,
    ) -> Result<Vec<ActionEdit>, String> {
        let request = self.request;
        let app = self
            .strings
            .find(&spec.app)
            .filter(|id| request.apps.contains(id))
            .ok_or_else(|| format!("app {:?} is not part of the composite app", spec.app))?;
        let placed: Vec<u32> = request
            .placements
            .iter()
            .filter(|placement| placement.app == app)
            .flat_map(|placement| placement.clusters.iter().copied())
            .collect();
        if placed.is_empty() {
            return Ok(Vec::new());
        }
        let key = (app, spec.kind.clone(), spec.workload_resource.clone());
        if !self.copies.contains_key(&key) {
            let copies = Copies::read(request, app, spec)?;
            self.copies.insert(key.clone(), copies);
        }
        let intent = Intent { spec, interfaces };
        let (groups, absent) = self.group(&self.copies[&key], &placed, intent, notes)?;
        if absent.len() == placed.len() {
            return Err(self.missing(app, spec));
        }
        if !absent.is_empty() {
            // EMCO logs each such cluster and goes on with the others.
            notes.push(format!(
                "app {:?} has no {} named {:?} on {}; those clusters are left as they are",
                spec.app,
                spec.kind,
                spec.workload_resource,
                self.describe_clusters(&absent)
            ));
        }
        let copies = self.copies.get_mut(&key).ok_or("the resource vanished")?;
        Ok(patches(spec, copies, groups))
    }

    /// The app's clusters grouped by the annotations they get, and the
    /// clusters that lack the resource.
    fn group(
        &self,
        copies: &Copies,
        placed: &[u32],
        intent: Intent<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(Vec<Group>, Vec<u32>), String> {
        // No cluster has a copy of its own or a kv-pair that changes the
        // CNI: one group, without looking at each of (maybe thousands).
        if copies.own.is_empty() && self.cni.all_default() {
            let Some(manifest) = &copies.base else {
                return Ok((Vec::new(), placed.to_vec()));
            };
            let multus = self.uses_multus(placed[0]);
            let (place, values) = intent.annotations_of(manifest, multus, notes)?;
            let group = Group {
                values,
                place,
                clusters: placed.to_vec(),
            };
            return Ok((vec![group], Vec::new()));
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut absent = Vec::new();
        // Clusters sharing the base copy differ only in Multus.
        let mut from_base: [Option<usize>; 2] = [None, None];
        for &cluster in placed {
            let multus = self.uses_multus(cluster);
            let Some(manifest) = copies.on(cluster) else {
                absent.push(cluster);
                continue;
            };
            let shares_base = !copies.own.contains_key(&cluster);
            if let Some(group) = from_base[usize::from(multus)].filter(|_| shares_base) {
                groups[group].clusters.push(cluster);
                continue;
            }
            let (place, values) = intent.annotations_of(manifest, multus, notes)?;
            let group = join(&mut groups, cluster, place, values);
            if shares_base {
                from_base[usize::from(multus)] = Some(group);
            }
        }
        Ok((groups, absent))
    }

    fn uses_multus(&self, cluster: u32) -> bool {
        self.cni.uses_multus(&self.strings, &self.clusters, cluster)
    }

    /// `clusters` as EMCO names them (`provider+cluster`), the first few.
    fn describe_clusters(&self, clusters: &[u32]) -> String {
        const SHOWN: usize = 5;
        let mut names: Vec<String> = clusters
            .iter()
            .take(SHOWN)
            .map(|&cluster| {
                format!(
                    "{}+{}",
                    self.strings.get(self.clusters.provider(cluster)),
                    self.strings.get(self.clusters.name(cluster))
                )
            })
            .collect();
        if clusters.len() > SHOWN {
            names.push(format!("{} more", clusters.len() - SHOWN));
        }
        format!("cluster {}", names.join(", "))
    }

    /// The error for a workload resource found on none of the app's clusters.
    fn missing(&self, app: u32, spec: &WorkloadSpec) -> String {
        let resources = self.request.resources.iter().filter(|r| r.app == app);
        let near = resources
            .flat_map(|r| {
                r.base
                    .iter()
                    .chain(r.differing.iter().flat_map(|d| d.resources.iter()))
            })
            .find(|r| r.name == spec.workload_resource && r.kind.eq_ignore_ascii_case(&spec.kind));
        let hint = match near {
            Some(r) => format!(
                " (it has a {} of that name: type must be the kind exactly)",
                r.kind
            ),
            None => String::new(),
        };
        format!(
            "app {:?} has no {} named {:?} on any of its clusters{hint}",
            spec.app, spec.kind, spec.workload_resource
        )
    }
}

/// Adds `cluster` to the group that gets the same annotations, or to a new
/// one; the group's index.
fn join(groups: &mut Vec<Group>, cluster: u32, place: Place, values: Annotations) -> usize {
    match groups
        .iter()
        .position(|group| group.values == values && group.place == place)
    {
        Some(group) => {
            groups[group].clusters.push(cluster);
            group
        }
        None => {
            groups.push(Group {
                values,
                place,
                clusters: vec![cluster],
            });
            groups.len() - 1
        }
    }
}

/// The merge patches that give each group its annotations, applied to
/// `copies` as the host will apply them.
fn patches(spec: &WorkloadSpec, copies: &mut Copies, groups: Vec<Group>) -> Vec<ActionEdit> {
    let target = ResourceRef {
        kind: spec.kind.clone(),
        name: spec.workload_resource.clone(),
    };
    let everywhere = groups.len() == 1;
    let mut edits = Vec::with_capacity(groups.len());
    for group in groups {
        let scope = if everywhere {
            copies.annotate_all(group.place, &group.values);
            ClusterScope::All
        } else {
            copies.annotate_on(&group.clusters, group.place, &group.values);
            ClusterScope::Only(group.clusters)
        };
        let patch = workload::merge_patch(group.place, &group.values);
        edits.push(ActionEdit::Patch(PatchResource {
            app: spec.app.clone(),
            scope,
            target: target.clone(),
            patch: Patch::MergePatch(patch.to_string()),
        }));
    }
    edits
}

impl Intent<'_> {
    /// Where one copy of the workload is annotated, and with what.
    fn annotations_of(
        &self,
        manifest: &Value,
        multus: bool,
        notes: &mut Vec<String>,
    ) -> Result<(Place, Annotations), String> {
        let spec = self.spec;
        let api_version = manifest["apiVersion"].as_str().unwrap_or_default();
        let describe = || format!("{} {:?} ({api_version})", spec.kind, spec.workload_resource);
        let place = workload::place(api_version, &spec.kind)
            .ok_or_else(|| format!("{} has no pods to attach networks to", describe()))?;
        let mut found = Vec::new();
        let values = workload::annotations(manifest, place, self.interfaces, multus, &mut found)
            .map_err(|reason| format!("{} {reason}", describe()))?;
        notes.extend(
            found
                .into_iter()
                .map(|note| format!("{}: {note}", describe())),
        );
        Ok((place, values))
    }
}
