//! A bare remote served over smart HTTP and ssh on 127.0.0.1 by
//! `examples/support/serve-remote.sh`, for the fleet benchmark and the
//! transports test: started, read, and stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The script that serves the remote.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/support/serve-remote.sh")
}

/// A served remote: its URLs and the `core.sshCommand` that reaches the
/// ssh one. The servers stop when this is dropped.
pub struct Served {
    pub http: String,
    pub ssh: String,
    pub ssh_command: String,
    dir: PathBuf,
}

impl Served {
    /// Serves `remote` with its servers' files in `dir` (`latency_ms`: the
    /// script's delay line, one way, on every byte). The servers' programs
    /// must be installed (`serve-remote.sh install`).
    pub fn start(remote: &Path, dir: &Path, latency_ms: u64) -> Served {
        let mut cmd = Command::new("bash");
        cmd.arg(script())
            .args(["start", "--repo"])
            .arg(remote)
            .arg("--dir")
            .arg(dir);
        if latency_ms > 0 {
            cmd.args(["--latency-ms", &latency_ms.to_string()]);
        }
        let out = cmd.output().expect("serve-remote.sh runs");
        assert!(
            out.status.success(),
            "serve-remote.sh start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        // Its lines are for `eval`: a value may be in single quotes.
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .map(|v| v.trim_matches('\'').replace("'\\''", "'"))
                .unwrap_or_else(|| panic!("serve-remote.sh printed no {key}: {text}"))
        };
        Served {
            http: value("LOOPX_HTTP_URL"),
            ssh: value("LOOPX_SSH_URL"),
            ssh_command: value("LOOPX_GIT_SSH_COMMAND"),
            dir: dir.to_owned(),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["stop", "--dir"])
            .arg(&self.dir)
            .output();
    }
}
