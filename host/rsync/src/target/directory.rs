//! A directory as a target: each cluster's manifests as YAML files, for
//! dry runs and GitOps.

use std::path::PathBuf;

use kube::core::{Selector, SelectorExt};
use serde_json::Value;

use wasmco_core::resource::Resource;

use super::error::SyncError;
use super::sync_target::{ApplyAs, SyncTarget};
use crate::owner::{Labels, release_patch};

/// A directory: the manifests per cluster as YAML files, for dry runs and GitOps.
pub struct DirectoryTarget {
    dir: PathBuf,
}

impl DirectoryTarget {
    /// Writes under `dir` (created when missing).
    pub fn new(dir: PathBuf) -> Self {
        DirectoryTarget { dir }
    }

    /// `<namespace>/<kind>-<name>.yaml`, or `<kind>-<name>.yaml` for objects
    /// the manifest gives no namespace.
    fn path(&self, resource: &Resource) -> PathBuf {
        let file = format!(
            "{}-{}.yaml",
            resource.key.kind.to_lowercase(),
            resource.key.name
        );
        match &resource.namespace {
            Some(namespace) => self.dir.join(namespace).join(file),
            None => self.dir.join(file),
        }
    }
}

#[async_trait::async_trait]
impl SyncTarget for DirectoryTarget {
    async fn apply(
        &self,
        resource: &Resource,
        manifest: &Value,
        _how: ApplyAs<'_>,
    ) -> Result<Value, SyncError> {
        let path = self.path(resource);
        let io = |source: std::io::Error| SyncError::Directory {
            path: path.clone(),
            source,
        };
        let yaml = serde_norway::to_string(&manifest)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(io)?;
        }
        tokio::fs::write(&path, yaml).await.map_err(io)?;
        Ok(manifest.clone())
    }

    async fn get(&self, resource: &Resource) -> Result<Option<Value>, SyncError> {
        Ok(read_manifest(&self.path(resource)).await)
    }

    /// Nothing runs what a directory holds: written is as ready as it gets.
    async fn ready(&self, resource: &Resource) -> Result<bool, SyncError> {
        Ok(tokio::fs::try_exists(self.path(resource))
            .await
            .unwrap_or(false))
    }

    async fn release(&self, resource: &Resource, _manager: &str) -> Result<(), SyncError> {
        let Some(mut manifest) = self.get(resource).await? else {
            return Ok(());
        };
        json_patch::merge(&mut manifest, &release_patch());
        self.apply(
            resource,
            &manifest,
            ApplyAs {
                manager: "",
                force: true,
            },
        )
        .await
        .map(drop)
    }

    /// A file has no uid: the one under the resource's name is removed.
    async fn delete(&self, resource: &Resource, _uid: Option<&str>) -> Result<bool, SyncError> {
        let path = self.path(resource);
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(source) => Err(SyncError::Directory { path, source }),
        }
    }

    async fn list_labelled(
        &self,
        api_version: &str,
        kind: &str,
        labels: &Labels,
    ) -> Result<Vec<Value>, SyncError> {
        let selector: Selector = labels.clone().into_iter().collect();
        let mut found = Vec::new();
        let mut dirs = vec![self.dir.clone()];
        while let Some(dir) = dirs.pop() {
            let Ok(mut entries) = tokio::fs::read_dir(&dir).await else {
                continue;
            };
            while let Ok(Some(entry)) = entries.next_entry().await {
                let path = entry.path();
                if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                    dirs.push(path);
                    continue;
                }
                let Some(manifest) = read_manifest(&path).await else {
                    continue;
                };
                let object_labels: Labels =
                    serde_json::from_value(manifest["metadata"]["labels"].clone())
                        .unwrap_or_default();
                if manifest["apiVersion"] == api_version
                    && manifest["kind"] == kind
                    && selector.matches(&object_labels)
                {
                    found.push(manifest);
                }
            }
        }
        Ok(found)
    }

    async fn version(&self) -> Result<String, SyncError> {
        Ok("directory".to_owned())
    }
}

/// A manifest file's object; `None` when it is missing or not one.
async fn read_manifest(path: &std::path::Path) -> Option<Value> {
    let text = tokio::fs::read_to_string(path).await.ok()?;
    serde_norway::from_str(&text).ok()
}
