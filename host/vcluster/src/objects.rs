//! A virtual cluster's objects and the rules the Kubernetes API server
//! applies to them: names, namespaces, uid, resourceVersion, generation,
//! creationTimestamp, label selectors, and the four kinds of patch.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::catalog::{self, ResourceType};

mod fields;

pub use fields::FieldOwners;

/// A Kubernetes API error, answered as a `Status` object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct KubeError {
    /// HTTP status.
    pub code: u16,
    /// Kubernetes' reason (`NotFound`, `AlreadyExists`, `Invalid`, …).
    pub reason: &'static str,
    /// For a person.
    pub message: String,
}

impl KubeError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        KubeError {
            code,
            reason,
            message: message.into(),
        }
    }

    /// 404 for a missing object.
    pub fn not_found(ty: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(ty)),
        )
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422.
    pub fn invalid(ty: &ResourceType, name: &str, message: impl Into<String>) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {}", ty.kind, message.into()),
        )
    }

    /// 415.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/apply-patch+yaml, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json; got {content_type:?}"
            ),
        )
    }

    /// 405.
    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource: {method}"),
        )
    }

    /// The `Status` object.
    pub fn status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        })
    }
}

/// `deployments.apps`, as the API server names a type in messages.
fn qualified(ty: &ResourceType) -> String {
    if ty.group.is_empty() {
        ty.plural.clone()
    } else {
        format!("{}.{}", ty.plural, ty.group)
    }
}

/// How a PATCH body is to be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// Server-side apply (`application/apply-patch+yaml`).
    Apply,
    /// RFC 7386 (`application/merge-patch+json`).
    Merge,
    /// Strategic merge (treated as a merge patch here).
    Strategic,
    /// RFC 6902 (`application/json-patch+json`).
    Json,
}

/// Where an object lives: its type's group and plural, namespace and name.
type ObjectKey = (String, String, String, String);

/// All objects of one virtual cluster.
#[derive(Debug)]
pub struct Objects {
    types: Vec<ResourceType>,
    objects: BTreeMap<ObjectKey, Value>,
    owners: BTreeMap<ObjectKey, FieldOwners>,
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

/// The changes a write made, for watchers.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'static str,
    /// The type's group and plural.
    pub resource: (String, String),
    /// The object after the change (before it, for `DELETED`).
    pub object: Value,
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

    fn key(ty: &ResourceType, namespace: &str, name: &str) -> ObjectKey {
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
            Err(KubeError::new(
                404,
                "NotFound",
                format!("namespaces \"{namespace}\" not found"),
            ))
        }
    }

    /// Checks an incoming object against its type and the request path.
    fn admit(
        &self,
        ty: &ResourceType,
        namespace: &str,
        name: Option<&str>,
        body: &mut Value,
    ) -> Result<String, KubeError> {
        let Some(object) = body.as_object_mut() else {
            return Err(KubeError::bad_request("the body is not a JSON object"));
        };
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if api_version != ty.api_version() || kind != ty.kind {
            return Err(KubeError::bad_request(format!(
                "the API version in the data ({api_version}) or kind ({kind}) does not match the expected API version ({}) and kind ({})",
                ty.api_version(),
                ty.kind
            )));
        }
        let metadata = object.entry("metadata").or_insert_with(|| json!({}));
        let Some(metadata) = metadata.as_object_mut() else {
            return Err(KubeError::bad_request("metadata must be an object"));
        };
        let object_name = metadata
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let object_name = match (object_name, name) {
            (Some(given), Some(path)) if given != path => {
                return Err(KubeError::bad_request(format!(
                    "the name of the object ({given}) does not match the name on the URL ({path})"
                )));
            }
            (Some(given), _) => given,
            (None, Some(path)) => path.to_owned(),
            (None, None) => {
                return Err(KubeError::invalid(
                    ty,
                    "",
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
        };
        if !is_dns_subdomain(&object_name) {
            return Err(KubeError::invalid(
                ty,
                &object_name,
                "metadata.name: Invalid value: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            ));
        }
        if ty.namespaced {
            match metadata.get("namespace").and_then(Value::as_str) {
                Some(given) if given != namespace => {
                    return Err(KubeError::bad_request(format!(
                        "the namespace of the provided object ({given}) does not match the namespace sent on the request ({namespace})"
                    )));
                }
                _ => {
                    metadata.insert("namespace".into(), json!(namespace));
                }
            }
        } else {
            metadata.remove("namespace");
        }
        metadata.insert("name".into(), json!(object_name));
        Ok(object_name)
    }

    /// POST: creates an object.
    pub fn create(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        mut body: Value,
    ) -> Result<(Value, Event), KubeError> {
        self.check_namespace(ty, namespace)?;
        let name = self.admit(ty, namespace, None, &mut body)?;
        let key = Self::key(ty, namespace, &name);
        if self.objects.contains_key(&key) {
            return Err(KubeError::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", qualified(ty)),
            ));
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

    fn event(&self, kind: &'static str, ty: &ResourceType, object: Value) -> Event {
        Event {
            kind,
            resource: (ty.group.clone(), ty.plural.clone()),
            object,
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
        self.admit(ty, namespace, Some(name), &mut body)?;
        let current = self.get(ty, namespace, name)?;
        if let Some(expected) = body["metadata"]["resourceVersion"].as_str()
            && Some(expected) != current["metadata"]["resourceVersion"].as_str()
        {
            return Err(KubeError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                    qualified(ty)
                ),
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
                self.admit(ty, namespace, Some(name), &mut body)?;
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
        self.admit(ty, namespace, Some(name), &mut next)?;
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
            return Err(KubeError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    qualified(ty),
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

/// A label selector (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

impl Selector {
    /// Parses a `labelSelector` query value.
    pub fn parse(text: &str) -> Result<Self, KubeError> {
        let mut requirements = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            let (term, tail) = split_term(rest);
            rest = tail.trim_start_matches(',').trim();
            let term = term.trim();
            let bad = || KubeError::bad_request(format!("unable to parse requirement: {term:?}"));
            let requirement = if let Some((key, values)) = term.split_once(" notin ") {
                Requirement::NotIn(key.trim().to_owned(), set(values).ok_or_else(bad)?)
            } else if let Some((key, values)) = term.split_once(" in ") {
                Requirement::In(key.trim().to_owned(), set(values).ok_or_else(bad)?)
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotIn(key.trim().to_owned(), vec![value.trim().to_owned()])
            } else if let Some((key, value)) =
                term.split_once("==").or_else(|| term.split_once('='))
            {
                Requirement::In(key.trim().to_owned(), vec![value.trim().to_owned()])
            } else if let Some(key) = term.strip_prefix('!') {
                Requirement::Absent(key.trim().to_owned())
            } else if !term.is_empty() {
                Requirement::Exists(term.to_owned())
            } else {
                return Err(bad());
            };
            requirements.push(requirement);
        }
        Ok(Selector { requirements })
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, labels: &Value) -> bool {
        let empty = Map::new();
        let labels = labels.as_object().unwrap_or(&empty);
        let value = |key: &str| labels.get(key).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::In(key, values) => {
                value(key).is_some_and(|v| values.iter().any(|w| w == v))
            }
            Requirement::NotIn(key, values) => {
                value(key).is_none_or(|v| !values.iter().any(|w| w == v))
            }
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::Absent(key) => !labels.contains_key(key),
        })
    }
}

/// The first term of a selector; commas inside `( )` do not split.
fn split_term(text: &str) -> (&str, &str) {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => return (&text[..i], &text[i..]),
            _ => {}
        }
    }
    (text, "")
}

fn set(values: &str) -> Option<Vec<String>> {
    let inner = values.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

/// Kubernetes' rule for most object names: an RFC 1123 subdomain, at most
/// 253 lowercase letters, digits, `-` and `.`, starting and ending with a
/// letter or digit.
fn is_dns_subdomain(name: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes.iter().all(|&c| alnum(c) || c == b'-' || c == b'.')
        && bytes.first().is_some_and(|&c| alnum(c))
        && bytes.last().is_some_and(|&c| alnum(c))
}

#[cfg(test)]
mod tests;
