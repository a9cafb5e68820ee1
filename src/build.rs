//! Links the `git-loopx` executable at a fixed address (`-no-pie`) on
//! Linux with glibc.
//!
//! An agent runs the tool as a fresh process many times a turn, and a
//! position-independent executable of this size makes the dynamic loader
//! apply about 29,000 relocations, and fault in the pages they touch, before
//! `main` runs: 0.2–0.3 ms of a 3–5 ms command (docs/performance.md). Only
//! the binaries are linked this way; the library, tests and proc macros are
//! not. What it gives up: the executable's own code and data sit at the
//! same address in every process (libraries, stack and heap are still
//! randomised); the crate forbids `unsafe`.

fn main() {
    println!("cargo:rerun-if-changed=src/build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let libc = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && libc == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
