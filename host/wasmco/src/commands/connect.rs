//! The global flags that say how the client verbs reach the API.

use std::path::PathBuf;

use wasmco::cli::client::{ApiClient, Connection};

/// How the client verbs reach the API: the global flags.
#[derive(clap::Args)]
pub struct Connect {
    /// The wasmco API the client verbs talk to (default: the config file's
    /// `server`, else http://127.0.0.1:9015).
    #[arg(long, global = true, env = "WASMCO_SERVER")]
    server: Option<String>,
    /// The API's bearer token (default: the config file's `token`, else
    /// ./.wasmco/admin.token, which `wasmco dev` writes).
    #[arg(long, global = true, env = "WASMCO_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A CA certificate (PEM) to trust for an https server (default: the
    /// config file's `ca-file`, else ./.wasmco/tls/ca.crt).
    #[arg(long, global = true, env = "WASMCO_CA_FILE")]
    ca_file: Option<PathBuf>,
}

impl Connect {
    /// A client for the API these flags (or the config file) name.
    pub fn client(&self) -> anyhow::Result<ApiClient> {
        let connection = Connection::resolve(
            self.server.clone(),
            self.token.clone(),
            self.ca_file.clone(),
        )?;
        Ok(ApiClient::new(&connection)?)
    }
}
