//! The mirror context: what each client cluster of a DIG gets, written as
//! a context of its own beside the DIG's, again only when what it holds
//! changes, and taken where the DIG goes (terminated, stopped).

use std::collections::{BTreeMap, BTreeSet};

use wasmco_core::ClusterRef;
use wasmco_core::resource::Resource;
use wasmco_core::wire::DigAction;
use wasmco_store::appcontext::{
    self as stored, ContextMeta, DeployState, DigState, ResourceStatus, StoredApp, StoredContext,
};

use super::objects::mirrored;
use super::serving::{Found, served};
use crate::error::OrchestratorError;
use crate::locks::TargetGuard;
use crate::shared::Shared;
use crate::status::{SyncedContext, TalliedContext, synced, tallied};
use crate::target::DigRef;
use crate::tenancy::Tenancy;

/// The app of the context it makes, as EMCO names it.
pub const MIRROR_APP: &str = "service-discovery";

/// The key of the context that makes `dig`'s services known: `_` starts
/// no composite app's name, so it is no DIG's or other context's key.
pub fn mirror_key(dig: &DigRef) -> String {
    format!(
        "{}/_service-discovery/{}/{}/{}",
        dig.project, dig.composite_app, dig.version, dig.name
    )
}

/// Where a DIG's mirror context goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    Terminate,
    Stop,
}

/// The mirror contexts of the DIGs, over the shared stores.
pub(crate) struct Mirrors<'a> {
    shared: &'a Shared,
}

impl<'a> Mirrors<'a> {
    /// The mirror contexts as `shared` holds them.
    pub(crate) fn of(shared: &'a Shared) -> Self {
        Mirrors { shared }
    }

    /// Makes the DIG's services known to their clients as its context
    /// now asks. The clusters are asked without the DIG's lock, which
    /// actions on it would otherwise wait for; the mirror context is
    /// written under it, and only when what it holds changes.
    pub(crate) fn mirror_services(&self, dig: &DigRef) -> Result<(), OrchestratorError> {
        let contexts = &self.shared.contexts;
        let key = dig.key();
        let state = contexts.state(&key)?;
        if !state.state.is_deployed() {
            return Ok(());
        }
        let context = contexts.read(&key, state.revision)?;
        if context.meta.service_mirrors.is_empty() {
            return Ok(());
        }
        let statuses = contexts.statuses(&key, state.revision)?;
        let mirror = mirror_key(dig);
        let mirror_state = contexts.state(&mirror)?;
        let previous = match mirror_state.state.is_deployed() {
            true => Some(contexts.read(&mirror, mirror_state.revision)?),
            false => None,
        };
        let (apps, note) = self.wanted(&context, &statuses, previous.as_ref());
        let holds = match &previous {
            Some(previous) => previous.apps == apps,
            None => apps[0].placement.is_empty(),
        };
        if holds && contexts.note(&mirror)? == note {
            return Ok(());
        }
        let written = match holds {
            true => None,
            false => Some(apps.as_slice()),
        };
        self.record(dig, &state, &context.meta, written, note)
    }

    /// What the client clusters should hold now, and why they do not hold
    /// more. A server that cannot be read for now leaves its clients what
    /// `previous` gave them.
    fn wanted(
        &self,
        context: &StoredContext,
        statuses: &BTreeMap<(String, ClusterRef, String), ResourceStatus>,
        previous: Option<&StoredContext>,
    ) -> ([StoredApp; 1], Option<String>) {
        let mut per_cluster: BTreeMap<ClusterRef, Vec<Resource>> = BTreeMap::new();
        let mut notes = Vec::new();
        let mut services = BTreeSet::new();
        for wanted in &context.meta.service_mirrors {
            let mut note = |why: String| notes.push(format!("{}: {why}", wanted.origin));
            if !services.insert(wanted.service.as_str()) {
                note(format!(
                    "Service {} is made known by an earlier inbound intent already",
                    wanted.service
                ));
                continue;
            }
            let servers: Vec<&ClusterRef> = placed(context, &wanted.server_app).collect();
            let mut clients = BTreeSet::new();
            for app in &wanted.client_apps {
                if !context.apps.iter().any(|a| &a.name == app) {
                    note(format!("client app {app} is not part of this deployment"));
                }
                clients.extend(placed(context, app).filter(|c| !servers.contains(c)));
            }
            let found = served(self.shared.sync.as_ref(), context, statuses, wanted)
                .and_then(|served| mirrored(&context.meta, &wanted.service, &served));
            let made: Vec<Resource> = match found {
                Found::Here(made) => made,
                Found::Waiting(why) => {
                    note(why);
                    // What its clients had stays until the server is back.
                    for cluster in clients {
                        let kept = previous
                            .iter()
                            .flat_map(|p| p.apps.iter())
                            .flat_map(|app| app.resources_on(cluster))
                            .filter(|r| r.key.name == wanted.service)
                            .cloned();
                        per_cluster.entry(cluster.clone()).or_default().extend(kept);
                    }
                    continue;
                }
                Found::Refused(why) => {
                    note(why);
                    continue;
                }
            };
            for cluster in clients {
                per_cluster
                    .entry(cluster.clone())
                    .or_default()
                    .extend(made.iter().cloned());
            }
        }
        per_cluster.retain(|_, objects| !objects.is_empty());
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        let apps = [StoredApp::spread(
            MIRROR_APP,
            per_cluster.into_iter().collect(),
        )];
        (apps, note)
    }

    /// Under the DIG's lock, and only while the DIG is still as it was
    /// when the pass began (`seen`): writes `apps` (when they changed) and
    /// keeps `note`, with why they could not be written if they could not.
    fn record(
        &self,
        dig: &DigRef,
        seen: &DigState,
        parent: &ContextMeta,
        apps: Option<&[StoredApp]>,
        note: Option<String>,
    ) -> Result<(), OrchestratorError> {
        let key = dig.key();
        let guard = self.shared.lock(&key)?;
        let now = self.shared.contexts.state(&key)?;
        if now.state != seen.state || now.revision != seen.revision {
            // An action came between: the reconcile it starts tells again.
            return Ok(());
        }
        let written = match apps {
            None => Ok(()),
            Some(apps) => self.write_mirror(dig, parent, apps, &guard),
        };
        let note = match (&written, note) {
            (Err(error), note) => Some(
                note.into_iter()
                    .chain([format!("the objects cannot be deployed: {error}")])
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            (Ok(()), note) => note,
        };
        self.shared
            .contexts
            .put_note(&mirror_key(dig), note.as_deref())?;
        if let Some(note) = &note {
            tracing::info!(dig = %key, %note, "services not (all) made known");
        }
        written
    }

    /// Writes `apps` as the mirror context's next revision: Instantiated
    /// the first time, Updated after. The caller holds the DIG's lock.
    fn write_mirror(
        &self,
        dig: &DigRef,
        parent: &ContextMeta,
        apps: &[StoredApp],
        guard: &TargetGuard,
    ) -> Result<(), OrchestratorError> {
        let key = mirror_key(dig);
        let mut state = self.shared.contexts.state(&key)?;
        let revision = state.latest + 1;
        let confinement = match parent.confinement {
            Some(_) => {
                Some(Tenancy::of(self.shared).confine(&dig.project, &parent.access, apps)?)
            }
            None => None,
        };
        let meta = ContextMeta {
            composite_app: MIRROR_APP.to_owned(),
            revision,
            created: stored::now(),
            app_order: vec![MIRROR_APP.to_owned()],
            dependencies: BTreeMap::new(),
            adopt_from: None,
            confinement,
            service_mirrors: Vec::new(),
            failover: None,
            rollout: None,
            ..parent.clone()
        };
        let next = match state.state.is_deployed() {
            true => DeployState::Updated,
            false => DeployState::Instantiated,
        };
        state.enter(next, revision);
        self.shared
            .contexts
            .write(&key, &meta, apps, &state, guard.fence())?;
        tracing::info!(dig = %dig.key(), revision, "services made known to their clients");
        self.shared.sync.changed(&key);
        Ok(())
    }

    /// Takes `dig`'s mirror context where the DIG went: terminated (or
    /// asking for nothing to be made known any more), or stopped. The
    /// caller holds the DIG's action lock.
    pub(crate) fn follow(
        &self,
        dig: &DigRef,
        follow: Follow,
        guard: &TargetGuard,
    ) -> Result<(), OrchestratorError> {
        let key = mirror_key(dig);
        let state = self.shared.contexts.state(&key)?;
        // The mirror follows where its table lets it, and stays otherwise.
        let action = match follow {
            Follow::Terminate => DigAction::Terminate,
            Follow::Stop => DigAction::Stop,
        };
        if state.state.after(action).is_ok() {
            self.shared
                .mark(action, &dig.describe(), &key, state, guard)?;
        }
        if follow == Follow::Terminate {
            self.shared.contexts.put_note(&key, None)?;
        }
        Ok(())
    }

    /// What the deployed mirror context of `dig` holds, and why it holds
    /// no more, for the DIG's status.
    pub(crate) fn status(
        &self,
        dig: &DigRef,
    ) -> Result<(Option<SyncedContext>, Option<String>), OrchestratorError> {
        let key = mirror_key(dig);
        let (state, synced) = synced(&self.shared.contexts, &key)?;
        let synced = synced.filter(|_| state.state.is_deployed());
        Ok((synced, self.shared.contexts.note(&key)?))
    }

    /// The deployed mirror context of `dig` with its cells' tallies.
    pub(crate) fn tallied(
        &self,
        dig: &DigRef,
        unreachable: &BTreeSet<ClusterRef>,
    ) -> Result<Option<TalliedContext>, OrchestratorError> {
        let (state, tallied) = tallied(&self.shared.contexts, &mirror_key(dig), unreachable)?;
        Ok(tallied.filter(|_| state.state.is_deployed()))
    }
}

/// The clusters `app` is placed on.
fn placed<'a>(context: &'a StoredContext, app: &str) -> impl Iterator<Item = &'a ClusterRef> {
    context
        .apps
        .iter()
        .filter(move |a| a.name == app)
        .flat_map(|a| a.placement.iter().map(|p| &p.cluster))
}
