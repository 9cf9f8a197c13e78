//! The states a deployment goes through (EMCO's), the actions on each kind
//! of deployment, and one transition table per kind: `state.after(action)`
//! is the only place an action is allowed or refused.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A deployment's states (a DIG's, a logical cloud's, a cluster's network
/// set's, a caCert stage's), as EMCO names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum DeployState {
    /// Defined, not yet approved.
    Created,
    /// Approved for instantiation.
    Approved,
    /// Deployed (revision 1 or a re-instantiation).
    Instantiated,
    /// Deployed again from changed inputs, or rolled back.
    Updated,
    /// Marked for removal from the clusters.
    Terminated,
    /// Deployed, with rsync told to stop working on it (a cluster that
    /// never answers, say); terminate is what follows.
    InstantiateStopped,
    /// Terminated, with rsync told to stop removing; instantiate may follow.
    TerminateStopped,
}

impl DeployState {
    /// Every state, in the order a deployment meets them.
    pub const ALL: [DeployState; 7] = [
        DeployState::Created,
        DeployState::Approved,
        DeployState::Instantiated,
        DeployState::Updated,
        DeployState::Terminated,
        DeployState::InstantiateStopped,
        DeployState::TerminateStopped,
    ];

    /// The state's name, as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            DeployState::Created => "Created",
            DeployState::Approved => "Approved",
            DeployState::Instantiated => "Instantiated",
            DeployState::Updated => "Updated",
            DeployState::Terminated => "Terminated",
            DeployState::InstantiateStopped => "InstantiateStopped",
            DeployState::TerminateStopped => "TerminateStopped",
        }
    }

    /// Whether the deployment's objects are meant to be on the clusters.
    pub fn is_deployed(self) -> bool {
        matches!(self, DeployState::Instantiated | DeployState::Updated)
    }

    /// The state `action` leads to from this one, or why it may not.
    pub fn after<A: Lifecycle>(self, action: A) -> Result<DeployState, Refused> {
        action.next(self).ok_or_else(|| Refused::new(action, self))
    }
}

impl fmt::Display for DeployState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of a DIG's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateAction {
    /// The state entered.
    pub state: DeployState,
    /// When, RFC 3339.
    pub time: String,
    /// The context revision current after the action (0: none yet).
    pub revision: u64,
    /// Why, when wasmco acted by itself (a failover's move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An action on one kind of deployment: its transition table.
pub trait Lifecycle: Copy {
    /// How an error names the action ("instantiate", "roll back").
    fn verb(self) -> &'static str;

    /// The state the action leads to from `from`, or `None` where it is
    /// not allowed.
    fn next(self, from: DeployState) -> Option<DeployState>;
}

/// An action refused in a state: what it is allowed from instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {verb}: it is {state}, and only {} can become {next}", one_of(.allowed))]
pub struct Refused {
    /// The action's verb.
    pub verb: &'static str,
    /// The state it was asked in.
    pub state: DeployState,
    /// The states it is allowed from.
    pub allowed: Vec<DeployState>,
    /// Where it leads from the first of those.
    pub next: DeployState,
}

impl Refused {
    fn new<A: Lifecycle>(action: A, state: DeployState) -> Self {
        let allowed: Vec<DeployState> = DeployState::ALL
            .into_iter()
            .filter(|from| action.next(*from).is_some())
            .collect();
        let next = allowed
            .first()
            .and_then(|from| action.next(*from))
            .unwrap_or(state);
        Refused {
            verb: action.verb(),
            state,
            allowed,
            next,
        }
    }
}

/// "A", "A or B", "A, B or C".
pub fn one_of(states: &[DeployState]) -> String {
    match states {
        [] => "none".to_owned(),
        [only] => only.name().to_owned(),
        [rest @ .., last] => {
            let rest: Vec<&str> = rest.iter().map(|s| s.name()).collect();
            format!("{} or {last}", rest.join(", "))
        }
    }
}

/// The rows every kind of deployment shares.
mod rows {
    use super::DeployState::{self, *};

    /// A first deployment, or one after a terminate.
    pub fn deploy_from(fresh: DeployState, from: DeployState) -> Option<DeployState> {
        (from == fresh || matches!(from, Terminated | TerminateStopped)).then_some(Instantiated)
    }

    /// Deployed again, as the inputs are now.
    pub fn redeploy(from: DeployState) -> Option<DeployState> {
        from.is_deployed().then_some(Updated)
    }

    /// Marked for removal.
    pub fn terminate(from: DeployState) -> Option<DeployState> {
        matches!(from, Instantiated | Updated | InstantiateStopped).then_some(Terminated)
    }

    /// rsync told to stop what it does.
    pub fn stop(from: DeployState) -> Option<DeployState> {
        match from {
            Instantiated | Updated => Some(InstantiateStopped),
            Terminated => Some(TerminateStopped),
            _ => None,
        }
    }
}

/// Declares an action enum with its routes (`POST …/{route}`) and `ALL`.
macro_rules! actions {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $route:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every action, in the order the API documents them.
            pub const ALL: [$name; [$($route),+].len()] = [$($name::$variant,)+];

            /// Its route segment, relative to what it acts on.
            pub fn route(self) -> &'static str {
                match self {
                    $($name::$variant => $route,)+
                }
            }

            /// The action a route segment names.
            pub fn from_route(route: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|action| action.route() == route)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.route())
            }
        }
    };
}

actions! {
    /// An action on a deployment intent group.
    DigAction {
        /// Created -> Approved.
        Approve => "approve",
        /// Approved or Terminated -> Instantiated.
        Instantiate => "instantiate",
        /// Instantiated or Updated -> Updated, from the DIG's current inputs.
        Update => "update",
        /// Instantiated or Updated -> Updated, with an earlier revision current.
        Rollback => "rollback",
        /// Instantiated or Updated -> Terminated.
        Terminate => "terminate",
        /// rsync stops: Instantiated or Updated -> InstantiateStopped,
        /// Terminated -> TerminateStopped.
        Stop => "stop",
        /// EMCO's move of a deployed DIG to another version's (Approved)
        /// DIG: the source's transition.
        Migrate => "migrate",
    }
}

impl Lifecycle for DigAction {
    fn verb(self) -> &'static str {
        match self {
            DigAction::Rollback => "roll back",
            other => other.route(),
        }
    }

    fn next(self, from: DeployState) -> Option<DeployState> {
        match self {
            DigAction::Approve => (from == DeployState::Created).then_some(DeployState::Approved),
            DigAction::Instantiate => rows::deploy_from(DeployState::Approved, from),
            DigAction::Update | DigAction::Rollback => rows::redeploy(from),
            DigAction::Terminate => rows::terminate(from),
            DigAction::Stop => rows::stop(from),
            DigAction::Migrate => from.is_deployed().then_some(DeployState::Terminated),
        }
    }
}

/// The DIG a migrate moves to: it must be Approved, and is instantiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrateTo;

impl Lifecycle for MigrateTo {
    fn verb(self) -> &'static str {
        "migrate to"
    }

    fn next(self, from: DeployState) -> Option<DeployState> {
        (from == DeployState::Approved).then_some(DeployState::Instantiated)
    }
}

actions! {
    /// An action on a logical cloud.
    CloudAction {
        /// Issue the user's certificates and create what the cloud needs.
        Instantiate => "instantiate",
        /// Remove what instantiate created.
        Terminate => "terminate",
        /// Make the cloud what its references, permissions and quotas are now.
        Update => "update",
        /// Stop rsync's work on it.
        Stop => "stop",
    }
}

impl Lifecycle for CloudAction {
    fn verb(self) -> &'static str {
        self.route()
    }

    fn next(self, from: DeployState) -> Option<DeployState> {
        match self {
            CloudAction::Instantiate => rows::deploy_from(DeployState::Created, from),
            CloudAction::Update => rows::redeploy(from),
            CloudAction::Terminate => rows::terminate(from),
            CloudAction::Stop => rows::stop(from),
        }
    }
}

actions! {
    /// An action on a cluster's network intents (EMCO's ncm).
    NetworkAction {
        /// Hand the networks to rsync (again, as they are now, once applied).
        Apply => "apply",
        /// Remove them from the cluster.
        Terminate => "terminate",
        /// Stop rsync's work on them.
        Stop => "stop",
    }
}

impl Lifecycle for NetworkAction {
    fn verb(self) -> &'static str {
        self.route()
    }

    fn next(self, from: DeployState) -> Option<DeployState> {
        match self {
            NetworkAction::Apply => {
                rows::redeploy(from).or_else(|| rows::deploy_from(DeployState::Created, from))
            }
            NetworkAction::Terminate => rows::terminate(from),
            NetworkAction::Stop => rows::stop(from),
        }
    }
}

actions! {
    /// An action on a caCert's enrollment or distribution.
    CertAction {
        /// Enrollment: sign; distribution: put the CAs on the clusters.
        Instantiate => "instantiate",
        /// Undo it.
        Terminate => "terminate",
        /// Do it again as the caCert and its groups are now.
        Update => "update",
    }
}

impl Lifecycle for CertAction {
    fn verb(self) -> &'static str {
        self.route()
    }

    fn next(self, from: DeployState) -> Option<DeployState> {
        match self {
            CertAction::Instantiate => rows::deploy_from(DeployState::Created, from),
            CertAction::Update => rows::redeploy(from),
            CertAction::Terminate => rows::terminate(from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DeployState::*;
    use super::*;

    fn allowed<A: Lifecycle>(action: A) -> Vec<(DeployState, DeployState)> {
        DeployState::ALL
            .into_iter()
            .filter_map(|from| Some((from, from.after(action).ok()?)))
            .collect()
    }

    #[test]
    fn a_dig_goes_through_emcos_states() {
        assert_eq!(allowed(DigAction::Approve), [(Created, Approved)]);
        assert_eq!(
            allowed(DigAction::Instantiate),
            [
                (Approved, Instantiated),
                (Terminated, Instantiated),
                (TerminateStopped, Instantiated)
            ]
        );
        for action in [DigAction::Update, DigAction::Rollback] {
            assert_eq!(
                allowed(action),
                [(Instantiated, Updated), (Updated, Updated)]
            );
        }
        assert_eq!(
            allowed(DigAction::Terminate),
            [
                (Instantiated, Terminated),
                (Updated, Terminated),
                (InstantiateStopped, Terminated)
            ]
        );
        assert_eq!(
            allowed(DigAction::Stop),
            [
                (Instantiated, InstantiateStopped),
                (Updated, InstantiateStopped),
                (Terminated, TerminateStopped)
            ]
        );
        assert_eq!(
            allowed(DigAction::Migrate),
            [(Instantiated, Terminated), (Updated, Terminated)]
        );
        assert_eq!(allowed(MigrateTo), [(Approved, Instantiated)]);
    }

    #[test]
    fn clouds_networks_and_certs_start_from_created() {
        assert_eq!(
            allowed(CloudAction::Instantiate),
            [
                (Created, Instantiated),
                (Terminated, Instantiated),
                (TerminateStopped, Instantiated)
            ]
        );
        assert_eq!(
            allowed(CertAction::Instantiate),
            allowed(CloudAction::Instantiate)
        );
        assert_eq!(
            allowed(NetworkAction::Apply),
            [
                (Created, Instantiated),
                (Instantiated, Updated),
                (Updated, Updated),
                (Terminated, Instantiated),
                (TerminateStopped, Instantiated)
            ]
        );
        assert!(Approved.after(NetworkAction::Apply).is_err());
    }

    #[test]
    fn a_refusal_says_what_the_action_is_allowed_from() {
        let refused = Created.after(DigAction::Instantiate).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "cannot instantiate: it is Created, and only Approved, Terminated or TerminateStopped can become Instantiated"
        );
        let refused = Created.after(DigAction::Stop).unwrap_err();
        assert_eq!(refused.next, InstantiateStopped);
        assert_eq!(Updated.after(DigAction::Rollback), Ok(Updated));
    }

    #[test]
    fn every_route_names_one_action() {
        for action in DigAction::ALL {
            assert_eq!(DigAction::from_route(action.route()), Some(action));
        }
        assert_eq!(DigAction::from_route("approved"), None);
        assert_eq!(NetworkAction::ALL.len(), 3);
    }
}
