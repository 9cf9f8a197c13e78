//! A step's command and what it printed.

use std::time::Duration;

/// Exit status of coreutils' `timeout` when the deadline passed.
const TIMED_OUT: u32 = 124;
/// Exit status when the command ignored SIGTERM and was killed.
const KILLED: u32 = 128 + 9;
/// How much of standard error an error message keeps.
const STDERR_TAIL: usize = 2048;

/// A shell command run on a node as one named step.
#[derive(Debug, Clone)]
pub struct Command {
    /// The step's name, as errors and progress show it.
    pub step: String,
    /// The `sh -c` script.
    pub script: String,
    /// How long it may run: the node kills it when this passes, and the
    /// session stops waiting shortly after.
    pub timeout: Duration,
}

impl Command {
    /// A step with the given deadline.
    pub fn new(step: impl Into<String>, script: impl Into<String>, timeout: Duration) -> Self {
        Self {
            step: step.into(),
            script: script.into(),
            timeout,
        }
    }

    /// The command line sent to the node: the script under coreutils'
    /// `timeout`, so the deadline holds on the node even when the session
    /// is lost (a client-side timeout alone would leave it running).
    pub(crate) fn remote_line(&self, grace: Duration) -> String {
        let seconds = self.timeout.as_secs().max(1);
        let quoted = shlex::try_quote(&self.script)
            .map(|quoted| quoted.into_owned())
            // A NUL cannot be in a shell word; sh gets an empty script and
            // the step fails visibly rather than running something else.
            .unwrap_or_default();
        format!(
            "timeout --kill-after={}s {seconds}s sh -c {quoted}",
            grace.as_secs().max(1)
        )
    }

    /// Whether the exit status says the node's `timeout` stopped it.
    pub(crate) fn timed_out(status: u32) -> bool {
        status == TIMED_OUT || status == KILLED
    }
}

/// What a command left behind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Its exit status.
    pub status: u32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Output {
    /// The end of standard error, for an error message.
    pub(crate) fn stderr_tail(&self) -> String {
        let trimmed = self.stderr.trim_end();
        let start = trimmed.len().saturating_sub(STDERR_TAIL);
        let start = (start..=trimmed.len())
            .find(|index| trimmed.is_char_boundary(*index))
            .unwrap_or(trimmed.len());
        trimmed[start..].to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_reaches_sh_as_written() {
        let script = "echo 'a b' \"$HOME\" && exit 3 # `x`";
        let line = Command::new("probe", script, Duration::from_secs(30))
            .remote_line(Duration::from_secs(5));
        let word = line
            .strip_prefix("timeout --kill-after=5s 30s sh -c ")
            .expect("the deadline wraps the script");
        let echoed = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {word}"))
            .output()
            .expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&echoed.stdout), script);
    }

    #[test]
    fn stderr_tail_keeps_the_end_on_a_char_boundary() {
        let output = Output {
            stderr: format!("{}é\n", "x".repeat(STDERR_TAIL)),
            ..Output::default()
        };
        let tail = output.stderr_tail();
        assert!(tail.ends_with('é'));
        assert!(tail.len() <= STDERR_TAIL);
    }
}
