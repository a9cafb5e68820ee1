//! Links the `git-loopx` executable as a position-independent executable
//! (PIE, so the loader places it at a random address) whose relative
//! relocations are packed (`-z pack-relative-relocs`, the `DT_RELR` form),
//! when the C toolchain that links it can.
//!
//! An agent runs the tool as a fresh process many times a turn, and an
//! executable of this size carries about 29,000 relative relocations (the
//! addresses in its tables of strings and in its vtables) that the dynamic
//! loader applies before `main` runs. As 24-byte `RELA` entries they are
//! 0.7 MB the loader reads page by page; packed, a few kilobytes of bitmaps
//! (docs/performance.md has the figures). glibc reads the packed form from
//! 2.36 on, and the linker marks such an executable as needing it, so an
//! older glibc refuses to start it with a message rather than misbehave.
//!
//! Only the binaries are linked this way, only for a native Linux build
//! with glibc, and only when a probe link with the flag succeeds (a linker
//! that does not know it links as before).

use std::path::PathBuf;
use std::process::{Command, Stdio};

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=src/build.rs");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let native = env("TARGET") == env("HOST");
    if env("CARGO_CFG_TARGET_OS") == "linux" && env("CARGO_CFG_TARGET_ENV") == "gnu" && native {
        if links_with(FLAG) {
            println!("cargo:rustc-link-arg-bins={FLAG}");
        } else {
            println!("cargo:warning=the linker does not pack relative relocations: each process applies them one by one");
        }
    }
}

/// Whether `cc` links a trivial program with `flag`.
fn links_with(flag: &str) -> bool {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    let source = out.join("probe.c");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .arg("-pie")
        .arg("-fPIE")
        .arg(flag)
        .arg(&source)
        .arg("-o")
        .arg(out.join("probe"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
