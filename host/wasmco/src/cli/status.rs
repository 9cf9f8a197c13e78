//! `wasmco status DIG`: the DIG's state and every resource's, refreshed
//! until the last action has finished (everything Ready after an
//! instantiate or update, everything Deleted after a terminate).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use wasmco_core::ClusterRef;
use wasmco_core::wire::{
    DeployState, Deployed, DeploymentStatus, DriftKind, Readiness, ResourceEntry, RolloutPhase,
    RolloutProgress,
};

use super::client::ApiClient;
use super::error::CliError;

/// One look at a DIG.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Created, Approved, Instantiated, Updated or Terminated.
    pub state: DeployState,
    /// The context revision.
    pub revision: u64,
    /// Per app: `(cluster, resource, deployed, ready)`.
    pub apps: BTreeMap<String, Vec<ResourceRow>>,
    /// rsync is still on the last action (see [`DeploymentStatus::reconciling`]).
    pub reconciling: bool,
    /// What wasmco did by itself (a failover's moves), latest last:
    /// `(when, revision, why)`.
    pub moves: Vec<(String, u64, String)>,
    /// The current revision's progressive rollout, if it has one.
    pub rollout: Option<RolloutProgress>,
}

/// One resource on one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRow {
    /// `provider+cluster`.
    pub cluster: String,
    /// `Kind/name`.
    pub resource: String,
    /// Pending, Applied, Failed, Deleted or Released.
    pub deployed: Deployed,
    /// Ready or NotReady.
    pub ready: Readiness,
    /// Why it failed, or when it last drifted and was put back.
    pub note: String,
}

impl ResourceRow {
    /// Whether a terminate is done with it: deleted, or given back.
    fn gone(&self) -> bool {
        matches!(self.deployed, Deployed::Deleted | Deployed::Released)
    }
}

/// The NOTE column: the failure, else the last drift and its repair.
fn note(resource: &ResourceEntry) -> String {
    if let Some(message) = &resource.message {
        return message.clone();
    }
    let Some(drift) = &resource.drift else {
        return String::new();
    };
    let kind = match drift.kind {
        DriftKind::Changed => "Changed",
        DriftKind::Deleted => "Deleted",
    };
    let detected = &drift.detected;
    match &drift.repaired {
        Some(repaired) => format!("{kind} on the cluster at {detected}; repaired at {repaired}"),
        None => format!("{kind} on the cluster at {detected}; not repaired yet"),
    }
}

impl Snapshot {
    /// Reads the DIG's deployed and ready status.
    pub fn read(client: &ApiClient, dig: &str) -> Result<Snapshot, CliError> {
        let ready: DeploymentStatus = client.get_as(&format!("{dig}/status?status=ready"))?;
        let deployed: DeploymentStatus =
            client.get_as(&format!("{dig}/status?status=deployed&output=detail"))?;
        let mut apps: BTreeMap<String, Vec<ResourceRow>> = BTreeMap::new();
        let deployed_apps = deployed.apps.unwrap_or_default();
        for (ready_app, deployed_app) in ready
            .apps
            .unwrap_or_default()
            .into_iter()
            .zip(deployed_apps)
        {
            let rows = apps.entry(ready_app.name).or_default();
            for (ready_cluster, deployed_cluster) in
                ready_app.clusters.into_iter().zip(deployed_app.clusters)
            {
                let cluster =
                    ClusterRef::new(&ready_cluster.cluster_provider, &ready_cluster.cluster)
                        .to_string();
                for (r, d) in ready_cluster
                    .resources
                    .iter()
                    .zip(&deployed_cluster.resources)
                {
                    rows.push(ResourceRow {
                        cluster: cluster.clone(),
                        resource: format!("{}/{}", r.gvk.kind, r.name),
                        deployed: d.deployed_status.unwrap_or(Deployed::Pending),
                        ready: r.ready_status.unwrap_or(Readiness::NotReady),
                        note: note(d),
                    });
                }
            }
        }
        Ok(Snapshot {
            state: ready.deployment.deployed_status,
            revision: ready.deployment.revision,
            apps,
            reconciling: ready.reconciling,
            rollout: ready.deployment.rollout.clone(),
            moves: ready
                .deployment
                .states
                .actions
                .into_iter()
                .filter_map(|a| Some((a.time, a.revision, a.reason?)))
                .collect(),
        })
    }

    fn rows(&self) -> impl Iterator<Item = &ResourceRow> {
        self.apps.values().flatten()
    }

    /// The last action has finished: after a terminate everything is
    /// Deleted; after an instantiate, update or rollback everything is
    /// Ready and rsync is done with it (what the previous revision put on
    /// clusters left behind is gone too); a DIG that was never deployed
    /// has nothing to wait for.
    pub fn settled(&self) -> bool {
        // Stopped or paused, it waits for a person, not for the clusters.
        if self
            .rollout
            .as_ref()
            .is_some_and(|r| matches!(r.phase, RolloutPhase::Stopped | RolloutPhase::Paused))
        {
            return true;
        }
        match self.state {
            DeployState::Terminated => self.rows().all(ResourceRow::gone),
            DeployState::Instantiated | DeployState::Updated => {
                !self.reconciling && self.rows().all(|r| r.ready == Readiness::Ready)
            }
            _ => true,
        }
    }

    fn counts(&self, rows: &[ResourceRow]) -> (u64, u64) {
        let done = rows
            .iter()
            .filter(|r| match self.state {
                DeployState::Terminated => r.gone(),
                _ => r.ready == Readiness::Ready,
            })
            .count();
        (done as u64, rows.len() as u64)
    }

    fn goal(&self) -> &'static str {
        if self.state == DeployState::Terminated {
            "deleted"
        } else {
            "ready"
        }
    }

    /// One line per app: `web: 4/6 ready`.
    fn summary(&self) -> String {
        let apps: Vec<String> = self
            .apps
            .iter()
            .map(|(app, rows)| {
                let (done, total) = self.counts(rows);
                format!("{app} {done}/{total} {}", self.goal())
            })
            .collect();
        format!(
            "{} (revision {}): {}{}",
            self.state,
            self.revision,
            if apps.is_empty() {
                "no apps placed".to_owned()
            } else {
                apps.join(", ")
            },
            if self.reconciling && self.state.is_deployed() {
                "; rsync still at work (applying, or removing what the previous revision put elsewhere)"
            } else {
                ""
            }
        ) + &self.rollout_line()
    }

    /// `; rollout Progressing, 2 of 3 groups released`, and why it stopped.
    fn rollout_line(&self) -> String {
        let Some(rollout) = &self.rollout else {
            return String::new();
        };
        let reason = rollout
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        format!(
            "; rollout {}, {} of {} groups released{reason}",
            rollout.phase, rollout.released, rollout.groups
        )
    }

    /// Every resource as a table.
    pub fn table(&self) -> String {
        let mut table = super::resources::new_table([
            "APP", "CLUSTER", "RESOURCE", "DEPLOYED", "READY", "NOTE",
        ]);
        for (app, rows) in &self.apps {
            for row in rows {
                table.add_row([
                    app.as_str(),
                    row.cluster.as_str(),
                    row.resource.as_str(),
                    row.deployed.as_str(),
                    row.ready.as_str(),
                    row.note.as_str(),
                ]);
            }
        }
        table.to_string()
    }
}

/// How many of wasmco's own moves `status` lists.
const MOVES_SHOWN: usize = 5;

/// How `status` behaves.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Keep refreshing until settled.
    pub watch: bool,
    /// Give up after this long.
    pub timeout: Duration,
    /// Draw progress bars (on a terminal) rather than plain lines.
    pub progress: bool,
}

/// Shows the DIG's status; with `watch`, refreshes until it settles.
/// Returns the last snapshot; a timeout is an error.
pub fn show(
    client: &ApiClient,
    dig: &str,
    options: &WatchOptions,
    out: &mut dyn Write,
) -> Result<Snapshot, CliError> {
    let mut snapshot = Snapshot::read(client, dig)?;
    let lines = options.watch && !options.progress && !snapshot.settled();
    if options.watch && !snapshot.settled() {
        snapshot = if options.progress {
            watch_with_bars(client, dig, snapshot, options.timeout)?
        } else {
            watch_with_lines(client, dig, snapshot, options.timeout, out)?
        };
    }
    if !lines {
        writeln!(out, "{}", snapshot.summary())?;
    }
    writeln!(out, "{}", snapshot.table())?;
    // The latest few: a flapping history is in the API's.
    let shown = snapshot.moves.len().saturating_sub(MOVES_SHOWN);
    for (when, revision, why) in &snapshot.moves[shown..] {
        writeln!(out, "{when} revision {revision}: {why}")?;
    }
    Ok(snapshot)
}

const REFRESH: Duration = Duration::from_millis(250);

fn watch_with_lines(
    client: &ApiClient,
    dig: &str,
    mut snapshot: Snapshot,
    timeout: Duration,
    out: &mut dyn Write,
) -> Result<Snapshot, CliError> {
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    loop {
        let line = snapshot.summary();
        if line != last {
            writeln!(out, "{line}")?;
            out.flush()?;
            last = line;
        }
        if snapshot.settled() {
            return Ok(snapshot);
        }
        if Instant::now() > deadline {
            return Err(timed_out(dig, timeout, &snapshot));
        }
        std::thread::sleep(REFRESH);
        snapshot = Snapshot::read(client, dig)?;
    }
}

fn watch_with_bars(
    client: &ApiClient,
    dig: &str,
    mut snapshot: Snapshot,
    timeout: Duration,
) -> Result<Snapshot, CliError> {
    let deadline = Instant::now() + timeout;
    let bars = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let mut per_app: BTreeMap<String, ProgressBar> = BTreeMap::new();
    loop {
        for (app, rows) in &snapshot.apps {
            let bar = per_app.entry(app.clone()).or_insert_with(|| {
                bars.add(
                    ProgressBar::new(0)
                        .with_style(style.clone())
                        .with_prefix(app.clone()),
                )
            });
            let (done, total) = snapshot.counts(rows);
            bar.set_length(total);
            bar.set_position(done);
            bar.set_message(format!("{} ({})", snapshot.goal(), snapshot.state));
        }
        if snapshot.settled() {
            per_app.values().for_each(ProgressBar::finish);
            return Ok(snapshot);
        }
        if Instant::now() > deadline {
            per_app.values().for_each(ProgressBar::abandon);
            return Err(timed_out(dig, timeout, &snapshot));
        }
        std::thread::sleep(REFRESH);
        snapshot = Snapshot::read(client, dig)?;
    }
}

fn timed_out(dig: &str, timeout: Duration, snapshot: &Snapshot) -> CliError {
    CliError::Usage(format!(
        "{dig} did not settle within {}: {}",
        humantime::format_duration(timeout),
        snapshot.summary()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rolled_back(reconciling: bool) -> Snapshot {
        let row = ResourceRow {
            cluster: "p+one".into(),
            resource: "DaemonSet/collectd".into(),
            deployed: Deployed::Applied,
            ready: Readiness::Ready,
            note: String::new(),
        };
        Snapshot {
            state: DeployState::Updated,
            revision: 1,
            apps: BTreeMap::from([("collectd".to_owned(), vec![row])]),
            reconciling,
            moves: Vec::new(),
            rollout: None,
        }
    }

    #[test]
    fn a_rollback_whose_statuses_read_ready_settles_only_once_rsync_passed() {
        let waiting = rolled_back(true);
        assert!(!waiting.settled());
        assert!(waiting.summary().contains("rsync still at work"));
        let done = rolled_back(false);
        assert!(done.settled());
        assert!(!done.summary().contains("rsync"));
    }
}
