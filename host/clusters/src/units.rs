//! systemd units, laid out as Eggo writes them: one flag per line, Restart
//! on failure, wanted by multi-user.target.

use std::collections::BTreeMap;

/// A service unit.
#[derive(Debug, Clone, Default)]
pub struct Unit {
    /// `Description=`.
    pub description: &'static str,
    /// `After=` targets and units.
    pub after: Vec<&'static str>,
    /// `ExecStartPre=` commands.
    pub pre: Vec<String>,
    /// The program `ExecStart=` runs.
    pub program: String,
    /// Its flags, `--name` to value, in name order (Eggo's order is a Go
    /// map's, so no order is Eggo's).
    pub flags: BTreeMap<String, String>,
    /// Extra `[Service]` lines (`Type=notify`, `Delegate=yes`…).
    pub service: Vec<&'static str>,
}

impl Unit {
    /// The flags with the file's `config-extra-args` for this component
    /// laid over them: a flag named there replaces the default, a new one is
    /// added (Eggo's `--name: value` keys, dashes included).
    pub fn with_extra_args(mut self, extra: Option<&BTreeMap<String, String>>) -> Unit {
        for (flag, value) in extra.into_iter().flatten() {
            self.flags.insert(flag.clone(), value.clone());
        }
        self
    }

    /// A unit that runs `script` once at boot and counts as active after
    /// (settings that do not survive a reboot on their own).
    pub fn oneshot(description: &'static str, script: &str) -> String {
        let quoted = shlex::try_quote(script)
            .map(|quoted| quoted.into_owned())
            .unwrap_or_default();
        format!(
            "[Unit]\nDescription={description}\nAfter=network-online.target\n\n[Service]\n\
             Type=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c {quoted}\n\n\
             [Install]\nWantedBy=multi-user.target\n"
        )
    }

    /// The unit file's text.
    pub fn render(&self) -> String {
        let mut text = format!("[Unit]\nDescription={}\n", self.description);
        for after in &self.after {
            text.push_str(&format!("After={after}\n"));
        }
        text.push_str("\n[Service]\n");
        for line in &self.service {
            text.push_str(line);
            text.push('\n');
        }
        for pre in &self.pre {
            text.push_str(&format!("ExecStartPre={pre}\n"));
        }
        text.push_str(&format!("ExecStart={}", self.program));
        for (flag, value) in &self.flags {
            if value.is_empty() {
                text.push_str(&format!(" \\\n\t\t{flag}"));
            } else {
                text.push_str(&format!(" \\\n\t\t{flag}={value}"));
            }
        }
        text.push_str("\nRestart=on-failure\nRestartSec=2\nLimitNOFILE=65536\n");
        text.push_str("\n[Install]\nWantedBy=multi-user.target\n");
        text
    }
}

/// Flags from `(name, value)` pairs.
pub fn flags<const N: usize>(pairs: [(&str, String); N]) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(flag, value)| (flag.to_owned(), value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_args_replace_and_add_flags() {
        let unit = Unit {
            description: "Kubernetes Scheduler Plugin",
            after: vec!["network.target"],
            program: "/usr/bin/kube-scheduler".into(),
            flags: flags([("--v", "2".into()), ("--leader-elect", "true".into())]),
            ..Unit::default()
        };
        let extra = flags([("--v", "4".into()), ("--profiling", String::new())]);
        let text = unit.with_extra_args(Some(&extra)).render();
        assert!(text.contains("ExecStart=/usr/bin/kube-scheduler \\\n\t\t--leader-elect=true \\\n\t\t--profiling \\\n\t\t--v=4\n"), "{text}");
        assert!(text.contains("After=network.target\n"));
        assert!(text.ends_with("WantedBy=multi-user.target\n"));
    }
}
