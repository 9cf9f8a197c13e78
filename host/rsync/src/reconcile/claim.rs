//! Whose a name on the cluster is, and what this context may take:
//! where a resource goes, the tenancy rules it is held to, objects made
//! by others.

use serde_json::Value;

use wasmco_core::resource::Resource;
use wasmco_core::tenancy::{group_of, is_cluster_scoped};

use super::cluster::ClusterWork;
use crate::owner::{self, FORCE_ANNOTATION, Holder};
use crate::target::SyncError;

/// Why a resource was not applied.
pub(super) struct Refusal {
    pub(super) message: String,
    pub(super) transient: bool,
}

impl ClusterWork {
    /// The namespace `resource` goes into: its own, or the context's for
    /// a kind that is not one of Kubernetes' cluster-scoped ones.
    pub(super) fn namespace_of<'r>(&'r self, resource: &'r Resource) -> Option<&'r str> {
        match &resource.namespace {
            Some(namespace) => Some(namespace),
            None if is_cluster_scoped(group_of(&resource.api_version), &resource.key.kind) => None,
            None => Some(self.context.meta.access.namespace()),
        }
    }

    /// Whether `live` sits where `resource` goes: in its namespace (the
    /// context's when the manifest names none), or in none for a
    /// cluster-scoped kind.
    pub(super) fn same_place(&self, resource: &Resource, live: &Resource) -> bool {
        live.namespace.as_deref().is_none_or(|namespace| {
            namespace
                == resource
                    .namespace
                    .as_deref()
                    .unwrap_or(self.context.meta.access.namespace())
        })
    }

    /// Holds a project's resource to the rules it was checked against,
    /// now that the cluster says what scope its kind has (a custom kind
    /// may be cluster-wide).
    pub(super) async fn within_confinement(&self, resource: &Resource) -> Result<(), Refusal> {
        let Some(confined) = self
            .context
            .meta
            .confinement
            .as_ref()
            .and_then(|rules| rules.get(&self.cluster.provider))
        else {
            return Ok(());
        };
        let (api_version, kind) = (&resource.api_version, &resource.key.kind);
        let cluster_scoped = self
            .with_retries(|target| async move { target.cluster_scoped(api_version, kind).await })
            .await
            .map_err(|error| Refusal {
                transient: error.is_transient(),
                message: error.to_string(),
            })?;
        confined
            .check_scope(
                resource,
                cluster_scoped,
                self.context.meta.access.namespace(),
            )
            .map_err(|breach| Refusal {
                transient: false,
                message: breach.to_string(),
            })
    }

    /// Who holds the name `resource` would take, when its labels found
    /// no object of this target's there.
    pub(super) async fn claim(&self, resource: &Resource) -> Result<Claim, Refusal> {
        let found = self
            .with_retries(|target| async move { target.get(resource).await })
            .await
            .map_err(|error| Refusal {
                transient: error.is_transient(),
                message: error.to_string(),
            })?;
        let Some(object) = found else {
            return Ok(Claim::Free);
        };
        let label = owner::owner_label(&self.key);
        let holder = owner::holder(&object, &self.key, &label);
        let object = Resource::from_manifest(object).map_err(|error| Refusal {
            transient: false,
            message: format!("the cluster's copy is not an object: {error}"),
        })?;
        match holder {
            Holder::Us => Ok(Claim::Ours(object)),
            Holder::Another(other) => Err(Refusal {
                transient: false,
                message: self.owned_elsewhere(resource, other.as_deref()),
            }),
            Holder::Nobody if self.unconfined() && owner::forced(&resource.manifest) => {
                Ok(Claim::Adopt(object))
            }
            Holder::Nobody if self.unconfined() => Err(Refusal {
                transient: false,
                message: format!(
                    "{} {} is on the cluster already and was not made by wasmco: it is not taken \
                     over. The annotation {FORCE_ANNOTATION}: \"true\" on the resource adopts it; \
                     a terminate then leaves it on the cluster, without wasmco's labels",
                    resource.key.kind, resource.key.name
                ),
            }),
            Holder::Nobody => Err(Refusal {
                transient: false,
                message: format!(
                    "{} {} is on the cluster already and was not made by wasmco: a project's \
                     deployment does not take over what others made",
                    resource.key.kind, resource.key.name
                ),
            }),
        }
    }

    /// Whether this context was built with the admin's rights (not held
    /// to a project's tenancy rules): only such a context adopts objects
    /// made outside wasmco, or trusts an adopted mark it finds (which
    /// keeps an object on the cluster after its terminate).
    pub(super) fn unconfined(&self) -> bool {
        self.context.meta.confinement.is_none()
    }

    /// Whether `live` carries an adoption this context honours.
    pub(super) fn adopted(&self, live: &Value) -> bool {
        self.unconfined() && owner::adopted(live)
    }

    /// Why `resource` is not taken from the deployment `other` (its key,
    /// when the object says): named only to its own project.
    pub(super) fn owned_elsewhere(&self, resource: &Resource, other: Option<&str>) -> String {
        let kind_name = format!("{} {}", resource.key.kind, resource.key.name);
        match other.filter(|other| owner::project_of(other) == owner::project_of(&self.key)) {
            Some(other) => format!(
                "{kind_name} is owned by deployment {other} of this project; it is not taken over"
            ),
            None => format!("{kind_name} is owned by another deployment; it is not taken over"),
        }
    }

    /// Why an apply of a new object conflicted: someone made it since it
    /// was looked at (another deployment, or someone else).
    pub(super) async fn conflict(&self, resource: &Resource, error: SyncError) -> String {
        let object = match self.target().await {
            Ok(target) => target.get(resource).await.ok().flatten(),
            Err(_) => None,
        };
        let label = owner::owner_label(&self.key);
        match object.map(|o| owner::holder(&o, &self.key, &label)) {
            Some(Holder::Another(other)) => self.owned_elsewhere(resource, other.as_deref()),
            _ => format!(
                "{error}; the annotation {FORCE_ANNOTATION}: \"true\" on the resource takes these fields over"
            ),
        }
    }
}

/// Who holds the name a new resource would take.
pub(super) enum Claim {
    /// Nothing is there.
    Free,
    /// This target's object, which its labels did not find (relabelled).
    Ours(Resource),
    /// An object nobody in wasmco owns, which the resource asks to adopt.
    Adopt(Resource),
}
