//! A controller's stdout and stderr, kept in memory up to a bound.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// What a controller printed during one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerLog {
    /// The output, stdout and stderr interleaved, cut at the log limit.
    pub text: String,
    /// Bytes written past the limit and dropped.
    pub dropped_bytes: u64,
}

impl ControllerLog {
    /// The message a Rust guest's panic printed, if the log holds one.
    pub fn panic_message(&self) -> Option<String> {
        let mut lines = self.text.lines();
        lines.find(|line| line.contains("panicked at"))?;
        let message: Vec<&str> = lines
            .take_while(|line| !line.starts_with("note:") && !line.starts_with("stack backtrace"))
            .collect();
        let message = message.join("\n");
        (!message.trim().is_empty()).then(|| message.trim().to_owned())
    }
}

/// The sink both of a call's output streams write to. Writes past the bound
/// succeed but are dropped: a chatty controller keeps working, it just is not heard.
#[derive(Clone)]
pub(super) struct LogSink {
    buffer: Arc<Mutex<Buffer>>,
}

struct Buffer {
    bytes: Vec<u8>,
    capacity: usize,
    dropped: u64,
}

impl LogSink {
    pub(super) fn new(capacity: usize) -> Self {
        LogSink {
            buffer: Arc::new(Mutex::new(Buffer {
                bytes: Vec::new(),
                capacity,
                dropped: 0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Buffer> {
        // A panic while holding this lock cannot leave the buffer inconsistent.
        self.buffer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn append(&self, data: &[u8]) {
        let mut buffer = self.lock();
        let room = buffer.capacity.saturating_sub(buffer.bytes.len());
        let kept = data.len().min(room);
        buffer.bytes.extend_from_slice(&data[..kept]);
        buffer.dropped += (data.len() - kept) as u64;
    }

    /// Everything written so far, leaving the sink empty.
    pub(super) fn take(&self) -> ControllerLog {
        let mut buffer = self.lock();
        let bytes = std::mem::take(&mut buffer.bytes);
        // Escaped once here, so that no reader of the log (the host's own,
        // `wasmco controller test`) shows a controller's control characters.
        let text = String::from_utf8_lossy(&bytes);
        ControllerLog {
            text: wasmco_core::limits::printable(&text).into_owned(),
            dropped_bytes: std::mem::take(&mut buffer.dropped),
        }
    }
}

impl IsTerminal for LogSink {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogSink {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// The largest write a guest may make at once; any size works, this one keeps
/// a guest's buffers modest.
const WRITE_PERMIT: usize = 64 << 10;

impl OutputStream for LogSink {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[async_trait::async_trait]
impl Pollable for LogSink {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for LogSink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.append(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_cannot_forge_a_line_of_a_log() {
        let sink = LogSink::new(1024);
        sink.append(b"placed\r[INFO] every cluster ready\x1b[2K\nnext");
        assert_eq!(
            sink.take().text,
            "placed\\r[INFO] every cluster ready\\u{1b}[2K\nnext"
        );
    }

    #[test]
    fn writes_past_the_bound_are_counted_not_kept() {
        let sink = LogSink::new(8);
        sink.append(b"hello ");
        sink.append(b"world");
        let log = sink.take();
        assert_eq!(log.text, "hello wo");
        assert_eq!(log.dropped_bytes, 3);
    }

    #[test]
    fn panic_message_is_the_lines_after_panicked_at() {
        let log = ControllerLog {
            text: "before\nthread '<unnamed>' panicked at src/lib.rs:3:5:\nit broke: 7\nnote: run with `RUST_BACKTRACE=1`\n".into(),
            dropped_bytes: 0,
        };
        assert_eq!(log.panic_message().as_deref(), Some("it broke: 7"));
    }
}
