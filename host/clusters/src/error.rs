//! Why a deploy stopped.

use wasmco_core::FieldError;
use wasmco_nodes::NodeError;
use wasmco_pki::PkiError;

use wasmco_core::wire::Phase;

/// A deploy that did not finish.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The deploy file asks for something wasmco does not do (or Eggo
    /// would refuse); nothing was touched.
    #[error("the deploy file is refused: {}", list(.0))]
    Refused(Vec<FieldError>),
    /// A machine failed a step. The message names the machine and step.
    #[error("{phase}: {error}")]
    Node {
        /// The phase it failed in.
        phase: Phase,
        /// What happened on the machine.
        error: NodeError,
    },
    /// The package archive the file names could not be read here.
    #[error("install.package-source.srcpath.{arch}: {error}")]
    Archive {
        /// The architecture it is the archive of.
        arch: String,
        /// Why it could not be read.
        error: NodeError,
    },
    /// An addon could not be read or made into objects.
    #[error("addons: {addon}: {reason}")]
    Addon {
        /// The package (`file/NAME`) or addon (`coredns`).
        addon: String,
        /// Why.
        reason: String,
    },
    /// The cluster's certificates could not be made.
    #[error("the cluster's certificates: {0}")]
    Pki(#[from] PkiError),
}

impl DeployError {
    /// Whether running the deploy again later may get further (a machine
    /// was unreachable or its session broke).
    pub fn is_transient(&self) -> bool {
        matches!(self, DeployError::Node { error, .. } if error.is_transient())
    }
}

fn list(problems: &[FieldError]) -> String {
    problems
        .iter()
        .map(|problem| format!("{}: {}", problem.field, problem.reason))
        .collect::<Vec<_>>()
        .join("; ")
}
