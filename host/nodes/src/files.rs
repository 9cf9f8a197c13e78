//! Files onto a node: written whole or not at all, skipped when the node
//! already has them, and only where Eggo's clean-up may remove them again.

use std::path::Path;
use std::time::Duration;

use russh_sftp::protocol::OpenFlags;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use wasmco_core::eggo::dst_allowed;

use crate::command::Command;
use crate::error::NodeError;
use crate::session::{NodeSession, session_error};

/// How long the small shell steps around a copy may take.
const FILE_STEP: Duration = Duration::from_secs(30);

/// A file a step puts on a node.
#[derive(Clone)]
pub struct FileCopy {
    /// Its absolute path on the node.
    pub path: String,
    /// Its contents.
    pub contents: Vec<u8>,
    /// Its permission bits (`0o644`).
    pub mode: u32,
}

impl std::fmt::Debug for FileCopy {
    // Contents may be keys: only their size is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileCopy")
            .field("path", &self.path)
            .field("bytes", &self.contents.len())
            .field("mode", &format_args!("{:o}", self.mode))
            .finish()
    }
}

/// Where a copy's contents come from.
enum Source<'a> {
    Bytes(&'a [u8]),
    Local(&'a Path),
}

/// A file on wasmco's machine to copy to nodes, with its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalFile {
    /// Its path here.
    pub path: std::path::PathBuf,
    /// Its SHA-256, hex.
    pub digest: String,
}

impl LocalFile {
    /// Reads `path` once, in pieces, for its digest.
    pub fn read(path: &Path) -> Result<LocalFile, NodeError> {
        let unreadable = |source| NodeError::Local {
            path: path.display().to_string(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(unreadable)?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher).map_err(unreadable)?;
        Ok(LocalFile {
            path: path.to_owned(),
            digest: hex::encode(hasher.finalize()),
        })
    }
}

/// What a copy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// The node had other contents or mode, or no file: it has these now.
    Written,
    /// The node already had this file with this mode.
    Unchanged,
}

impl NodeSession {
    /// Puts a file on the node unless it is there already. The contents go
    /// to a partial file beside it which is renamed over the path, so a
    /// copy cut short (the node lost, wasmco killed) never leaves half a
    /// file where a service would read it.
    pub async fn put(&self, file: &FileCopy) -> Result<Copied, NodeError> {
        let digest = hex::encode(Sha256::digest(&file.contents));
        self.place(
            &file.path,
            &digest,
            file.mode,
            Source::Bytes(&file.contents),
        )
        .await
    }

    /// [`put`](Self::put) for a file on wasmco's machine, streamed rather
    /// than read whole (a package archive is hundreds of megabytes);
    /// `digest` is its [`LocalFile::digest`], worked out once for every
    /// machine it goes to.
    pub async fn upload(
        &self,
        local: &LocalFile,
        path: &str,
        mode: u32,
    ) -> Result<Copied, NodeError> {
        self.place(path, &local.digest, mode, Source::Local(&local.path))
            .await
    }

    async fn place(
        &self,
        path: &str,
        digest: &str,
        mode: u32,
        source: Source<'_>,
    ) -> Result<Copied, NodeError> {
        let (dir, name) = self.allowed(path)?;
        let quoted = quote(path);
        let mode = format!("{:o}", mode & 0o7777);
        let present = self
            .check(&Command::new(
                format!("look at {path}"),
                format!(
                    "sha256sum -- {quoted} 2>/dev/null | cut -c1-64; stat -c %a -- {quoted} 2>/dev/null; true"
                ),
                FILE_STEP,
            ))
            .await?;
        let mut lines = present.stdout.lines();
        if lines.next() == Some(digest) && lines.next() == Some(mode.as_str()) {
            return Ok(Copied::Unchanged);
        }

        // The partial file is made empty and owner-only before a byte of it
        // is sent (SFTP would create it 0644), and a stale one, or a link
        // someone put there, is removed first.
        let partial = format!("{dir}/.{name}.wasmco-partial");
        self.check(&Command::new(
            format!("make {dir}"),
            format!(
                "mkdir -p -- {dir} && umask 077 && rm -f -- {partial} && : > {partial}",
                dir = quote(dir),
                partial = quote(&partial)
            ),
            FILE_STEP,
        ))
        .await?;
        self.send(&partial, source).await?;
        self.check(&Command::new(
            format!("install {path}"),
            format!(
                "chmod {mode} -- {partial} && mv -fT -- {partial} {quoted}",
                partial = quote(&partial)
            ),
            FILE_STEP,
        ))
        .await?;
        tracing::debug!(node = %self.node, path, "file written");
        Ok(Copied::Written)
    }

    /// Reads a file from the node; `None` when there is none.
    pub async fn read(&self, path: &str) -> Result<Option<Vec<u8>>, NodeError> {
        let sftp = self.sftp(path).await?;
        let failed = |source| NodeError::Transfer {
            node: self.node.clone(),
            path: path.to_owned(),
            source: Box::new(source),
        };
        if !sftp.try_exists(path).await.map_err(failed)? {
            return Ok(None);
        }
        sftp.read(path).await.map(Some).map_err(failed)
    }

    async fn send(&self, path: &str, source: Source<'_>) -> Result<(), NodeError> {
        let sftp = self.sftp(path).await?;
        let failed = |source| NodeError::Transfer {
            node: self.node.clone(),
            path: path.to_owned(),
            source: Box::new(source),
        };
        let mut remote = sftp
            .open_with_flags(path, OpenFlags::WRITE | OpenFlags::TRUNCATE)
            .await
            .map_err(failed)?;
        let written = async {
            match source {
                Source::Bytes(contents) => remote.write_all(contents).await?,
                Source::Local(local) => {
                    let mut file = tokio::fs::File::open(local).await?;
                    tokio::io::copy(&mut file, &mut remote).await?;
                }
            }
            remote.shutdown().await
        };
        written
            .await
            .map_err(|io| failed(russh_sftp::client::error::Error::IO(io.to_string())))
    }

    /// The session's SFTP channel, opened on first use.
    async fn sftp(&self, path: &str) -> Result<&russh_sftp::client::SftpSession, NodeError> {
        self.sftp
            .get_or_try_init(|| async {
                let step = format!("open SFTP for {path}");
                let channel = self
                    .handle
                    .channel_open_session()
                    .await
                    .map_err(|source| session_error(&self.node, &step, source))?;
                channel
                    .request_subsystem(true, "sftp")
                    .await
                    .map_err(|source| session_error(&self.node, &step, source))?;
                russh_sftp::client::SftpSession::new(channel.into_stream())
                    .await
                    .map_err(|source| NodeError::Transfer {
                        node: self.node.clone(),
                        path: path.to_owned(),
                        source: Box::new(source),
                    })
            })
            .await
    }

    /// Splits an allowed path into its directory and file name; refuses a
    /// path outside Eggo's allow-list, a relative one, or one with `.` or
    /// `..` parts (which could lead a later clean-up elsewhere).
    fn allowed<'p>(&self, path: &'p str) -> Result<(&'p str, &'p str), NodeError> {
        let refused = || NodeError::PathRefused {
            node: self.node.clone(),
            path: path.to_owned(),
        };
        let (dir, name) = path.rsplit_once('/').ok_or_else(refused)?;
        let plain = path.starts_with('/')
            && path[1..]
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..");
        if !plain || !dst_allowed(if dir.is_empty() { "/" } else { dir }, name) {
            return Err(refused());
        }
        Ok((dir, name))
    }
}

fn quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|quoted| quoted.into_owned())
        .unwrap_or_default()
}
