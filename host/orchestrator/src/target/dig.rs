//! A deployment intent group, by its path.

use wasmco_core::Kind;
use wasmco_store::db::ResourceId;

/// A deployment intent group, by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigRef {
    /// Project.
    pub project: String,
    /// Composite app.
    pub composite_app: String,
    /// Composite app version.
    pub version: String,
    /// The DIG's name.
    pub name: String,
}

impl DigRef {
    /// The DIG a context of it was built for.
    pub(crate) fn of_context(meta: &wasmco_store::appcontext::ContextMeta) -> Self {
        DigRef {
            project: meta.project.clone(),
            composite_app: meta.composite_app.clone(),
            version: meta.composite_app_version.clone(),
            name: meta.deployment_intent_group.clone(),
        }
    }

    /// The DIG as a database resource.
    pub fn id(&self) -> ResourceId {
        ResourceId::new(
            Kind::DeploymentIntentGroup,
            vec![
                self.project.clone(),
                self.composite_app.clone(),
                self.version.clone(),
                self.name.clone(),
            ],
        )
    }

    /// The DIG at a DIG resource's path (project, composite app, version, name).
    pub fn from_path(path: &[String]) -> Self {
        let part = |i: usize| path.get(i).cloned().unwrap_or_default();
        DigRef {
            project: part(0),
            composite_app: part(1),
            version: part(2),
            name: part(3),
        }
    }

    /// The path of its composite app version, which its apps live under.
    pub(crate) fn version_path(&self) -> Vec<String> {
        vec![
            self.project.clone(),
            self.composite_app.clone(),
            self.version.clone(),
        ]
    }

    /// The key of its contexts and state.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.project, self.composite_app, self.version, self.name
        )
    }

    /// For messages: "deployment intent group p/ca/v/d".
    pub fn describe(&self) -> String {
        format!("deployment intent group {}", self.key())
    }
}
