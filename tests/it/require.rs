//! Tests that need something outside the crate (a program, a package, a
//! file system that can refuse root) say why and pass where it is missing,
//! so that `cargo test` runs on any machine. In CI they must not: each has
//! a switch `LOOPX_REQUIRE_<THING>`, and `.ci/run` installs every thing
//! and sets every switch, so a missing one fails the run instead of
//! passing it unnoticed.
//!
//! The switches: `LOOPX_REQUIRE_RUNTIMES` (the agent CLIs, `agents.rs`),
//! `LOOPX_REQUIRE_BROWSER` (Chromium and ChromeDriver, `serve.rs`),
//! `LOOPX_REQUIRE_MCP_SDK` (the Python MCP SDK, `mcp.rs`),
//! `LOOPX_REQUIRE_REFERENCE` (LoopX 2.1.1, `import.rs`),
//! `LOOPX_REQUIRE_IMMUTABLE_DIR` (a directory that refuses even root,
//! `faults.rs`), `LOOPX_REQUIRE_SCRIPT` (util-linux `script`, for a
//! terminal, `help.rs`), `LOOPX_REQUIRE_TRANSLATED_GIT` (a git that
//! speaks German, `sync.rs`), `LOOPX_REQUIRE_TRANSPORTS` (lighttpd and
//! sshd serving a remote, `transports.rs`), `LOOPX_REQUIRE_SYSTEMD`
//! (`systemd-escape`, for the shipped user unit's instance, `notify.rs`)
//! and `LOOPX_REQUIRE_ROOT` (root, to hand a repository to another uid,
//! `ownership.rs`).

/// Whether `switch` asks for the thing (set, and neither empty nor `0`).
pub fn required(switch: &str) -> bool {
    std::env::var_os(switch).is_some_and(|v| !v.is_empty() && v != "0")
}

/// A test that cannot run here: fails when `switch` is set, else says
/// why on stderr (the caller then returns).
#[track_caller]
pub fn skip(switch: &str, why: &str) {
    if required(switch) {
        panic!("{switch} is set, but {why}");
    }
    eprintln!("skipped: {why} ({switch}=1 makes this a failure)");
}
