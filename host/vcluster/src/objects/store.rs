//! The objects of one virtual cluster, and the rules the API server
//! applies when they are written: uid, resourceVersion, generation,
//! creationTimestamp, and the four kinds of patch.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::admission::admit;
use super::error::KubeError;
use super::fields::FieldOwners;
use super::model::{Event, PatchKind};
use super::selector::Selector;
use crate::catalog::{self, ResourceType};

/// Where an object lives: its type's group and plural, namespace and name.
type ObjectKey = (String, String, String, String);

/// All objects of one virtual cluster.
#[derive(Debug)]
pub struct Objects {
    types: Vec<ResourceType>,
    objects: BTreeMap<ObjectKey, Value>,
    /// Who owns which fields of each object (server-side apply).
    pub(super) owners: BTreeMap<ObjectKey, FieldOwners>,
    revision: u64,
}

impl Default for Objects {
    fn default() -> Self {
        let mut objects = Objects {
            types: catalog::built_in(),
            objects: BTreeMap::new(),
            owners: BTreeMap::new(),
            revision: 0,
        };
        let namespaces = objects.find("", "v1", "namespaces").cloned();
        if let Some(ty) = namespaces {
            for name in ["default", "kube-system", "kube-public"] {
                let body =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                let _ = objects.create(&ty, "", body);
            }
        }
        objects
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl Objects {
    /// Every served type.
    pub fn types(&self) -> &[ResourceType] {
        &self.types
    }

    /// The type served at `group/version/plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// The latest resourceVersion.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Writes so far (the resourceVersion counter).
    pub fn writes(&self) -> u64 {
        self.revision
    }

    fn next_revision(&mut self) -> String {
        self.revision += 1;
        self.revision.to_string()
    }

    pub(super) fn key(ty: &ResourceType, namespace: &str, name: &str) -> ObjectKey {
        let namespace = if ty.namespaced { namespace } else { "" };
        (
            ty.group.clone(),
            ty.plural.clone(),
            namespace.to_owned(),
            name.to_owned(),
        )
    }

    fn check_namespace(&self, ty: &ResourceType, namespace: &str) -> Result<(), KubeError> {
        if !ty.namespaced {
            return Ok(());
        }
        let exists = self.objects.contains_key(&(
            String::new(),
            "namespaces".into(),
            String::new(),
            namespace.to_owned(),
        ));
        if exists {
            Ok(())
        } else {
            Err(KubeError::namespace_not_found(namespace))
        }
    }

    /// POST: creates an object.
    pub fn create(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        mut body: Value,
    ) -> Result<(Value, Event), KubeError> {
        self.check_namespace(ty, namespace)?;
        let name = admit(ty, namespace, None, &mut body)?;
        let key = Self::key(ty, namespace, &name);
        if self.objects.contains_key(&key) {
            return Err(KubeError::already_exists(ty, &name));
        }
        let revision = self.next_revision();
        if let Some(metadata) = body["metadata"].as_object_mut() {
            metadata.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            metadata.insert("resourceVersion".into(), json!(revision));
            metadata.insert("generation".into(), json!(1));
            metadata.insert("creationTimestamp".into(), json!(now()));
        }
        self.objects.insert(key, body.clone());
        if ty.kind == "CustomResourceDefinition" {
            self.serve_crd(&body);
        }
        Ok((body.clone(), self.event("ADDED", ty, body)))
    }

    /// The event of the write just made.
    fn event(&self, kind: &'static str, ty: &ResourceType, mut object: Value) -> Event {
        // A deletion is a change with a resourceVersion of its own, which a
        // watcher resumes from.
        if kind == "DELETED"
            && let Some(metadata) = object["metadata"].as_object_mut()
        {
            metadata.insert("resourceVersion".into(), json!(self.revision.to_string()));
        }
        Event {
            kind,
            resource: (ty.group.clone(), ty.plural.clone()),
            object,
            revision: self.revision,
        }
    }

    /// A CRD is Established at once, and its types are served from then on.
    fn serve_crd(&mut self, crd: &Value) {
        for ty in catalog::from_crd(crd) {
            // An updated CRD may change what its type says (categories,
            // scope), so it replaces the type served at the same path.
            match self
                .types
                .iter_mut()
                .find(|t| t.group == ty.group && t.version == ty.version && t.plural == ty.plural)
            {
                Some(served) => *served = ty,
                None => self.types.push(ty),
            }
        }
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(stored) = self.objects.get_mut(&(
            "apiextensions.k8s.io".into(),
            "customresourcedefinitions".into(),
            String::new(),
            name,
        )) {
            stored["status"] = json!({"conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}]});
        }
    }

    /// GET one object.
    pub fn get(&self, ty: &ResourceType, namespace: &str, name: &str) -> Result<Value, KubeError> {
        self.objects
            .get(&Self::key(ty, namespace, name))
            .cloned()
            .ok_or_else(|| KubeError::not_found(ty, name))
    }

    /// GET a list, in one namespace or all, filtered by a label selector.
    pub fn list(&self, ty: &ResourceType, namespace: Option<&str>, selector: &Selector) -> Value {
        let items: Vec<&Value> = self
            .objects
            .iter()
            .filter(|((group, plural, ns, _), _)| {
                *group == ty.group
                    && *plural == ty.plural
                    && namespace.is_none_or(|wanted| wanted == ns)
            })
            .map(|(_, object)| object)
            .filter(|object| selector.matches(&object["metadata"]["labels"]))
            .collect();
        json!({
            "kind": format!("{}List", ty.kind),
            "apiVersion": ty.api_version(),
            "metadata": {"resourceVersion": self.revision.to_string()},
            "items": items,
        })
    }

    /// PUT: replaces an existing object (resourceVersion, when given, must match).
    pub fn replace(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        name: &str,
        mut body: Value,
    ) -> Result<(Value, Event), KubeError> {
        admit(ty, namespace, Some(name), &mut body)?;
        let current = self.get(ty, namespace, name)?;
        if let Some(expected) = body["metadata"]["resourceVersion"].as_str()
            && Some(expected) != current["metadata"]["resourceVersion"].as_str()
        {
            return Err(KubeError::conflict(
                ty,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        Ok(self.store_update(ty, namespace, name, current, body))
    }

    /// Keeps the server-set fields of `current`, bumps resourceVersion, and
    /// generation when anything but metadata and status changed.
    fn store_update(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        name: &str,
        current: Value,
        mut next: Value,
    ) -> (Value, Event) {
        let revision = self.next_revision();
        let changed = |v: &Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("metadata");
                o.remove("status");
            }
            v
        };
        let generation = current["metadata"]["generation"].as_i64().unwrap_or(1);
        let generation = if changed(&current) != changed(&next) {
            generation + 1
        } else {
            generation
        };
        if next.get("status").is_none()
            && let Some(status) = current.get("status")
        {
            next["status"] = status.clone();
        }
        if let Some(metadata) = next["metadata"].as_object_mut() {
            for field in ["uid", "creationTimestamp"] {
                metadata.insert(field.into(), current["metadata"][field].clone());
            }
            metadata.insert("resourceVersion".into(), json!(revision));
            metadata.insert("generation".into(), json!(generation));
        }
        self.objects
            .insert(Self::key(ty, namespace, name), next.clone());
        if ty.kind == "CustomResourceDefinition" {
            self.serve_crd(&next);
            next = self.get(ty, namespace, name).unwrap_or(next);
        }
        (next.clone(), self.event("MODIFIED", ty, next))
    }

    /// PATCH. Server-side apply creates a missing object (the bool is true
    /// then); the others need it to exist.
    pub fn patch(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        name: &str,
        kind: PatchKind,
        body: Value,
    ) -> Result<(Value, Event, bool), KubeError> {
        let current = match (self.get(ty, namespace, name), kind) {
            (Ok(current), _) => current,
            (Err(_), PatchKind::Apply) => {
                let mut body = body;
                admit(ty, namespace, Some(name), &mut body)?;
                let (created, event) = self.create(ty, namespace, body)?;
                return Ok((created, event, true));
            }
            (Err(e), _) => return Err(e),
        };
        let mut next = current.clone();
        match kind {
            PatchKind::Apply | PatchKind::Merge | PatchKind::Strategic => {
                if !body.is_object() {
                    return Err(KubeError::bad_request(
                        "a merge patch must be a JSON object",
                    ));
                }
                json_patch::merge(&mut next, &body);
            }
            PatchKind::Json => {
                let patch: json_patch::Patch = serde_json::from_value(body)
                    .map_err(|e| KubeError::bad_request(format!("not a JSON patch: {e}")))?;
                json_patch::patch(&mut next, &patch)
                    .map_err(|e| KubeError::invalid(ty, name, e.to_string()))?;
            }
        }
        admit(ty, namespace, Some(name), &mut next)?;
        let (object, event) = self.store_update(ty, namespace, name, current, next);
        Ok((object, event, false))
    }

    /// PATCH or PUT of the status subresource: only `status` changes.
    pub fn set_status(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        name: &str,
        status: Value,
    ) -> Result<(Value, Event), KubeError> {
        let current = self.get(ty, namespace, name)?;
        let mut next = current.clone();
        next["status"] = status;
        Ok(self.store_update(ty, namespace, name, current, next))
    }

    /// DELETE: removes the object and answers it; with `uid`, only if it
    /// is that object (the API server's precondition).
    pub fn delete(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<(Value, Event), KubeError> {
        let key = Self::key(ty, namespace, name);
        let current = self
            .objects
            .get(&key)
            .ok_or_else(|| KubeError::not_found(ty, name))?;
        if let Some(uid) = uid
            && current["metadata"]["uid"].as_str() != Some(uid)
        {
            return Err(KubeError::conflict(
                ty,
                name,
                format_args!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    current["metadata"]["uid"].as_str().unwrap_or_default()
                ),
            ));
        }
        let object = self
            .objects
            .remove(&key)
            .ok_or_else(|| KubeError::not_found(ty, name))?;
        self.owners.remove(&key);
        self.next_revision();
        Ok((object.clone(), self.event("DELETED", ty, object)))
    }
}
