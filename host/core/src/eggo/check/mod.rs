//! What Eggo refuses in a deploy file it could parse. Eggo's checker
//! (`cmd/checker.go`, `RunChecker`) stops at the first problem; this one
//! lists them all, each with the field's path. Rules Eggo enforces later
//! in a deploy, or that only its documentation states, are marked where
//! they are made.

mod cluster;
mod nodes;
mod packages;
mod problems;

pub use cluster::KNOWN_EXTRA_ARGS_NAMES;

use crate::document::FieldError;

use super::model::DeployConfig;

impl DeployConfig {
    /// Every problem Eggo would refuse the file for, in file order; empty
    /// when it would deploy it. Whether the files it names exist on the
    /// deploying machine is not checked here (Eggo does, at deploy time).
    pub fn check(&self) -> Vec<FieldError> {
        let mut problems = problems::Problems::default();
        cluster::check_identity(self, &mut problems);
        nodes::check_nodes(self, &mut problems);
        cluster::check_cluster(self, &mut problems);
        packages::check_install(self, &mut problems);
        problems.into_vec()
    }
}
