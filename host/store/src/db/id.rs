//! How a resource is named, and where its keys live in the store.

use wasmco_core::Kind;

/// A resource: its kind and path values (ancestors' names, then its own).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceId {
    /// The kind.
    pub kind: Kind,
    /// Path values, outermost first.
    pub path: Vec<String>,
}

impl ResourceId {
    /// The resource of `kind` at `path`.
    pub fn new(kind: Kind, path: Vec<String>) -> Self {
        ResourceId { kind, path }
    }

    pub(super) fn key_with(&self, space: &str) -> Vec<u8> {
        format!(
            "{space}/{}/{}",
            self.kind.info().store_id,
            self.path.join("/")
        )
        .into_bytes()
    }

    pub(super) fn key(&self) -> Vec<u8> {
        self.key_with("res")
    }

    /// The resource it lives under.
    pub fn parent(&self) -> Option<ResourceId> {
        // A declared intent's path holds its ancestors' segments: one
        // (segment, name) pair up is its parent, the group's four values
        // are the group.
        if self.kind == Kind::Intent && self.path.len() > 6 {
            return Some(ResourceId::new(
                Kind::Intent,
                self.path[..self.path.len() - 2].to_vec(),
            ));
        }
        let parent = self.kind.info().parent?;
        Some(ResourceId::new(
            parent,
            self.path[..self.kind.parent_arity()].to_vec(),
        ))
    }

    /// How messages name it: `cluster edge/c1`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.kind.info().title, self.path.join("/"))
    }

    pub(super) fn from_key(key: &[u8]) -> Option<ResourceId> {
        Self::from_key_in("res", key)
    }

    /// The resource whose key in `space` (`res`, `file`) is `key`.
    pub(super) fn from_key_in(space: &str, key: &[u8]) -> Option<ResourceId> {
        let text = std::str::from_utf8(key).ok()?;
        let mut parts = text.split('/');
        parts.next().filter(|found| *found == space)?;
        let store_id = parts.next()?;
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.info().store_id == store_id)?;
        Some(ResourceId::new(kind, parts.map(str::to_owned).collect()))
    }
}

impl ResourceId {
    /// For a collection probe (kind + parent path): the parent resource.
    pub(super) fn parent_of_collection(&self) -> Option<ResourceId> {
        let parent = self.kind.info().parent?;
        Some(ResourceId::new(parent, self.path.clone()))
    }
}

pub(super) fn collection_prefix(kind: Kind, parent_path: &[String]) -> Vec<u8> {
    collection_prefix_in("res", kind, parent_path)
}

/// [`collection_prefix`] in another key space (`file`).
pub(super) fn collection_prefix_in(space: &str, kind: Kind, parent_path: &[String]) -> Vec<u8> {
    let mut prefix = format!("{space}/{}/", kind.info().store_id);
    for segment in parent_path {
        prefix.push_str(segment);
        prefix.push('/');
    }
    prefix.into_bytes()
}

pub(super) fn separator_key(space: &str, first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut key = format!("{space}/").into_bytes();
    key.extend_from_slice(first);
    key.push(0);
    key.extend_from_slice(second);
    key
}
