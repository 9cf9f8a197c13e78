//! One SSH session per node: connect, check the host key, log in, run
//! commands. Channels are cheap; the connection is kept for the node's
//! whole phase.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use russh::keys::{PrivateKeyWithHashAlg, decode_secret_key};
use russh::{ChannelMsg, Disconnect, Preferred, cipher, client};
use tokio::net::TcpStream;
use tokio::sync::OnceCell;
use tokio::time::timeout;

use crate::command::{Command, Output};
use crate::error::NodeError;
use crate::host_key::{HostKeyCheck, HostKeyPolicy, seen};
use crate::login::{Login, Secret};

/// AES-GCM first: with the processors' AES instructions on both ends it
/// moves a package archive with far less CPU than ChaCha20 (russh's first
/// choice), and CPU is what a small deploying host runs out of.
const CIPHERS: &[cipher::Name] = &[
    cipher::AES_256_GCM,
    cipher::CHACHA20_POLY1305,
    cipher::AES_256_CTR,
    cipher::AES_128_CTR,
];

/// Where a node is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAddress {
    /// The node's name, as errors and progress show it.
    pub name: String,
    /// Its address or DNS name.
    pub host: String,
    /// Its SSH port.
    pub port: u16,
}

impl fmt::Display for NodeAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// How patient a session is.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    /// From dialling to a logged-in session.
    pub connect_timeout: Duration,
    /// How often an idle session is probed; a node silent for three probes
    /// is taken as gone.
    pub keepalive: Duration,
    /// How long a command past its deadline has to stop after SIGTERM
    /// before it is killed, and how much longer the session waits for it.
    pub grace: Duration,
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(15),
            keepalive: Duration::from_secs(10),
            grace: Duration::from_secs(5),
        }
    }
}

/// A logged-in session on one node.
pub struct NodeSession {
    pub(crate) node: String,
    pub(crate) handle: client::Handle<HostKeyCheck>,
    pub(crate) settings: SessionSettings,
    pub(crate) sftp: OnceCell<russh_sftp::client::SftpSession>,
    host_key: String,
}

impl fmt::Debug for NodeSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeSession")
            .field("node", &self.node)
            .field("host_key", &self.host_key)
            .finish_non_exhaustive()
    }
}

impl NodeSession {
    /// Dials the node, checks its host key against `policy` and logs in.
    pub async fn connect(
        address: &NodeAddress,
        login: &Login,
        policy: &HostKeyPolicy,
        settings: &SessionSettings,
    ) -> Result<Self, NodeError> {
        let node = address.name.clone();
        // A key that cannot be read is the file's fault, not the node's:
        // said before anything is dialled.
        let key = match &login.secret {
            Secret::PrivateKey(pem) => Some(
                decode_secret_key(pem, None).map_err(|error| NodeError::BadKey(Box::new(error)))?,
            ),
            Secret::Password(_) => None,
        };
        let unreachable = |source| NodeError::Unreachable {
            node: node.clone(),
            address: address.to_string(),
            source,
        };
        let deadline = |what: &str| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{what} not done within {:?}", settings.connect_timeout),
            )
        };
        let stream = timeout(
            settings.connect_timeout,
            TcpStream::connect((address.host.as_str(), address.port)),
        )
        .await
        .map_err(|_| unreachable(deadline("connecting")))?
        .map_err(unreachable)?;
        // Small writes (commands, acknowledgements) must not wait for Nagle.
        let _ = stream.set_nodelay(true);

        let (check, host_key) = HostKeyCheck::new(policy);
        let config = client_config(settings);
        let handshake = timeout(
            settings.connect_timeout,
            client::connect_stream(config, stream, check),
        )
        .await
        .map_err(|_| unreachable(deadline("the SSH handshake")))?;
        let mut handle = match handshake {
            Ok(handle) => handle,
            Err(russh::Error::UnknownKey) => {
                return Err(NodeError::HostKeyMismatch {
                    node,
                    expected: policy.pinned_fingerprint().unwrap_or_default(),
                    found: seen(&host_key).unwrap_or_default(),
                });
            }
            Err(source) => return Err(session_error(&node, "the SSH handshake", source)),
        };
        let authenticated = timeout(
            settings.connect_timeout,
            authenticate(&mut handle, login, key),
        )
        .await
        .map_err(|_| unreachable(deadline("logging in")))?
        .map_err(|source| session_error(&node, "logging in", source))?;
        if !authenticated {
            return Err(NodeError::LoginRefused {
                node,
                user: login.user.clone(),
                method: login.secret.method(),
            });
        }
        tracing::debug!(node = %node, "ssh session open");
        Ok(Self {
            node,
            handle,
            settings: settings.clone(),
            sftp: OnceCell::new(),
            host_key: seen(&host_key).unwrap_or_default(),
        })
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The fingerprint of the host key the node showed (`SHA256:…`), for
    /// the caller to pin after a first contact.
    pub fn host_key(&self) -> &str {
        &self.host_key
    }

    /// Runs a step and returns what it printed, whatever its exit status;
    /// only a deadline passed or a broken session is an error.
    pub async fn run(&self, command: &Command) -> Result<Output, NodeError> {
        tracing::debug!(node = %self.node, step = %command.step, "running");
        let patience = command.timeout.saturating_add(self.settings.grace * 2);
        let started = Instant::now();
        let ended = timeout(patience, self.exec(command))
            .await
            .map_err(|_| self.timed_out(command))?;
        match ended {
            // 124 and 137 are also what a script can end with by itself;
            // only after the deadline are they the node's `timeout`.
            Ok(output)
                if Command::timed_out(output.status) && started.elapsed() >= command.timeout =>
            {
                Err(self.timed_out(command))
            }
            // The node's `timeout` kills the step's whole process group,
            // itself included, when the grace after SIGTERM has passed.
            Err(NodeError::Killed { .. }) if started.elapsed() >= command.timeout => {
                Err(self.timed_out(command))
            }
            ended => ended,
        }
    }

    /// Runs a step that must succeed: a non-zero status is an error naming
    /// the step, with the end of its standard error.
    pub async fn check(&self, command: &Command) -> Result<Output, NodeError> {
        let output = self.run(command).await?;
        if output.status != 0 {
            return Err(NodeError::Failed {
                node: self.node.clone(),
                step: command.step.clone(),
                status: output.status,
                stderr: output.stderr_tail(),
            });
        }
        Ok(output)
    }

    /// Ends the session politely.
    pub async fn close(self) {
        if let Some(sftp) = self.sftp.get() {
            let _ = sftp.close().await;
        }
        let _ = self
            .handle
            .disconnect(Disconnect::ByApplication, "", "en")
            .await;
    }

    async fn exec(&self, command: &Command) -> Result<Output, NodeError> {
        let broken = |source| session_error(&self.node, &command.step, source);
        let mut channel = self.handle.channel_open_session().await.map_err(broken)?;
        channel
            .exec(true, command.remote_line(self.settings.grace))
            .await
            .map_err(broken)?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let (mut status, mut signal) = (None, None);
        while let Some(message) = channel.wait().await {
            match message {
                ChannelMsg::Data { data } => stdout.extend_from_slice(&data),
                ChannelMsg::ExtendedData { data, ext: 1 } => stderr.extend_from_slice(&data),
                ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
                ChannelMsg::ExitSignal { signal_name, .. } => signal = Some(signal_name),
                _ => {}
            }
        }
        let status = match (status, signal) {
            (Some(status), _) => status,
            (None, Some(signal)) => {
                return Err(NodeError::Killed {
                    node: self.node.clone(),
                    step: command.step.clone(),
                    signal: format!("{signal:?}"),
                });
            }
            (None, None) => {
                return Err(NodeError::NoStatus {
                    node: self.node.clone(),
                    step: command.step.clone(),
                });
            }
        };
        Ok(Output {
            status,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    fn timed_out(&self, command: &Command) -> NodeError {
        NodeError::TimedOut {
            node: self.node.clone(),
            step: command.step.clone(),
            after: command.timeout,
        }
    }
}

fn client_config(settings: &SessionSettings) -> Arc<client::Config> {
    Arc::new(client::Config {
        keepalive_interval: Some(settings.keepalive),
        keepalive_max: 3,
        preferred: Preferred {
            cipher: Cow::Borrowed(CIPHERS),
            ..Preferred::default()
        },
        ..client::Config::default()
    })
}

async fn authenticate(
    handle: &mut client::Handle<HostKeyCheck>,
    login: &Login,
    key: Option<russh::keys::PrivateKey>,
) -> Result<bool, russh::Error> {
    let result = match (&login.secret, key) {
        (Secret::Password(password), _) => {
            handle
                .authenticate_password(login.user.clone(), password.clone())
                .await?
        }
        (Secret::PrivateKey(_), Some(key)) => {
            // RSA keys sign with the best hash the server takes (rsa-sha2-512
            // on OpenSSH); ssh-rsa with SHA-1 is refused by current servers.
            let hash = handle.best_supported_rsa_hash().await?.flatten();
            handle
                .authenticate_publickey(
                    login.user.clone(),
                    PrivateKeyWithHashAlg::new(Arc::new(key), hash),
                )
                .await?
        }
        (Secret::PrivateKey(_), None) => return Ok(false),
    };
    Ok(result.success())
}

pub(crate) fn session_error(node: &str, step: &str, source: russh::Error) -> NodeError {
    NodeError::Session {
        node: node.to_owned(),
        step: step.to_owned(),
        source: Box::new(source),
    }
}
