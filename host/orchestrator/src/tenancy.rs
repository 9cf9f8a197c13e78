//! A project's deployments held to its tenancy policy: every computed
//! context (after every controller ran, so a patch cannot slip past) and
//! every logical cloud a project's member instantiates is checked before
//! it is stored. The admin's own actions are not confined.

use std::collections::{BTreeMap, BTreeSet};

use wasmco_core::Kind;
use wasmco_core::specs::{LogicalCloudSpec, UserPermissionSpec};
use wasmco_core::tenancy::{Confinement, TenancyPolicySpec, is_system_namespace, is_system_user};
use wasmco_store::appcontext::{Access, StoredApp};
use wasmco_store::db::ResourceId;

use super::deploy::{DEPLOYED, Orchestrator};
use super::dig::OrchestratorError;
use crate::logical_cloud::LogicalCloudRef;

/// Who asks for an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// The admin token's holder: full power on the clusters.
    Admin,
    /// A project's member (a scoped token): held to the project's
    /// tenancy policy.
    Tenant,
}

/// Per cluster provider, the rules a context's objects were held to.
pub(crate) type Confinements = BTreeMap<String, Confinement>;

/// User names kubeadm's clusters bind to powers of their own (beyond the
/// `system:` names): a logical cloud's user may not take them.
const RESERVED_USERS: &[&str] = &["kube-apiserver-kubelet-client", "kubernetes-admin"];

impl Orchestrator {
    /// The rules for `project`'s objects on `provider`'s clusters: the
    /// project's policies, else the provider's, else the defaults; with
    /// `own` (its logical clouds' namespaces).
    fn confinement(
        &self,
        project: &str,
        provider: &str,
        own: &[String],
    ) -> Result<Confinement, OrchestratorError> {
        let mut policies = self.policies(Kind::TenancyPolicy, project)?;
        if policies.is_empty() {
            policies = self.policies(Kind::ProviderTenancyPolicy, provider)?;
        }
        Ok(Confinement::new(&policies, own.iter().cloned()))
    }

    fn policies(
        &self,
        kind: Kind,
        parent: &str,
    ) -> Result<Vec<TenancyPolicySpec>, OrchestratorError> {
        Ok(self
            .db
            .list_specs::<TenancyPolicySpec>(kind, &[parent.to_owned()])?
            .into_iter()
            .map(|(_, policy)| policy)
            .collect())
    }

    /// The namespaces of `project`'s deployed standard logical clouds.
    fn own_namespaces(&self, project: &str) -> Result<Vec<String>, OrchestratorError> {
        let mut namespaces = Vec::new();
        for (id, spec) in self
            .db
            .list_specs::<LogicalCloudSpec>(Kind::LogicalCloud, &[project.to_owned()])?
        {
            let lc = LogicalCloudRef::from_id(&id);
            if !spec.is_admin() && DEPLOYED.contains(&self.contexts.state(&lc.key())?.state) {
                namespaces.push(spec.namespace);
            }
        }
        Ok(namespaces)
    }

    /// Checks every object `apps` put on every cluster (hooks too) against
    /// `project`'s rules there; the rules, per provider, to store with it.
    pub(crate) fn confine(
        &self,
        project: &str,
        access: &Access,
        apps: &[StoredApp],
    ) -> Result<Confinements, OrchestratorError> {
        let own = self.own_namespaces(project)?;
        let mut rules = Confinements::new();
        let namespace = access.namespace();
        for app in apps {
            let providers: BTreeSet<&str> = app
                .placement
                .iter()
                .map(|p| p.cluster.provider.as_str())
                .collect();
            for provider in providers {
                if !rules.contains_key(provider) {
                    rules.insert(
                        provider.to_owned(),
                        self.confinement(project, provider, &own)?,
                    );
                }
                let confined = &rules[provider];
                let everywhere = app.base.iter().chain(app.hooks.iter().map(|h| &h.resource));
                for resource in everywhere {
                    confined.check(resource, namespace).map_err(|breach| {
                        OrchestratorError::Tenancy(format!(
                            "app {} on provider {provider}'s clusters: {breach}",
                            app.name
                        ))
                    })?;
                }
            }
            for (cluster, diff) in &app.diffs {
                let Some(confined) = rules.get(&cluster.provider) else {
                    continue;
                };
                for resource in diff.iter().filter_map(|(_, r)| r.as_ref()) {
                    confined.check(resource, namespace).map_err(|breach| {
                        OrchestratorError::Tenancy(format!(
                            "app {} on cluster {cluster}: {breach}",
                            app.name
                        ))
                    })?;
                }
            }
        }
        Ok(rules)
    }

    /// What a project's member may not make a logical cloud do: take a
    /// namespace of Kubernetes' own or one another project's cloud uses,
    /// act as Kubernetes or as another project's user, or grant its user
    /// more than its namespace without the admin's allowance.
    pub(crate) fn check_cloud(
        &self,
        lc: &LogicalCloudRef,
        spec: &LogicalCloudSpec,
        permissions: &[UserPermissionSpec],
    ) -> Result<(), OrchestratorError> {
        if spec.is_admin() {
            // It makes nothing; a DIG in it is checked as any other.
            return Ok(());
        }
        let refused = |rule: String| {
            OrchestratorError::Tenancy(format!(
                "logical cloud {}/{} is refused by the tenancy policy: {rule}",
                lc.project, lc.name
            ))
        };
        let policies = self.policies(Kind::TenancyPolicy, &lc.project)?;
        let allowed = Confinement::new(&policies, []);
        let namespace = &spec.namespace;
        if is_system_namespace(namespace) && !allowed.allows_namespace(namespace) {
            return Err(refused(format!(
                "namespace {namespace} is Kubernetes' own; a project's cloud takes it only where \
                 its tenancy policy allows (spec.namespaces)"
            )));
        }
        let user = spec.user_name();
        if is_system_user(user) || RESERVED_USERS.contains(&user) {
            return Err(refused(format!(
                "user {user} would stand for Kubernetes itself; choose a name of the project's own"
            )));
        }
        for (other, other_spec) in self.other_projects_clouds(&lc.project)? {
            if other_spec.is_admin() {
                continue;
            }
            if &other_spec.namespace == namespace
                && DEPLOYED.contains(&self.contexts.state(&other.key())?.state)
            {
                return Err(refused(format!(
                    "namespace {namespace} is another project's logical cloud's"
                )));
            }
            if other_spec.user_name() == user {
                return Err(refused(format!(
                    "user {user} is another project's logical cloud's user"
                )));
            }
        }
        if !allowed.cluster_wide_permissions {
            for permission in permissions {
                match permission.namespace.as_deref() {
                    None => {}
                    Some(own) if own == namespace => {}
                    Some("") => {
                        return Err(refused(
                            "a permission for the whole cluster (namespace \"\") needs the admin's \
                             allowance (spec.clusterWidePermissions of a tenancy policy)"
                                .into(),
                        ));
                    }
                    Some(other) => {
                        return Err(refused(format!(
                            "a permission in namespace {other}, beyond the cloud's own, needs the \
                             admin's allowance (spec.clusterWidePermissions of a tenancy policy)"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Every logical cloud of every project but `project`.
    fn other_projects_clouds(
        &self,
        project: &str,
    ) -> Result<Vec<(LogicalCloudRef, LogicalCloudSpec)>, OrchestratorError> {
        let mut clouds = Vec::new();
        for (other, _) in self.db.list(Kind::Project, &[])? {
            if other.path.first().map(String::as_str) == Some(project) {
                continue;
            }
            for (id, spec) in self
                .db
                .list_specs::<LogicalCloudSpec>(Kind::LogicalCloud, &other.path)?
            {
                clouds.push((LogicalCloudRef::from_id(&id), spec));
            }
        }
        Ok(clouds)
    }
}

impl LogicalCloudRef {
    /// The cloud at a logical cloud resource's id.
    pub(crate) fn from_id(id: &ResourceId) -> Self {
        let part = |i: usize| id.path.get(i).cloned().unwrap_or_default();
        LogicalCloudRef {
            project: part(0),
            name: part(1),
        }
    }
}
