//! What a runtime hands its hook: the JSON object on stdin (Claude Code and
//! Codex `hooks.json` events) or the single JSON argument of Codex's
//! `notify` program. Read leniently: unknown fields are ignored, a missing
//! field or one of the wrong type is taken as absent, since runtimes add
//! fields from one release to the next.

use serde_json::{Map, Value};

/// The fields of a hook event git-loopx uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookInput {
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub hook_event_name: Option<String>,
    /// Claude Code and Codex: the session already continues because a Stop
    /// hook blocked.
    pub stop_hook_active: bool,
    /// SessionStart: `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    /// Codex: the turn that stopped.
    pub turn_id: Option<String>,
}

/// Codex `notify`'s argument, for `type: agent-turn-complete`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotifyInput {
    pub thread_id: Option<String>,
    pub turn_id: Option<String>,
    pub cwd: Option<String>,
}

fn object(text: &str, what: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "{what} is JSON but not an object (it starts with {})",
            crate::codec::json_kind(&other)
        )),
        Err(e) => Err(format!("{what} is not JSON: {e}")),
    }
}

fn text(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl HookInput {
    /// Parses the event a runtime wrote on stdin. Empty input is an event
    /// with no fields (a hook run by hand); anything but a JSON object is
    /// refused, with what was wrong.
    pub fn parse(stdin: &str) -> Result<Self, String> {
        if stdin.trim().is_empty() {
            return Ok(HookInput::default());
        }
        let map = object(stdin, "the hook's stdin")?;
        // Cursor names the session `conversation_id` and the project
        // `workspace_roots` (no `cwd`).
        let root = map
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        Ok(HookInput {
            session_id: text(&map, "session_id").or_else(|| text(&map, "conversation_id")),
            transcript_path: text(&map, "transcript_path"),
            cwd: text(&map, "cwd").or(root),
            hook_event_name: text(&map, "hook_event_name"),
            stop_hook_active: map
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            source: text(&map, "source"),
            turn_id: text(&map, "turn_id"),
        })
    }
}

impl NotifyInput {
    /// Parses Codex's notify argument: `Ok(None)` for a notification of
    /// another type (ignored), an error when it is not a JSON object.
    pub fn parse(argument: &str) -> Result<Option<Self>, String> {
        let map = object(argument, "the notify argument")?;
        if map.get("type").and_then(Value::as_str) != Some("agent-turn-complete") {
            return Ok(None);
        }
        Ok(Some(NotifyInput {
            thread_id: text(&map, "thread-id"),
            turn_id: text(&map, "turn-id"),
            cwd: text(&map, "cwd"),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_input_is_read_leniently() {
        let input = HookInput::parse(
            r#"{"session_id":"abc","transcript_path":"/t.jsonl","cwd":"/p",
                "hook_event_name":"Stop","stop_hook_active":true,
                "last_assistant_message":"done","permission_mode":"default",
                "future_field":{"x":1}}"#,
        )
        .unwrap();
        assert_eq!(input.session_id.as_deref(), Some("abc"));
        assert_eq!(input.cwd.as_deref(), Some("/p"));
        assert!(input.stop_hook_active);
        // Missing and mistyped fields are absent, not errors.
        let input = HookInput::parse(r#"{"session_id":7,"stop_hook_active":"yes"}"#).unwrap();
        assert_eq!(input, HookInput::default());
        assert_eq!(HookInput::parse("").unwrap(), HookInput::default());
        assert!(HookInput::parse("[1]")
            .unwrap_err()
            .contains("not an object"));
        assert!(HookInput::parse("{not json")
            .unwrap_err()
            .contains("not JSON"));
    }

    #[test]
    fn cursor_names_its_session_and_project_its_own_way() {
        let input = HookInput::parse(
            r#"{"conversation_id":"c-1","generation_id":"g","hook_event_name":"stop",
                "workspace_roots":["/w/p"],"status":"completed","loop_count":0}"#,
        )
        .unwrap();
        assert_eq!(input.session_id.as_deref(), Some("c-1"));
        assert_eq!(input.cwd.as_deref(), Some("/w/p"));
    }

    #[test]
    fn notify_keeps_turn_completions_only() {
        let n = NotifyInput::parse(
            r#"{"type":"agent-turn-complete","thread-id":"t1","turn-id":"7","cwd":"/p",
                "input-messages":["hi"],"last-assistant-message":"ok"}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (n.thread_id.as_deref(), n.turn_id.as_deref()),
            (Some("t1"), Some("7"))
        );
        assert_eq!(NotifyInput::parse(r#"{"type":"other"}"#).unwrap(), None);
        assert!(NotifyInput::parse("nope").is_err());
    }
}
