//! The agent runtimes git-loopx governs, and how to tell, from a command's
//! environment, that it runs inside one.
//!
//! One [`Runtime`] per host: its name on the command line (`hooks install
//! --<name>`, `hook <name> <event>`, `prompt --runtime <name>`), its name
//! for people, and the environment variables the runtime itself sets in the
//! shell its agent runs commands from (its *markers*). What each runtime
//! installs lives beside the installer (`install::runtimes`).
//!
//! The markers are how the person is established positively: a command
//! that only a person may take is refused when any marker is present,
//! whatever identity flags say ([`detect`]). Besides the runtimes' own
//! markers, every installer also sets [`INSTALLED_MARKER`] in the agent's
//! shell, for runtimes (and versions) that set none of their own.

use serde::{Deserialize, Serialize};

/// The variable `hooks install` puts in the agent's shell environment, next
/// to `LOOPX_AGENT`: its value is the runtime's name.
pub const INSTALLED_MARKER: &str = "LOOPX_RUNTIME";

/// An agent runtime (host) that git-loopx integrates with.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(inline))]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    ClaudeCode,
    Codex,
    #[serde(rename = "opencode")]
    OpenCode,
    Pi,
    Gemini,
    Cursor,
    /// Any other host: a shell loop (`git loopx run`), a scheduler.
    #[default]
    Generic,
}

/// An environment variable a runtime sets in its agent's shell, with the
/// value it must have (`None`: any non-empty value).
#[derive(Clone, Copy, Debug)]
pub struct Marker {
    pub var: &'static str,
    pub value: Option<&'static str>,
}

impl Runtime {
    /// The runtimes with hooks to install, in the order help lists them.
    pub const HOSTS: [Runtime; 6] = [
        Runtime::ClaudeCode,
        Runtime::Codex,
        Runtime::OpenCode,
        Runtime::Pi,
        Runtime::Gemini,
        Runtime::Cursor,
    ];

    /// The name on the command line and in files (`claude-code`).
    pub fn name(self) -> &'static str {
        match self {
            Runtime::ClaudeCode => "claude-code",
            Runtime::Codex => "codex",
            Runtime::OpenCode => "opencode",
            Runtime::Pi => "pi",
            Runtime::Gemini => "gemini",
            Runtime::Cursor => "cursor",
            Runtime::Generic => "generic",
        }
    }

    /// The name for people (`Claude Code`).
    pub fn display(self) -> &'static str {
        match self {
            Runtime::ClaudeCode => "Claude Code",
            Runtime::Codex => "Codex",
            Runtime::OpenCode => "OpenCode",
            Runtime::Pi => "Pi",
            Runtime::Gemini => "Gemini CLI",
            Runtime::Cursor => "Cursor",
            Runtime::Generic => "an agent runtime",
        }
    }

    pub fn from_name(name: &str) -> Option<Runtime> {
        Runtime::HOSTS
            .into_iter()
            .chain([Runtime::Generic])
            .find(|r| r.name() == name)
    }

    /// What the runtime sets in its agent's shell environment. Each is
    /// documented with its source in `hooks/<runtime>/README.md`.
    pub fn markers(self) -> &'static [Marker] {
        const fn var(var: &'static str) -> Marker {
            Marker { var, value: None }
        }
        const fn is(var: &'static str, value: &'static str) -> Marker {
            Marker {
                var,
                value: Some(value),
            }
        }
        // Measured in each runtime's shell tool (tests/runtimes/README.md).
        const CLAUDE_CODE: [Marker; 2] = [is("CLAUDECODE", "1"), var("CLAUDE_CODE_SESSION_ID")];
        const CODEX: [Marker; 3] = [
            var("CODEX_THREAD_ID"),
            var("CODEX_SESSION_ID"),
            var("CODEX_SANDBOX_NETWORK_DISABLED"),
        ];
        const OPENCODE: [Marker; 2] = [is("OPENCODE", "1"), var("OPENCODE_PID")];
        const PI: [Marker; 1] = [is("PI_CODING_AGENT", "true")];
        const GEMINI: [Marker; 1] = [is("GEMINI_CLI", "1")];
        const CURSOR: [Marker; 1] = [is("CURSOR_AGENT", "1")];
        // Set by several agent programs (Claude Code among them) as
        // `<program>_<version>_…`.
        const GENERIC: [Marker; 1] = [var("AI_AGENT")];
        match self {
            Runtime::ClaudeCode => &CLAUDE_CODE,
            Runtime::Codex => &CODEX,
            Runtime::OpenCode => &OPENCODE,
            Runtime::Pi => &PI,
            Runtime::Gemini => &GEMINI,
            Runtime::Cursor => &CURSOR,
            Runtime::Generic => &GENERIC,
        }
    }
}

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a command is taken to run inside an agent runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Inside {
    pub runtime: Runtime,
    /// The variable that says so.
    pub marker: String,
}

/// The runtime a command runs inside, from its environment (`var` reads
/// one variable), or `None` when nothing marks one: the installer's
/// marker first, then each runtime's own.
pub fn detect(var: impl Fn(&str) -> Option<String>) -> Option<Inside> {
    if let Some(name) = var(INSTALLED_MARKER).filter(|v| !v.is_empty()) {
        return Some(Inside {
            runtime: Runtime::from_name(&name).unwrap_or(Runtime::Generic),
            marker: INSTALLED_MARKER.to_owned(),
        });
    }
    for runtime in Runtime::HOSTS.into_iter().chain([Runtime::Generic]) {
        for m in runtime.markers() {
            let hit = var(m.var).is_some_and(|v| match m.value {
                Some(want) => v == want,
                None => !v.is_empty(),
            });
            if hit {
                return Some(Inside {
                    runtime,
                    marker: m.var.to_owned(),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn each_runtime_is_told_by_its_own_marker() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<Runtime>);
        let cases: &[Case] = &[
            (&[], None),
            (&[("CLAUDECODE", "1")], Some(Runtime::ClaudeCode)),
            (&[("CLAUDECODE", "0")], None),
            (&[("CODEX_THREAD_ID", "019a")], Some(Runtime::Codex)),
            (&[("OPENCODE", "1")], Some(Runtime::OpenCode)),
            (&[("GEMINI_CLI", "1")], Some(Runtime::Gemini)),
            (&[("CURSOR_AGENT", "1")], Some(Runtime::Cursor)),
            (&[("PI_CODING_AGENT", "true")], Some(Runtime::Pi)),
            (&[("AI_AGENT", "x_1_agent")], Some(Runtime::Generic)),
            (&[("LOOPX_RUNTIME", "pi")], Some(Runtime::Pi)),
            (&[("LOOPX_RUNTIME", "other")], Some(Runtime::Generic)),
            (&[("LOOPX_RUNTIME", "")], None),
            (&[("LOOPX_AGENT", "a1")], None),
        ];
        for (vars, want) in cases {
            assert_eq!(detect(env(vars)).map(|i| i.runtime), *want, "{vars:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for r in Runtime::HOSTS.into_iter().chain([Runtime::Generic]) {
            assert_eq!(Runtime::from_name(r.name()), Some(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.name()));
        }
    }
}
