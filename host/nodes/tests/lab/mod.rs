//! Test machines: `tests/nodes/lab.sh` makes each node a set of namespaces
//! on this host with its own sshd; the lab's network is reachable only from
//! inside its network namespace, which the test's thread enters.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sched::{CloneFlags, setns};
use wasmco_nodes::{Login, NodeAddress, Secret};

/// A lab of nodes, torn down when dropped.
pub struct Lab {
    dir: PathBuf,
    _scratch: tempfile::TempDir,
    pub nodes: Vec<NodeAddress>,
}

impl Lab {
    /// Makes `count` nodes and moves the calling thread into their network.
    /// Threads started later by this one (a runtime's workers) inherit it.
    pub fn up(count: usize) -> Lab {
        let setup = Command::new("bash")
            .arg(script("setup.sh"))
            .status()
            .expect("bash runs the lab's setup");
        assert!(
            setup.success(),
            "tests/nodes/setup.sh could not install the lab's packages"
        );
        let scratch = tempfile::tempdir().expect("a scratch directory");
        let dir = scratch.path().join("lab");
        let made = Command::new("bash")
            .arg(script("lab.sh"))
            .arg("up")
            .arg(&dir)
            .arg(count.to_string())
            .arg(std::process::id().to_string())
            .output()
            .expect("bash runs the lab script");
        assert!(
            made.status.success(),
            "the lab script could not make {count} nodes (it needs root): {}",
            String::from_utf8_lossy(&made.stderr)
        );
        let nodes = String::from_utf8_lossy(&made.stdout)
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                NodeAddress {
                    name: fields[0].to_owned(),
                    host: fields[1].to_owned(),
                    port: fields[2].parse().expect("a port"),
                }
            })
            .collect();
        let lab = Lab {
            dir,
            _scratch: scratch,
            nodes,
        };
        let netns = std::fs::read_to_string(lab.dir.join("netns")).expect("the lab's netns");
        let netns = File::open(netns.trim()).expect("the lab's netns opens");
        setns(netns, CloneFlags::CLONE_NEWNET).expect("the test thread enters the lab");
        lab
    }

    /// The lab's root login with the key in `file` (`id_ed25519`, `id_rsa`).
    pub fn key_login(&self, file: &str) -> Login {
        Login {
            user: "root".into(),
            secret: Secret::PrivateKey(self.read(file)),
        }
    }

    /// The lab's root login by password.
    pub fn password_login(&self) -> Login {
        Login {
            user: "root".into(),
            secret: Secret::Password(self.read("password").trim().to_owned()),
        }
    }

    /// A node's host public key line.
    pub fn host_key(&self, node: &str) -> String {
        self.read(&format!("nodes/{node}/host_key.pub"))
    }

    /// The path of a file the lab made (`id_rsa`, `password`).
    pub fn file(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.file(file)).expect("a lab file")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script("lab.sh"))
            .arg("down")
            .arg(&self.dir)
            .status();
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/nodes")
        .join(name)
}
