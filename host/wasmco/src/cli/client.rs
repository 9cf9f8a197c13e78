//! The CLI's side of the REST API: where the server is, and requests whose
//! failures a person can act on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{Client, RequestBuilder, multipart};
use serde::Deserialize;
use serde_json::Value;

use wasmco_core::wire::ErrorBody;

/// Where the CLI finds the API when nothing else says.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:9015";

/// Why a request did not get the answer asked for.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answers at the address.
    #[error(
        "cannot reach the wasmco API at {server} ({reason}); start one with `wasmco dev`, \
         or point the CLI elsewhere with --server or WASMCO_SERVER"
    )]
    Unreachable {
        /// The address tried.
        server: String,
        /// What the connection attempt said.
        reason: String,
    },
    /// The server answered with an error.
    #[error("{method} {path}: {status}: {message}{}", field.as_ref().map(|f| format!(" (field `{f}`)")).unwrap_or_default())]
    Api {
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
        /// The HTTP status.
        status: StatusCode,
        /// The server's message.
        message: String,
        /// The field the server named, when it named one.
        field: Option<String>,
    },
    /// The server answered with a body this CLI does not read (a server
    /// of another version, say).
    #[error("{method} {path}: the answer is not what this CLI reads ({source})")]
    Answer {
        /// The request's method.
        method: &'static str,
        /// The request's path.
        path: String,
        /// Where reading it failed.
        source: serde_json::Error,
    },
    /// Any other transport failure.
    #[error("{method} {path}: {source}")]
    Http {
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
        /// Why.
        source: reqwest::Error,
    },
    /// The config file could not be used.
    #[error("config file {path}: {reason}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl ClientError {
    /// The HTTP status, when the server answered with an error.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The CLI's config file (`$WASMCO_CONFIG`, else `~/.config/wasmco/config.yaml`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ConfigFile {
    server: Option<String>,
    token: Option<String>,
    token_file: Option<PathBuf>,
    ca_file: Option<PathBuf>,
}

/// Where the dev server keeps its data, relative to where it was started.
const DEV_DATA_DIR: &str = ".wasmco";

/// Where `wasmco dev --ephemeral` leaves its token for the CLI while it
/// runs (its own data directory is a temporary one).
pub fn ephemeral_token_file() -> std::path::PathBuf {
    Path::new(DEV_DATA_DIR).join("ephemeral.token")
}

/// How to reach the API: address, bearer token, and the CA to trust for https.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// `http://host:port` or `https://…`.
    pub server: String,
    /// The bearer token.
    pub token: Option<String>,
    /// A PEM CA certificate to trust (the host CA of `serve --tls`).
    pub ca_file: Option<PathBuf>,
}

impl Connection {
    /// Each from its flag (or env var, which clap folds into it), else the
    /// config file, else what `wasmco dev` leaves in `./.wasmco`
    /// (`admin.token`, `tls/ca.crt`), else [`DEFAULT_SERVER`] and nothing.
    pub fn resolve(
        server: Option<String>,
        token: Option<String>,
        ca_file: Option<PathBuf>,
    ) -> Result<Connection, ClientError> {
        let config = read_config()?;
        let server = server
            .or(config.server)
            .unwrap_or_else(|| DEFAULT_SERVER.to_owned());
        // The dev server's token only ever goes to a server on this machine;
        // an ephemeral one's while it runs, else the kept one's.
        let token_file = config.token_file.or_else(|| {
            is_loopback(&server).then(|| {
                let ephemeral = ephemeral_token_file();
                if ephemeral.exists() {
                    ephemeral
                } else {
                    Path::new(DEV_DATA_DIR).join(crate::startup::ADMIN_TOKEN_FILE)
                }
            })
        });
        let token = match token.or(config.token) {
            Some(token) => Some(token),
            None => token_file
                .and_then(|file| std::fs::read_to_string(file).ok())
                .map(|t| t.trim().to_owned()),
        };
        let ca_file = ca_file.or(config.ca_file).or_else(|| {
            let dev = Path::new(DEV_DATA_DIR).join(crate::startup::TLS_CA_FILE);
            (server.starts_with("https://") && dev.exists()).then_some(dev)
        });
        Ok(Connection {
            server,
            token,
            ca_file,
        })
    }
}

/// Whether `server` (`http(s)://host:port`) is on this machine.
fn is_loopback(server: &str) -> bool {
    let rest = server.split_once("://").map_or(server, |(_, rest)| rest);
    let host = rest.split(['/', '?']).next().unwrap_or_default();
    let host = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(host, _)| host),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn read_config() -> Result<ConfigFile, ClientError> {
    let path = match std::env::var_os("WASMCO_CONFIG") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            std::env::var_os("HOME").map(|home| Path::new(&home).join(".config/wasmco/config.yaml"))
        }
    };
    let Some(path) = path.filter(|p| p.exists()) else {
        return Ok(ConfigFile::default());
    };
    let text = std::fs::read_to_string(&path).map_err(|e| ClientError::Config {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    serde_norway::from_str(&text).map_err(|e| ClientError::Config {
        path: path.clone(),
        reason: e.to_string(),
    })
}

/// A file sent as the multipart `file` part.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The multipart part it travels in: `file`, or `files` (several).
    pub part: &'static str,
    /// The name the server sees.
    pub file_name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A client of one wasmco API.
#[derive(Debug, Clone)]
pub struct ApiClient {
    server: String,
    http: Client,
}

impl ApiClient {
    /// A client of the API `connection` names.
    pub fn new(connection: &Connection) -> Result<Self, ClientError> {
        let server = connection.server.trim_end_matches('/').to_owned();
        let config = |path: &str, reason: String| ClientError::Config {
            path: PathBuf::from(path),
            reason,
        };
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = &connection.token {
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|_| config("token", "has characters a header cannot carry".into()))?;
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let mut builder = Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(300))
            .default_headers(headers);
        if let Some(ca_file) = &connection.ca_file {
            let name = ca_file.display().to_string();
            let pem = std::fs::read(ca_file).map_err(|e| config(&name, e.to_string()))?;
            let certificate = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| config(&name, format!("not a PEM certificate: {e}")))?;
            builder = builder.add_root_certificate(certificate);
        }
        let http = builder
            .build()
            .map_err(|e| config("client", e.to_string()))?;
        Ok(ApiClient { server, http })
    }

    /// The API's address.
    pub fn server(&self) -> &str {
        &self.server
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.server, path.trim_start_matches('/'))
    }

    /// `GET path` as JSON.
    pub fn get(&self, path: &str) -> Result<Value, ClientError> {
        self.send("GET", path, self.http.get(self.url(path)))
    }

    /// `GET path`, read as the wire type the API answers with there.
    pub fn get_as<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        read_answer("GET", path, self.get(path)?)
    }

    /// `POST path` with a JSON body, its answer read as `T`.
    pub fn post_as<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<T, ClientError> {
        read_answer("POST", path, self.post(path, body)?)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
        self.send("POST", path, self.http.post(self.url(path)).json(body))
    }

    /// `PUT path` with a JSON body.
    pub fn put(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
        self.send("PUT", path, self.http.put(self.url(path)).json(body))
    }

    /// `DELETE path`.
    pub fn delete(&self, path: &str) -> Result<(), ClientError> {
        self.send("DELETE", path, self.http.delete(self.url(path)))
            .map(drop)
    }

    /// `POST` (or `PUT` with `replace`) of a multipart resource: its document
    /// as the `metadata` part and, when given, the `file` part.
    pub fn upload(
        &self,
        path: &str,
        replace: bool,
        metadata: &Value,
        files: Vec<Upload>,
    ) -> Result<Value, ClientError> {
        let mut form = multipart::Form::new().text("metadata", metadata.to_string());
        for file in files {
            form = form.part(
                file.part,
                multipart::Part::bytes(file.bytes).file_name(file.file_name),
            );
        }
        let (method, request) = if replace {
            ("PUT", self.http.put(self.url(path)))
        } else {
            ("POST", self.http.post(self.url(path)))
        };
        self.send(method, path, request.multipart(form))
    }

    /// Creates a resource in `collection`, or, when its name is taken,
    /// replaces it at `item`; `Ok(true)` when it was created. A multipart
    /// resource sends `body` as its `metadata` part, with `files` as their parts.
    pub fn create_or_replace(
        &self,
        collection: &str,
        item: &str,
        body: &Value,
        multipart: bool,
        files: Vec<Upload>,
    ) -> Result<bool, ClientError> {
        let created = match multipart {
            true => self.upload(collection, false, body, files.clone()),
            false => self.post(collection, body),
        };
        match created {
            Ok(_) => Ok(true),
            Err(error) if error.status() == Some(StatusCode::CONFLICT) => {
                match multipart {
                    true => self.upload(item, true, body, files)?,
                    false => self.put(item, body)?,
                };
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        request: RequestBuilder,
    ) -> Result<Value, ClientError> {
        let response = request.send().map_err(|source| {
            if source.is_connect() {
                ClientError::Unreachable {
                    server: self.server.clone(),
                    reason: root_cause(&source),
                }
            } else {
                ClientError::Http {
                    method: method.to_owned(),
                    path: path.to_owned(),
                    source,
                }
            }
        })?;
        let status = response.status();
        let text = response.text().map_err(|source| ClientError::Http {
            method: method.to_owned(),
            path: path.to_owned(),
            source,
        })?;
        if status.is_success() {
            return Ok(if text.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            });
        }
        // Every error the API answers is an ErrorBody; a proxy's is not.
        let ErrorBody { message, field } = serde_json::from_str(&text).unwrap_or_else(|_| {
            let message = match text.trim() {
                "" => status.canonical_reason().unwrap_or("error").to_owned(),
                text => text.to_owned(),
            };
            ErrorBody {
                message,
                field: None,
            }
        });
        Err(ClientError::Api {
            method: method.to_owned(),
            path: path.to_owned(),
            status,
            message,
            field,
        })
    }
}

/// What `method path` answered, read as the wire type `T`.
pub fn read_answer<T: serde::de::DeserializeOwned>(
    method: &'static str,
    path: &str,
    answer: Value,
) -> Result<T, ClientError> {
    serde_json::from_value(answer).map_err(|source| ClientError::Answer {
        method,
        path: path.to_owned(),
        source,
    })
}

/// The innermost cause ("Connection refused"), which is what a person acts on.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_loopback_servers_get_the_dev_token() {
        for local in [
            "http://127.0.0.1:9015",
            "https://localhost:9015/",
            "http://[::1]:9015",
        ] {
            assert!(super::is_loopback(local), "{local}");
        }
        for remote in [
            "https://prod.example:9015",
            "http://10.0.0.5:9015",
            "http://127.0.0.1.example",
        ] {
            assert!(!super::is_loopback(remote), "{remote}");
        }
    }
}
