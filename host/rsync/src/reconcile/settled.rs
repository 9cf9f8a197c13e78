//! What a reconcile, or one part of it, leaves to do.

/// What a finished reconcile leaves to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Settled {
    /// Nothing until the next nudge (terminated, stopped, never deployed).
    Idle,
    /// The clusters match; look again after the resync interval.
    Resync,
    /// Something was not done (a cluster did not answer, an object was
    /// not deleted in time): try again with backoff.
    Incomplete,
}

/// What syncing one app on one cluster did.
pub(crate) struct Outcome {
    pub(crate) settled: Settled,
    pub(crate) applied: usize,
}

/// Why a reconcile runs, and so how closely it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Look {
    /// Something changed, failed or was asked for: every object is looked at.
    #[default]
    Full,
    /// Only the resync's schedule came round: what the watches vouch
    /// stayed as it was is left alone.
    Resync,
}
