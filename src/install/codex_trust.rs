//! Whether Codex will run the hooks in a project's `.codex/hooks.json`.
//!
//! Codex runs a project's hooks only once the person trusted them in its
//! `/hooks` view, and skips them without a word otherwise (measured with
//! Codex 0.171, docs/gates.md). The trust is in the person's
//! `$CODEX_HOME/config.toml` (default `~/.codex`):
//!
//! - `[projects."<root>"] trust_level = "trusted"`: the project at all;
//! - `[hooks.state."<file>:<event>:<group>:<hook>"] trusted_hash =
//!   "sha256:<hex>"` for each command hook (`enabled = false` turns one
//!   off), where the hash is of the hook's identity as compact JSON with
//!   sorted keys: `{"event_name", "hooks": [{"async", "command",
//!   "statusMessage"?, "timeout", "type"}], "matcher"?}`; the timeout
//!   defaults to 600 and is at least 1; Stop and UserPromptSubmit keep no
//!   matcher.
//!
//! This module computes the same keys and hashes and says which hooks
//! Codex would skip. It writes nothing: trusting is the person's.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::Digest as _;

/// The events in Codex's order, each with the label its keys use.
const EVENTS: [(&str, &str); 8] = [
    ("PreToolUse", "pre_tool_use"),
    ("PermissionRequest", "permission_request"),
    ("PostToolUse", "post_tool_use"),
    ("PreCompact", "pre_compact"),
    ("PostCompact", "post_compact"),
    ("SessionStart", "session_start"),
    ("UserPromptSubmit", "user_prompt_submit"),
    ("Stop", "stop"),
];

/// Events whose matcher Codex ignores (and leaves out of the hash).
const NO_MATCHER: [&str; 2] = ["UserPromptSubmit", "Stop"];

/// `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(home) => Some(PathBuf::from(home)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")),
    }
}

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("JSON values serialize")
}

/// The bytes Codex hashes for one command hook.
fn identity(event: &str, label: &str, group: &Value, handler: &Value) -> String {
    let timeout = handler
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    let asynchronous = handler
        .get("async")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut hook = format!(
        "{{\"async\":{asynchronous},\"command\":{}",
        json(&handler["command"])
    );
    if let Some(m) = handler.get("statusMessage").filter(|v| !v.is_null()) {
        hook.push_str(&format!(",\"statusMessage\":{}", json(m)));
    }
    hook.push_str(&format!(",\"timeout\":{timeout},\"type\":\"command\"}}"));
    let mut out = format!("{{\"event_name\":{},\"hooks\":[{hook}]", json(&label));
    if let Some(m) = group.get("matcher").filter(|v| !v.is_null()) {
        if !NO_MATCHER.contains(&event) {
            out.push_str(&format!(",\"matcher\":{}", json(m)));
        }
    }
    out.push('}');
    out
}

/// Each command hook of `hooks` (a hooks.json's content) as Codex keys it
/// for the file `source`: (key, `sha256:<hex>`, event label).
pub fn keyed(source: &Path, hooks: &Value) -> Vec<(String, String, &'static str)> {
    let mut out = Vec::new();
    for (event, label) in EVENTS {
        let Some(groups) = hooks["hooks"].get(event).and_then(Value::as_array) else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let Some(handlers) = group.get("hooks").and_then(Value::as_array) else {
                continue;
            };
            for (h, handler) in handlers.iter().enumerate() {
                let command = handler.get("command").and_then(Value::as_str);
                if handler.get("type").and_then(Value::as_str) != Some("command")
                    || command.is_none_or(|c| c.trim().is_empty())
                {
                    continue;
                }
                let digest = sha2::Sha256::digest(identity(event, label, group, handler));
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                out.push((
                    format!("{}:{label}:{g}:{h}", source.display()),
                    format!("sha256:{hex}"),
                    label,
                ));
            }
        }
    }
    out
}

/// One command hook of the project's hooks file, as Codex keys its trust.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CodexHook {
    /// `[hooks.state."<key>"]` in `$CODEX_HOME/config.toml`.
    pub key: String,
    /// The `trusted_hash` that trusts it as it is now.
    pub hash: String,
    pub event: &'static str,
    /// `trusted`, `not_trusted`, `changed_since_trusted` or `turned_off`.
    pub trust: &'static str,
}

/// What Codex makes of the project `root`'s hooks in `hooks_json`, by the
/// person's config in `codex_home`: whether it trusts the project, and
/// each hook's trust. `None` when the hooks file does not parse.
pub fn trust(root: &Path, hooks_json: &Path, codex_home: &Path) -> Option<(bool, Vec<CodexHook>)> {
    let text = std::fs::read_to_string(hooks_json).ok()?;
    let hooks: Value = serde_json::from_str(&text).ok()?;
    let config = std::fs::read_to_string(codex_home.join("config.toml")).unwrap_or_default();
    let doc: toml_edit::DocumentMut = config.parse().unwrap_or_default();
    let item = |path: &[&str]| {
        let mut at = doc.as_item();
        for key in path {
            at = at.get(key)?;
        }
        Some(at)
    };
    let root_key = root.to_string_lossy();
    let project =
        item(&["projects", &root_key, "trust_level"]).and_then(|v| v.as_str()) == Some("trusted");
    let hooks = keyed(hooks_json, &hooks)
        .into_iter()
        .map(|(key, hash, event)| {
            let trusted = item(&["hooks", "state", &key, "trusted_hash"]).and_then(|v| v.as_str());
            let enabled = item(&["hooks", "state", &key, "enabled"]).and_then(|v| v.as_bool());
            let trust = match (trusted, enabled) {
                (_, Some(false)) => "turned_off",
                (None, _) => "not_trusted",
                (Some(t), _) if t != hash => "changed_since_trusted",
                _ => "trusted",
            };
            CodexHook {
                key,
                hash,
                event,
                trust,
            }
        })
        .collect();
    Some((project, hooks))
}

/// Why Codex would not run every hook of a [`trust`] answer, in words;
/// `None` when it runs them all.
pub fn skipped(project: bool, hooks: &[CodexHook], codex_home: &Path) -> Option<String> {
    if !project {
        return Some(format!(
            "Codex has not trusted this project ({}): it ignores the project's hooks",
            codex_home.join("config.toml").display()
        ));
    }
    let skipped: Vec<String> = hooks
        .iter()
        .filter(|h| h.trust != "trusted")
        .map(|h| format!("{} {}", h.event, h.trust.replace('_', " ")))
        .collect();
    (!skipped.is_empty()).then(|| {
        format!(
            "Codex skips these hooks without a word until you trust them in its /hooks view: {}",
            skipped.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The hashes Codex 0.171 recorded for git-loopx's own template (the
    /// TUI's "Trust all and continue").
    #[test]
    fn the_templates_hooks_hash_as_codex_records_them() {
        let hooks: serde_json::Value =
            serde_json::from_str(super::super::runtimes::codex::TEMPLATE).unwrap();
        let keyed = super::keyed(Path::new("/r/.codex/hooks.json"), &hooks);
        assert_eq!(
            keyed,
            vec![
                (
                    "/r/.codex/hooks.json:session_start:0:0".to_owned(),
                    "sha256:5460910be2920d886133404a01bb73aec856dc898f373af8a7f547a2784e836d"
                        .to_owned(),
                    "session_start"
                ),
                (
                    "/r/.codex/hooks.json:stop:0:0".to_owned(),
                    "sha256:aacebdd478f009ef672e261b7ea018543c009588c1ab170bd9ec40b9a0bf1ce4"
                        .to_owned(),
                    "stop"
                ),
            ]
        );
    }

    #[test]
    fn defaults_and_matchers_hash_as_codex_does() {
        let v = serde_json::json!({"command": "x \"y\"", "timeout": 0, "statusMessage": "é"});
        let group = serde_json::json!({"matcher": "*"});
        assert_eq!(
            super::identity("SessionStart", "session_start", &group, &v),
            r#"{"event_name":"session_start","hooks":[{"async":false,"command":"x \"y\"","statusMessage":"é","timeout":1,"type":"command"}],"matcher":"*"}"#
        );
        // Stop keeps no matcher.
        assert!(!super::identity("Stop", "stop", &group, &v).contains("matcher"));
    }
}
