//! The DIG verbs: approve, instantiate, terminate, update, rollback, and
//! status.

use std::io::{IsTerminal, Write};

use wasmco::cli::client::ApiClient;
use wasmco::cli::resources::{self, Scope};
use wasmco::cli::status;
use wasmco_core::wire::{DeploymentState, DigAction};

use super::connect::Connect;

/// Which DIG a DIG verb acts on.
#[derive(clap::Args)]
pub struct DigArgs {
    /// The DIG's name (found in every project when unique) or its path
    /// (`projects/P/composite-apps/CA/V/deployment-intent-groups/D`).
    #[arg(value_name = "DIG")]
    name: String,
    #[command(flatten)]
    scope: Scope,
}

impl DigArgs {
    /// The DIG's name or path, as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where to look for it.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }
}

/// Roll a DIG back to an earlier context revision.
#[derive(clap::Args)]
pub struct RollbackArgs {
    #[command(flatten)]
    dig: DigArgs,
    /// The revision to go back to.
    #[arg(long)]
    revision: u64,
}

/// Show a DIG's status, refreshing until its last action has finished.
#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    dig: DigArgs,
    /// Show it once and return.
    #[arg(long)]
    once: bool,
    /// Give up waiting after this long.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    timeout: std::time::Duration,
}

/// Posts `action` to the DIG.
pub fn act(connect: &Connect, dig: &DigArgs, action: DigAction) -> anyhow::Result<()> {
    act_on(connect, &dig.name, &dig.scope, action)
}

/// Posts `action` to the DIG `name` names (within `scope`).
pub fn act_on(
    connect: &Connect,
    name: &str,
    scope: &Scope,
    action: DigAction,
) -> anyhow::Result<()> {
    let client = connect.client()?;
    let path = resources::find_dig(&client, name, scope)?;
    let answer = client.post_as(
        &format!("{path}/{}", action.route()),
        &serde_json::Value::Null,
    )?;
    report_state(&mut std::io::stdout().lock(), action, &path, &answer)
}

pub fn rollback(connect: &Connect, args: RollbackArgs) -> anyhow::Result<()> {
    let client = connect.client()?;
    let path = resources::find_dig(&client, &args.dig.name, &args.dig.scope)?;
    let action = DigAction::Rollback;
    let answer = client.post_as(
        &format!("{path}/{}", action.route()),
        &serde_json::json!({ "revision": args.revision }),
    )?;
    report_state(&mut std::io::stdout().lock(), action, &path, &answer)
}

pub fn status(connect: &Connect, args: StatusArgs) -> anyhow::Result<()> {
    let client: ApiClient = connect.client()?;
    let path = resources::find_dig(&client, &args.dig.name, &args.dig.scope)?;
    let options = status::WatchOptions {
        watch: !args.once,
        timeout: args.timeout,
        progress: std::io::stderr().is_terminal(),
    };
    status::show(&client, &path, &options, &mut std::io::stdout().lock())?;
    Ok(())
}

fn report_state(
    out: &mut dyn Write,
    action: DigAction,
    path: &str,
    answer: &DeploymentState,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{action}: {} is {} (revision {}); `wasmco status {}` follows it",
        path.trim_start_matches("v2/"),
        answer.deployed_status,
        answer.revision,
        answer.subject.name,
    )?;
    Ok(())
}
