//! `wasmco token`: scoped API tokens, issued, listed and revoked.

use std::io::Write;

use wasmco_core::tokens::{Role, TokenShown};

use super::connect::Connect;

#[derive(clap::Subcommand)]
pub enum TokenCommand {
    /// Issue a token scoped to some projects; prints its secret, which is
    /// shown only this once.
    Create {
        /// The token's name (the audit log's "who").
        name: String,
        /// A project it may touch; repeatable.
        #[arg(long = "project", required = true)]
        projects: Vec<String>,
        /// What it may do there.
        #[arg(long, value_enum)]
        role: RoleArg,
        /// When it stops working: a duration (30d, 12h) or an RFC 3339 time.
        #[arg(long, default_value = "30d")]
        expires: String,
    },
    /// List the tokens (never their secrets).
    List,
    /// Revoke a token; it stops working at once.
    Revoke {
        /// The token's name.
        name: String,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum RoleArg {
    Viewer,
    Editor,
}

pub fn run(connect: &Connect, command: TokenCommand) -> anyhow::Result<()> {
    let client = &connect.client()?;
    let out = &mut std::io::stdout().lock();
    match command {
        TokenCommand::Create {
            name,
            projects,
            role,
            expires,
        } => {
            let role = match role {
                RoleArg::Viewer => Role::Viewer,
                RoleArg::Editor => Role::Editor,
            };
            let answer: TokenShown = client.post_as(
                "/v2/tokens",
                &serde_json::json!({"metadata": {"name": name},
                    "spec": {"projects": projects, "role": role, "expires": expires}}),
            )?;
            writeln!(out, "{}", answer.status.token.unwrap_or_default())?;
        }
        TokenCommand::List => {
            let tokens: Vec<TokenShown> = client.get_as("/v2/tokens")?;
            let mut table = comfy_table::Table::new();
            table
                .load_preset(comfy_table::presets::NOTHING)
                .set_header(["NAME", "ROLE", "PROJECTS", "EXPIRES", "EXPIRED"]);
            for token in tokens {
                let projects: Vec<String> = token.spec.projects.into_iter().collect();
                let role = match token.spec.role {
                    Role::Viewer => "viewer",
                    Role::Editor => "editor",
                };
                table.add_row([
                    token.metadata.name,
                    role.to_owned(),
                    projects.join(","),
                    token.spec.expires,
                    token.status.expired.to_string(),
                ]);
            }
            writeln!(out, "{table}")?;
        }
        TokenCommand::Revoke { name } => {
            client.delete(&format!("/v2/tokens/{name}"))?;
            writeln!(out, "token {name} revoked")?;
        }
    }
    Ok(())
}
