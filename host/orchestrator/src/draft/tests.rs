use serde_json::{Value, json};

use wasmco_core::resource::Resource;
use wasmco_runtime::contract::{
    self, ActionEdit, AddResource, ClusterScope, PatchResource, PlaceApp, PlacementEdit,
    RemoveResource, ResourceRef, UnplaceApp,
};

use super::*;
use crate::budget::EditLimits;

fn cluster(name: &str) -> ClusterInfo {
    ClusterInfo {
        provider: "p".into(),
        name: name.into(),
        labels: Vec::new(),
        kv: Vec::new(),
    }
}

fn deployment() -> Resource {
    Resource::from_manifest(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 1}}))
    .unwrap()
}

fn draft() -> DraftContext {
    let mut draft = DraftContext::new(
        vec![AppDraft::new("web", vec![deployment()])],
        vec![cluster("c0"), cluster("c1"), cluster("c2")],
    );
    draft
        .apply_placement(&[place(vec![0, 1, 2], None)])
        .unwrap();
    draft
}

/// Places app `web` on `clusters`, in `group` (`None`: allOf).
fn place(clusters: Vec<u32>, group: Option<&str>) -> PlacementEdit {
    PlacementEdit::Place(PlaceApp {
        app: "web".into(),
        clusters,
        group: group.map(Into::into),
    })
}

fn unplace(clusters: Vec<u32>) -> PlacementEdit {
    PlacementEdit::Unplace(UnplaceApp {
        app: "web".into(),
        clusters,
    })
}

/// The first app's placement, each cluster with its group.
fn placed(draft: &DraftContext) -> Vec<(ClusterIndex, Option<String>)> {
    draft.apps()[0]
        .placement
        .iter()
        .map(|p| (p.cluster, p.group.clone()))
        .collect()
}

fn replicas(draft: &DraftContext, cluster: ClusterIndex) -> Value {
    let app = &draft.apps()[0];
    app.resources_on(cluster)[0].manifest["spec"]["replicas"].clone()
}

fn target() -> ResourceRef {
    ResourceRef {
        kind: "Deployment".into(),
        name: "web".into(),
    }
}

fn merge(scope: ClusterScope, replicas: u32) -> ActionEdit {
    ActionEdit::Patch(PatchResource {
        app: "web".into(),
        scope,
        target: target(),
        patch: contract::Patch::MergePatch(json!({"spec": {"replicas": replicas}}).to_string()),
    })
}

#[test]
fn a_bad_edit_after_good_ones_applies_nothing() {
    let mut draft = draft();
    let (_, map) = draft.action_request("{}".into());
    let err = draft
        .apply_actions(
            &[
                merge(ClusterScope::All, 5),
                ActionEdit::Remove(RemoveResource {
                    app: "web".into(),
                    scope: ClusterScope::All,
                    target: ResourceRef {
                        kind: "Service".into(),
                        name: "nope".into(),
                    },
                }),
            ],
            &map,
        )
        .unwrap_err();
    assert_eq!(err.index, 1);
    assert_eq!(replicas(&draft, 0), json!(1));
}

#[test]
fn a_later_global_patch_wins_over_an_earlier_cluster_patch() {
    let mut draft = draft();
    let (_, map) = draft.action_request("{}".into());
    draft
        .apply_actions(&[merge(ClusterScope::Only(vec![1]), 3)], &map)
        .unwrap();
    assert_eq!(replicas(&draft, 1), json!(3));
    assert_eq!(replicas(&draft, 0), json!(1));
    draft
        .apply_actions(&[merge(ClusterScope::All, 7)], &map)
        .unwrap();
    assert_eq!(replicas(&draft, 1), json!(7));
    assert_eq!(replicas(&draft, 2), json!(7));
}

#[test]
fn per_cluster_adds_and_removes_are_kept_as_differences_only() {
    let mut draft = draft();
    let (_, map) = draft.action_request("{}".into());
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra"}});
    draft
        .apply_actions(
            &[
                ActionEdit::Add(AddResource {
                    app: "web".into(),
                    scope: ClusterScope::Only(vec![0]),
                    manifest: config.to_string(),
                }),
                ActionEdit::Remove(RemoveResource {
                    app: "web".into(),
                    scope: ClusterScope::Only(vec![2]),
                    target: target(),
                }),
            ],
            &map,
        )
        .unwrap();
    let app = &draft.apps()[0];
    assert_eq!(app.base.len(), 1);
    assert_eq!(app.overrides.len(), 2);
    let keys = |c| {
        app.resources_on(c)
            .iter()
            .map(|r| r.key.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(0), ["web+Deployment", "extra+ConfigMap"]);
    assert_eq!(keys(1), ["web+Deployment"]);
    assert!(keys(2).is_empty());
}

#[test]
fn edits_outside_the_context_are_refused() {
    let mut draft = draft();
    let err = draft
        .apply_placement(&[PlacementEdit::Place(PlaceApp {
            app: "db".into(),
            clusters: vec![0],
            group: None,
        })])
        .unwrap_err();
    assert!(err.reason.contains("\"db\""), "{err}");
    let err = draft.apply_placement(&[unplace(vec![3])]).unwrap_err();
    assert!(err.reason.contains("outside"), "{err}");
    draft.apply_placement(&[unplace(vec![2])]).unwrap();
    let (_, map) = draft.action_request("{}".into());
    assert_eq!(map, vec![0, 1]);
    let err = draft
        .apply_actions(&[merge(ClusterScope::Only(vec![2]), 2)], &map)
        .unwrap_err();
    assert!(err.reason.contains("outside"), "{err}");
}

#[test]
fn a_patch_may_not_rename_its_target() {
    let mut draft = draft();
    let (_, map) = draft.action_request("{}".into());
    let rename = ActionEdit::Patch(PatchResource {
        app: "web".into(),
        scope: ClusterScope::All,
        target: target(),
        patch: contract::Patch::JsonPatch(
            json!([{"op": "replace", "path": "/metadata/name", "value": "other"}]).to_string(),
        ),
    });
    let err = draft.apply_actions(&[rename], &map).unwrap_err();
    assert!(err.reason.contains("may not change"), "{err}");
}

#[test]
fn settling_keeps_all_of_and_the_first_of_each_group() {
    let mut draft = DraftContext::new(
        vec![AppDraft::new("web", Vec::new())],
        (0..5).map(|i| cluster(&format!("c{i}"))).collect(),
    );
    draft
        .apply_placement(&[
            place(vec![0], None),
            place(vec![3, 4], Some("g1")),
            place(vec![2, 1], Some("g2")),
        ])
        .unwrap();
    draft.apply_placement(&[unplace(vec![3])]).unwrap();
    draft.settle_placement();
    assert_eq!(draft.apps()[0].clusters(), vec![0, 4, 2]);
}

fn config_map(name: &str) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
        .to_string()
}

#[test]
fn a_cluster_listed_many_times_is_patched_once() {
    let mut draft = draft();
    let map: Vec<ClusterIndex> = vec![0, 1, 2];
    let patch = ActionEdit::Patch(PatchResource {
        app: "web".into(),
        scope: ClusterScope::Only(vec![1; 200_000]),
        target: target(),
        patch: contract::Patch::JsonPatch(
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"big": "x".repeat(4096)}}])
                .to_string(),
        ),
    });
    // 200,000 copies of a 4 KiB manifest would pass the output budget; one does not.
    draft
        .apply_actions_within(
            &[patch],
            &map,
            EditLimits {
                output_bytes: 1 << 20,
                ..EditLimits::default()
            },
        )
        .unwrap();
    assert_eq!(draft.apps()[0].overrides.len(), 1);
}

#[test]
fn many_edits_apply_in_one_pass_and_too_many_are_refused() {
    let mut draft = draft();
    let map: Vec<ClusterIndex> = vec![0, 1, 2];
    let adds: Vec<ActionEdit> = (0..10_000)
        .map(|i| {
            ActionEdit::Add(AddResource {
                app: "web".into(),
                scope: ClusterScope::Only(vec![i % 3]),
                manifest: config_map(&format!("m{i}")),
            })
        })
        .collect();
    draft.apply_actions(&adds, &map).unwrap();
    assert_eq!(draft.apps()[0].resources_on(0).len(), 1 + 3334);
    // A name added again on the same cluster is refused.
    let again = [ActionEdit::Add(AddResource {
        app: "web".into(),
        scope: ClusterScope::Only(vec![0]),
        manifest: config_map("m0"),
    })];
    assert!(draft.apply_actions(&again, &map).is_err());
    let places: Vec<PlacementEdit> = (0..10_000)
        .map(|i| place(vec![i % 3], Some(&format!("g{i}"))))
        .collect();
    draft.apply_placement(&places).unwrap();
    assert_eq!(draft.apps()[0].placement.len(), 3 + 10_000);
    let too_many = vec![places[0].clone(); 10_001];
    let error = draft.apply_placement(&too_many).unwrap_err();
    assert!(error.reason.contains("maxEdits"), "{error}");
}

#[test]
fn unplacing_and_placing_again_keeps_order_and_groups() {
    let mut draft = draft();
    draft
        .apply_placement(&[unplace(vec![1]), place(vec![1, 1, 2], Some("any"))])
        .unwrap();
    assert_eq!(
        placed(&draft),
        [
            (0, None),
            (2, None),
            (1, Some("any".into())),
            (2, Some("any".into()))
        ]
    );
}

#[test]
fn what_a_batch_places_it_can_unplace_and_place_again() {
    let mut draft = draft();
    draft
        .apply_placement(&[
            place(vec![2], Some("g")),
            unplace(vec![2, 0]),
            place(vec![2, 0], None),
            place(vec![0], None),
            unplace(vec![2]),
            place(vec![2], Some("g")),
        ])
        .unwrap();
    assert_eq!(
        placed(&draft),
        [(1, None), (0, None), (2, Some("g".into()))],
        "each cluster once per group, in the order last placed"
    );
}

#[test]
fn patches_are_bounded_in_size_and_depth() {
    let mut draft = draft();
    let map: Vec<ClusterIndex> = vec![0, 1, 2];
    let mut ops = vec![json!({"op": "add", "path": "/spec/pad", "value": "x".repeat(10_000)})];
    for round in 0..30 {
        ops.push(json!({"op": "copy", "from": "/spec", "path": format!("/metadata/annotations")}));
        ops.push(json!({"op": "copy", "from": "/metadata/annotations", "path": format!("/spec/b{round}")}));
    }
    let bomb = ActionEdit::Patch(PatchResource {
        app: "web".into(),
        scope: ClusterScope::All,
        target: target(),
        patch: contract::Patch::JsonPatch(json!(ops).to_string()),
    });
    let error = draft.apply_actions(&[bomb], &map).unwrap_err();
    assert!(error.reason.contains("manifestBytes"), "{error}");
    assert_eq!(replicas(&draft, 0), json!(1), "nothing was applied");
    let into_itself = ActionEdit::Patch(PatchResource {
        app: "web".into(),
        scope: ClusterScope::All,
        target: target(),
        patch: contract::Patch::JsonPatch(
            json!([{"op": "move", "from": "/spec", "path": "/spec/inner"}]).to_string(),
        ),
    });
    let error = draft.apply_actions(&[into_itself], &map).unwrap_err();
    assert!(error.reason.contains("own subtree"), "{error}");
}
