//! git-loopx: a git-native control plane for long-running AI agents.
//!
//! Layers, top to bottom (dependencies point down only): the front ends
//! (`cli`, `serve`, `mcp`) → the use cases (`ops`) → what they share:
//! the replication protocol (`replicate`), child processes (`supervise`),
//! the installer (`install`), the LoopX importer (`import`) → the session
//! and its write rules (`session`) → `store` / `model`. `codec` is the only
//! YAML user, `store` the only git user, `git_cmd` the only place that runs
//! the `git` program. See `docs/ARCHITECTURE.md`.
#![forbid(unsafe_code)]

pub mod cli;
pub mod codec;
pub mod error;
pub mod git_cmd;
#[cfg(feature = "import-loopx")]
pub mod import;
pub mod install;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod model;
pub mod ops;
pub mod render;
pub mod replicate;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
pub mod store;
pub mod supervise;

pub use error::{Error, Result};
