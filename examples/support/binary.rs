//! The `git-loopx` binary an example drives, built fresh.
//!
//! `cargo run --example X` builds the example and the library, not the
//! binary, so a binary left from an older build would be measured (or
//! soaked) instead of the code at hand. Under cargo (`$CARGO` set), the
//! binary is built first with the same profile; cargo makes that a no-op
//! when it is up to date.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>/git-loopx`, up to date with the sources when run by
/// cargo; exits with status 2 when there is none.
pub fn git_loopx(example: &str) -> PathBuf {
    // The example lives in target/<profile>/examples/; the binary one level up.
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let binary = dir.join("git-loopx");
    if let Some(cargo) = std::env::var_os("CARGO") {
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "--bin", "git-loopx"]);
        if dir.file_name().is_some_and(|p| p == "release") {
            build.arg("--release");
        }
        match build.status() {
            Ok(s) if s.success() => {}
            other => eprintln!("{example}: building git-loopx failed ({other:?})"),
        }
    }
    if !binary.exists() {
        eprintln!(
            "{example}: build the binary first: cargo build --release (looked for {})",
            binary.display()
        );
        std::process::exit(2);
    }
    binary
}
