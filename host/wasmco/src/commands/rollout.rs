//! `wasmco rollout status|pause|resume|abort DIG`: a DIG's progressive
//! rollout (its rollout intent's), group by group.

use std::io::Write;

use wasmco::cli::resources;
use wasmco_core::wire::{DeploymentState, RolloutStatus};

use super::connect::Connect;
use super::dig::DigArgs;

/// What to do with the rollout.
#[derive(clap::Subcommand)]
pub enum RolloutCommand {
    /// Show its groups, how many went, and where it is (and why).
    Status(DigArgs),
    /// No further group goes until it is resumed.
    Pause(DigArgs),
    /// Groups go again, after a pause or a stop.
    Resume(DigArgs),
    /// Roll back to the revision before it (an instantiate's is terminated).
    Abort(DigArgs),
}

pub fn run(connect: &Connect, command: RolloutCommand) -> anyhow::Result<()> {
    let client = connect.client()?;
    let out = &mut std::io::stdout().lock();
    let (dig, action) = match &command {
        RolloutCommand::Status(dig) => (dig, None),
        RolloutCommand::Pause(dig) => (dig, Some("pause")),
        RolloutCommand::Resume(dig) => (dig, Some("resume")),
        RolloutCommand::Abort(dig) => (dig, Some("abort")),
    };
    let path = resources::find_dig(&client, dig.name(), dig.scope())?;
    if let Some(action) = action {
        let answer: DeploymentState = client.post_as(
            &format!("{path}/rollout/{action}"),
            &serde_json::Value::Null,
        )?;
        writeln!(
            out,
            "{action}: {} is {} (revision {})",
            path.trim_start_matches("v2/"),
            answer.deployed_status,
            answer.revision
        )?;
    }
    let status: RolloutStatus = client.get_as(&format!("{path}/rollout"))?;
    show(out, &status)
}

/// The rollout's line, then a line per group.
fn show(out: &mut dyn Write, status: &RolloutStatus) -> anyhow::Result<()> {
    let Some(rollout) = &status.rollout else {
        writeln!(
            out,
            "no rollout: the current revision went to every cluster at once"
        )?;
        return Ok(());
    };
    let reason = rollout
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    writeln!(
        out,
        "revision {} (from {}): {}, {} of {} groups released{reason}",
        rollout.revision, rollout.from, rollout.phase, rollout.released, rollout.groups
    )?;
    for (index, group) in status.groups.iter().enumerate() {
        let went = if index < rollout.released as usize {
            "released"
        } else {
            "held"
        };
        writeln!(out, "  group {} ({went}): {}", index + 1, group.join(", "))?;
    }
    Ok(())
}
