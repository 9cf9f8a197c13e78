//! Whose an object on a cluster is.
//!
//! A target's objects carry its identity twice: the label [`DIG_LABEL`],
//! a hash of the target's whole key, which is what rsync selects them by
//! and which cannot collide the way a readable form could (`shop` /
//! `staging.web` and `shop.staging` / `web` would both read
//! `shop.staging.web`); and the annotation [`OWNER_ANNOTATION`], the key
//! itself, for people and for conflict messages. rsync sets both on every
//! apply, over whatever a manifest (or a controller's patch) says, so no
//! deployment can wear another's identity.
//!
//! An object with neither was not made by wasmco. rsync takes such an
//! object only when its resource asks to (the force-apply annotation),
//! marks it [`ADOPTED_ANNOTATION`], and at the end gives it back (its
//! labels and annotations removed) rather than deleting it.

use std::collections::BTreeMap;

use serde_json::Value;

/// Labels, as rsync sets and selects them.
pub type Labels = BTreeMap<String, String>;

/// The label naming the DIG (or logical cloud) an object belongs to: a
/// hash of its key.
pub const DIG_LABEL: &str = "wasmco.io/deployment-intent-group";
/// The label of a Helm hook's object, naming the target it ran for (not
/// the DIG label: hooks are not part of what a reconcile keeps in place).
pub const HOOK_LABEL: &str = "wasmco.io/hook-of";
/// The label naming the app an object belongs to.
pub const APP_LABEL: &str = "wasmco.io/app";
/// The annotation with the owning target's key (`project/app/version/dig`).
pub const OWNER_ANNOTATION: &str = "wasmco.io/owner";
/// The annotation rsync puts on an object that was on the cluster before
/// it took it over: such an object is given back, never deleted.
pub const ADOPTED_ANNOTATION: &str = "wasmco.io/adopted";
/// An annotation with the value `"true"` lets a resource take over an
/// object that exists on the cluster without an owner in wasmco (and take
/// the fields other field managers own on it), instead of being refused.
pub use wasmco_core::cloud::FORCE_ANNOTATION;

/// The label value that names a target key's objects.
pub use wasmco_core::cloud::owner_label;

/// The label value naming app `app`: the name itself when it fits a label
/// value (63 characters), else its start and a hash of the whole.
pub(crate) fn app_label(app: &str) -> String {
    if app.len() <= 63 {
        return app.to_owned();
    }
    format!(
        "{}-{}",
        &app[..46],
        &wasmco_core::cloud::hex_digest(app.as_bytes())[..16]
    )
}

/// The labels that find `key`'s objects (and, with `app`, one app's).
pub(crate) fn labels(key: &str, app: Option<&str>) -> Labels {
    let mut labels = Labels::from([(DIG_LABEL.to_owned(), owner_label(key))]);
    if let Some(app) = app {
        labels.insert(APP_LABEL.to_owned(), app_label(app));
    }
    labels
}

/// The server-side apply field manager of `key`'s objects: one per target,
/// so that a second DIG applying an object the first one manages is a
/// conflict the cluster reports. At most 128 characters.
pub(crate) fn field_manager(key: &str) -> String {
    let manager = format!("wasmco/{key}");
    if manager.len() <= 128 {
        manager
    } else {
        format!("wasmco/{}", owner_label(key))
    }
}

/// The project of a target's key (its first segment).
pub(crate) fn project_of(key: &str) -> &str {
    key.split('/').next().unwrap_or_default()
}

/// Who holds an object found on a cluster, as seen by one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Holder {
    /// This target made it (or took it over).
    Us,
    /// Another wasmco target: its key, when the object says.
    Another(Option<String>),
    /// Nobody in wasmco: it was made some other way.
    Nobody,
}

/// The label value versions before the hash gave `key`'s objects: the key
/// with every character a label value cannot hold made `.`, cut with a hash
/// past 63 characters. It is not unique, so only an object this target's
/// field manager also wrote is taken for this target's by it.
pub(crate) fn legacy_label(key: &str) -> String {
    let value: String = key
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '.',
        })
        .collect();
    if value.len() <= 63 {
        return value;
    }
    let hash = crate::drift::stable_hash(key.as_bytes());
    format!("{}-{hash:016x}", &value[..46])
}

/// Whether `manager` wrote some of `object`'s fields.
fn managed_by(object: &Value, manager: &str) -> bool {
    object["metadata"]["managedFields"]
        .as_array()
        .is_some_and(|entries| entries.iter().any(|e| e["manager"] == manager))
}

/// Who holds `object`, for the target whose label value is `label` and
/// whose key is `key`.
pub(crate) fn holder(object: &Value, key: &str, label: &str) -> Holder {
    let labels = &object["metadata"]["labels"];
    let marks = [labels[DIG_LABEL].as_str(), labels[HOOK_LABEL].as_str()];
    // rsync writes the annotation with the labels, so ours has both; an
    // object whose marks disagree is not ours, whichever was copied.
    match object["metadata"]["annotations"][OWNER_ANNOTATION].as_str() {
        Some(annotation) if annotation == key && marks.contains(&Some(label)) => Holder::Us,
        Some(annotation) if annotation == key => Holder::Another(None),
        Some(annotation) => Holder::Another(Some(annotation.to_owned())),
        None if marks.contains(&Some(label)) => Holder::Us,
        // Made by this target before the hash named it.
        None if marks.contains(&Some(legacy_label(key).as_str()))
            && managed_by(object, &field_manager(key)) =>
        {
            Holder::Us
        }
        None if marks.iter().any(Option::is_some) => Holder::Another(None),
        None => Holder::Nobody,
    }
}

/// Whether rsync adopted `object` (it was there before wasmco).
pub(crate) fn adopted(object: &Value) -> bool {
    object["metadata"]["annotations"][ADOPTED_ANNOTATION] == "true"
}

/// What is applied for `manifest`: `labels` set, the owner annotation set
/// to `key`, and the adopted mark set exactly when `adopted`, whatever the
/// manifest said of any of them.
pub(crate) fn stamped(manifest: &Value, labels: &Labels, key: &str, adopted: bool) -> Value {
    let mut manifest = manifest.clone();
    let metadata = &mut manifest["metadata"];
    // Only the marks rsync sets now: a manifest wears no other identity.
    if let Some(carried) = metadata["labels"].as_object_mut() {
        for mark in [DIG_LABEL, HOOK_LABEL, APP_LABEL] {
            carried.remove(mark);
        }
    }
    for (name, value) in labels {
        metadata["labels"][name] = Value::String(value.clone());
    }
    metadata["annotations"][OWNER_ANNOTATION] = Value::String(key.to_owned());
    match metadata["annotations"].as_object_mut() {
        Some(annotations) if adopted => {
            annotations.insert(ADOPTED_ANNOTATION.to_owned(), "true".into());
        }
        Some(annotations) => {
            annotations.remove(ADOPTED_ANNOTATION);
        }
        None => {}
    }
    manifest
}

/// Whether a resource asks to take over an object nobody in wasmco owns.
pub(crate) fn forced(manifest: &Value) -> bool {
    manifest["metadata"]["annotations"][FORCE_ANNOTATION] == "true"
}

/// The merge patch that takes rsync's marks off an object.
pub(crate) fn release_patch() -> Value {
    let mut patch = serde_json::json!({"metadata": {"labels": {}, "annotations": {}}});
    for label in [DIG_LABEL, APP_LABEL] {
        patch["metadata"]["labels"][label] = Value::Null;
    }
    for annotation in [OWNER_ANNOTATION, ADOPTED_ANNOTATION] {
        patch["metadata"]["annotations"][annotation] = Value::Null;
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_that_read_alike_get_different_labels() {
        let a = owner_label("shop/staging.web/v1/dig");
        let b = owner_label("shop.staging/web/v1/dig");
        assert_ne!(a, b);
        assert_eq!(a.len(), 40);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        // Pinned: objects deployed by one version are found by the next.
        assert_eq!(
            owner_label("p/ca/v1/dig"),
            "67ec9346e2e749cab35515167d4db2c709524032"
        );
        assert!(field_manager(&format!("p/{}", "b".repeat(200))).len() <= 128);
        let long = "a".repeat(80);
        assert!(app_label(&long).len() <= 63);
        assert_ne!(app_label(&long), app_label(&format!("{long}b")));
        assert_eq!(app_label("web"), "web");
    }

    #[test]
    fn an_object_is_ours_anothers_or_nobodys() {
        let key = "p/ca/v1/d";
        let ours = owner_label(key);
        let object = |labels: Value, annotations: Value| json!({"metadata": {"labels": labels, "annotations": annotations}});
        assert_eq!(
            holder(&object(json!({DIG_LABEL: ours}), json!({})), key, &ours),
            Holder::Us
        );
        assert_eq!(
            holder(&object(json!({HOOK_LABEL: ours}), json!({})), key, &ours),
            Holder::Us
        );
        assert_eq!(
            holder(
                &object(
                    json!({DIG_LABEL: "other"}),
                    json!({OWNER_ANNOTATION: "q/x/v/y"})
                ),
                key,
                &ours
            ),
            Holder::Another(Some("q/x/v/y".into()))
        );
        assert_eq!(
            holder(&object(json!({"app": "x"}), json!({})), key, &ours),
            Holder::Nobody
        );
        // Our label copied onto another's object does not make it ours.
        assert_eq!(
            holder(
                &object(
                    json!({HOOK_LABEL: ours}),
                    json!({OWNER_ANNOTATION: "q/x/v/y"})
                ),
                key,
                &ours
            ),
            Holder::Another(Some("q/x/v/y".into()))
        );
    }

    #[test]
    fn an_object_labelled_before_the_hash_is_ours_only_if_our_manager_wrote_it() {
        let key = "shop/staging.web/v1/d";
        let ours = owner_label(key);
        let legacy = |manager: &str| {
            json!({"metadata": {"labels": {DIG_LABEL: "shop.staging.web.v1.d"},
                "managedFields": [{"manager": manager, "operation": "Apply"}]}})
        };
        assert_eq!(legacy_label(key), "shop.staging.web.v1.d");
        assert_eq!(holder(&legacy(&field_manager(key)), key, &ours), Holder::Us);
        // The other project whose key reads alike.
        assert_eq!(
            holder(&legacy("wasmco/shop.staging/web/v1/d"), key, &ours),
            Holder::Another(None)
        );
    }

    #[test]
    fn a_manifest_cannot_wear_another_identity_or_the_adopted_mark() {
        let victim = owner_label("victim/ca/v/d");
        let manifest = json!({"metadata": {"name": "a",
            "labels": {DIG_LABEL: "someone-else", HOOK_LABEL: victim},
            "annotations": {OWNER_ANNOTATION: "victim/ca/v/d", ADOPTED_ANNOTATION: "true"}}});
        let labels = labels("p/ca/v1/d", Some("web"));
        let applied = stamped(&manifest, &labels, "p/ca/v1/d", false);
        assert!(applied["metadata"]["labels"].get(HOOK_LABEL).is_none());
        assert_eq!(
            holder(&applied, "victim/ca/v/d", &victim),
            Holder::Another(Some("p/ca/v1/d".into()))
        );
        assert_eq!(
            applied["metadata"]["labels"][DIG_LABEL],
            owner_label("p/ca/v1/d")
        );
        assert_eq!(
            applied["metadata"]["annotations"][OWNER_ANNOTATION],
            "p/ca/v1/d"
        );
        assert!(!adopted(&applied));
        assert!(adopted(&stamped(&manifest, &labels, "p/ca/v1/d", true)));
    }
}
