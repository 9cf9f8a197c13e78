//! A project's deployments held to its tenancy policy: every computed
//! context (after every controller ran, so a patch cannot slip past) and
//! every logical cloud a project's member instantiates is checked before
//! it is stored. The admin's own actions are not confined.

use std::collections::{BTreeMap, BTreeSet};

use wasmco_core::Kind;
use wasmco_core::specs::{LogicalCloudSpec, UserPermissionSpec};
use wasmco_core::tenancy::{
    Confinement, PodSecurity, TenancyPolicySpec, is_system_namespace, is_system_user,
};
use wasmco_store::appcontext::{Access, ContextStore, StoredApp};
use wasmco_store::db::ResourceDb;

use crate::error::OrchestratorError;
use crate::shared::Shared;
use crate::target::{CLOUD_APP, LogicalCloudRef};

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

/// Where the clusters' namespaces that logical clouds make are held.
const NAMESPACES: &str = "namespaces";

/// User names kubeadm's clusters bind to powers of their own (beyond the
/// `system:` names): a logical cloud's user may not take them.
const RESERVED_USERS: &[&str] = &["kube-apiserver-kubelet-client", "kubernetes-admin"];

/// A project's tenancy policies, as the store holds them now, and the
/// namespaces its logical clouds hold.
pub(crate) struct Tenancy<'a> {
    db: &'a ResourceDb,
    contexts: &'a ContextStore,
}

impl<'a> Tenancy<'a> {
    /// The policies and namespaces as `shared` holds them.
    pub(crate) fn of(shared: &'a Shared) -> Self {
        Tenancy {
            db: &shared.db,
            contexts: &shared.contexts,
        }
    }

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

    /// The Pod Security level `project`'s clouds enforce on clusters of
    /// `providers`: the strictest their rules name.
    pub(crate) fn pod_security(
        &self,
        project: &str,
        providers: &BTreeSet<&str>,
    ) -> Result<PodSecurity, OrchestratorError> {
        let mut strictest = None;
        for provider in providers {
            let level = self.confinement(project, provider, &[])?.pod_security;
            strictest = Some(strictest.map_or(level, |s: PodSecurity| s.min(level)));
        }
        Ok(strictest.unwrap_or_default())
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

    /// The namespaces of `project`'s deployed standard logical clouds, as
    /// their contexts made them.
    fn own_namespaces(&self, project: &str) -> Result<Vec<String>, OrchestratorError> {
        let mut namespaces = Vec::new();
        for (id, _) in self.db.list(Kind::LogicalCloud, &[project.to_owned()])? {
            let lc = LogicalCloudRef::from_id(&id);
            if self.contexts.state(&lc.key())?.state.is_deployed()
                && let Some(namespace) = self.cloud_namespace(&lc)?
            {
                namespaces.push(namespace);
            }
        }
        Ok(namespaces)
    }

    /// The namespace a standard cloud's current context makes, as it was
    /// checked when the context was built; `None` for an admin cloud or
    /// one never instantiated.
    pub(crate) fn cloud_namespace(
        &self,
        lc: &LogicalCloudRef,
    ) -> Result<Option<String>, OrchestratorError> {
        let state = self.contexts.state(&lc.key())?;
        if state.revision == 0 {
            return Ok(None);
        }
        let context = self.contexts.read(&lc.key(), state.revision)?;
        Ok(context
            .apps
            .iter()
            .filter(|app| app.name == CLOUD_APP)
            .flat_map(|app| &app.base)
            .find(|r| r.api_version == "v1" && r.key.kind == "Namespace")
            .map(|r| r.key.name.clone()))
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
                if access.cloud_user.is_none() && !confined.cluster_credentials {
                    return Err(OrchestratorError::Tenancy(format!(
                        "app {} on provider {provider}'s clusters: a project's deployment runs as \
                         a standard logical cloud's user, whose rights the clusters enforce; name \
                         one in spec.logicalCloud (the clusters' own credentials need the admin's \
                         allowance: spec.clusterCredentials of a tenancy policy)",
                        app.name
                    )));
                }
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
    /// namespace of Kubernetes' own or one a tenancy policy grants to
    /// others, act as a user not named for the project, or grant its user
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
        if !allowed.allows_namespace(namespace) && self.granted_to_others(&lc.project, namespace)? {
            return Err(refused(format!(
                "namespace {namespace} is not available to this project"
            )));
        }
        let user = spec.user_name();
        let prefix = format!("{}:", lc.project);
        if !user.starts_with(&prefix) || user.len() == prefix.len() {
            return Err(refused(format!(
                "user {user}: a project's cloud names its user {prefix}<name>, so that its \
                 certificate can never stand for a user the clusters know otherwise (set \
                 spec.user.userName to {prefix}{user}, say)"
            )));
        }
        if is_system_user(user) || RESERVED_USERS.contains(&user) {
            return Err(refused(format!(
                "user {user} would stand for Kubernetes itself; choose a name of the project's own"
            )));
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

    /// Whether a tenancy policy of another project, or of a cluster
    /// provider (for every project), grants `namespace`.
    fn granted_to_others(&self, project: &str, namespace: &str) -> Result<bool, OrchestratorError> {
        let mut others = Vec::new();
        for (other, _) in self.db.list(Kind::Project, &[])? {
            if let Some(name) = other.path.first().filter(|name| *name != project) {
                others.extend(self.policies(Kind::TenancyPolicy, name)?);
            }
        }
        for (provider, _) in self.db.list(Kind::ClusterProvider, &[])? {
            if let Some(name) = provider.path.first() {
                others.extend(self.policies(Kind::ProviderTenancyPolicy, name)?);
            }
        }
        Ok(Confinement::new(&others, []).allows_namespace(namespace))
    }

    /// Holds `namespace` for `lc`'s project: no other project's cloud
    /// makes it while one of this project's clouds names it.
    pub(crate) fn hold_namespace(
        &self,
        lc: &LogicalCloudRef,
        namespace: &str,
    ) -> Result<(), OrchestratorError> {
        let taken = || {
            OrchestratorError::Tenancy(format!(
                "logical cloud {}/{} is refused: namespace {namespace} is another project's \
                 logical cloud's; choose another",
                lc.project, lc.name
            ))
        };
        // Clouds deployed before namespaces were held hold theirs too.
        if self.deployed_elsewhere(&lc.project, namespace)? {
            return Err(taken());
        }
        match self.contexts.hold(NAMESPACES, namespace, &lc.project)? {
            None => Ok(()),
            Some(_) => Err(taken()),
        }
    }

    /// Whether another project's deployed cloud makes `namespace`.
    fn deployed_elsewhere(
        &self,
        project: &str,
        namespace: &str,
    ) -> Result<bool, OrchestratorError> {
        for (other, _) in self.db.list(Kind::Project, &[])? {
            if other.path.first().is_none_or(|name| name == project) {
                continue;
            }
            for (id, _) in self.db.list(Kind::LogicalCloud, &other.path)? {
                let cloud = LogicalCloudRef::from_id(&id);
                if self.contexts.state(&cloud.key())?.state.is_deployed()
                    && self.cloud_namespace(&cloud)?.as_deref() == Some(namespace)
                {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Gives back the namespaces `project` holds that none of its clouds
    /// but `leaving` names (in its spec or its current context).
    pub(crate) fn let_go_namespaces(
        &self,
        project: &str,
        leaving: &str,
    ) -> Result<(), OrchestratorError> {
        let mut named = BTreeSet::new();
        for (id, spec) in self
            .db
            .list_specs::<LogicalCloudSpec>(Kind::LogicalCloud, &[project.to_owned()])?
        {
            let lc = LogicalCloudRef::from_id(&id);
            if lc.name == leaving {
                continue;
            }
            named.insert(spec.namespace);
            named.extend(self.cloud_namespace(&lc)?);
        }
        for namespace in self.contexts.held_by(NAMESPACES, project)? {
            if !named.contains(&namespace) {
                self.contexts.let_go(NAMESPACES, &namespace, project)?;
            }
        }
        Ok(())
    }
}
