//! Merging into and taking out of a runtime's hook configuration: order,
//! indentation and the user's entries kept; bad files refused with the place.

use super::*;
use crate::install::Baked;

const TEMPLATE: &str = include_str!("../../hooks/claude-code/settings.json");
const PREFIX: &str = "git loopx hook claude-code ";

fn entries() -> Vec<Entry> {
    template_entries(TEMPLATE, Baked::default())
}

#[test]
fn a_new_file_is_the_template() {
    let out = install("f", Syntax::Json, None, &entries(), PREFIX)
        .unwrap()
        .unwrap();
    assert_eq!(out.text, TEMPLATE);
    assert!(!out.reformatted);
    assert_eq!(
        install("f", Syntax::Json, Some(&out.text), &entries(), PREFIX).unwrap(),
        None
    );
    assert_eq!(
        uninstall("f", Syntax::Json, &out.text, PREFIX).unwrap(),
        Some(Removed::Empty)
    );
}

#[test]
fn the_users_settings_and_hooks_are_kept_in_order_and_indentation() {
    let user = r#"{
"permissions": {
    "allow": ["Bash(ls)"]
},
"hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]
},
"model": "x"
}"#;
    let out = install("f", Syntax::Json, Some(user), &entries(), PREFIX)
        .unwrap()
        .unwrap();
    assert!(out.reformatted, "the one-line arrays are laid out anew");
    let v: Value = serde_json::from_str(&out.text).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["permissions", "hooks", "model"]);
    let stop = v["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop[0]["hooks"][0]["command"], "echo mine");
    assert_eq!(
        stop[1]["hooks"][0]["command"],
        "git loopx hook claude-code stop"
    );
    assert!(out.text.contains("\n    \"permissions\""), "{}", out.text);
    assert!(!out.text.ends_with('\n'));
    let removed = uninstall("f", Syntax::Json, &out.text, PREFIX)
        .unwrap()
        .unwrap();
    let Removed::Text(back) = removed else {
        panic!()
    };
    let back: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(user).unwrap());
}

#[test]
fn a_pretty_printed_file_is_kept_byte_for_byte_around_our_entries() {
    let user = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"echo mine\"\n          }\n        ]\n      }\n    ]\n  },\n  \"z\": 1\n}\n";
    let out = install("f", Syntax::Json, Some(user), &entries(), PREFIX)
        .unwrap()
        .unwrap();
    assert!(!out.reformatted);
    let Removed::Text(back) = uninstall("f", Syntax::Json, &out.text, PREFIX)
        .unwrap()
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(back, user);
}

#[test]
fn another_agent_replaces_our_entries_in_place() {
    let first = install("f", Syntax::Json, None, &entries(), PREFIX)
        .unwrap()
        .unwrap()
        .text;
    let agent = template_entries(
        TEMPLATE,
        Baked {
            agent: Some("agent-a"),
            goal: None,
        },
    );
    let second = install("f", Syntax::Json, Some(&first), &agent, PREFIX)
        .unwrap()
        .unwrap()
        .text;
    let found = installed("f", Syntax::Json, &second, PREFIX).unwrap();
    assert_eq!(
        found,
        [
            (
                "SessionStart".to_owned(),
                "git loopx hook claude-code session-start --agent agent-a".to_owned()
            ),
            (
                "Stop".to_owned(),
                "git loopx hook claude-code stop --agent agent-a".to_owned()
            ),
        ]
    );
}

#[test]
fn bad_json_and_unexpected_shapes_are_refused_with_the_place() {
    let err = install(
        "s.json",
        Syntax::Json,
        Some("{\"hooks\": "),
        &entries(),
        PREFIX,
    )
    .unwrap_err();
    assert!(
        err.message.starts_with("s.json is not valid JSON"),
        "{err:?}"
    );
    let err = install("s.json", Syntax::Json, Some("[]"), &entries(), PREFIX).unwrap_err();
    assert_eq!(
        err.message,
        "s.json: the top level is an array, expected an object"
    );
    let err = install(
        "s.json",
        Syntax::Json,
        Some(r#"{"hooks": {"Stop": {}}}"#),
        &entries(),
        PREFIX,
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        "s.json: `hooks.Stop` is an object, expected an array of hook groups"
    );
    let err = install(
        "s.json",
        Syntax::Json,
        Some(r#"{"hooks": {"Stop": [{"hooks": [1]}]}}"#),
        &entries(),
        PREFIX,
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        "s.json: `hooks.Stop[0].hooks[0]` is a number, expected an object"
    );
    assert!(uninstall("s.json", Syntax::Json, r#"{"hooks": 3}"#, PREFIX).is_err());
}

/// Issue 47, item 11: Gemini CLI reads comments in `.gemini/settings.json`.
const COMMENTED: &str = r#"{
  // Gemini's own settings
  "model": { "name": "gemini-2.5-pro" }, /* pinned */
  "hooks": {
    "AfterAgent": [
      // a user's hook
      {"hooks": [{"type": "command", "command": "echo after"}]},
    ],
  },
}
"#;

#[test]
fn a_commented_file_keeps_its_comments_in_and_out() {
    let out = install("s.json", Syntax::Jsonc, Some(COMMENTED), &entries(), PREFIX)
        .unwrap()
        .unwrap();
    assert!(!out.reformatted);
    for kept in [
        "// Gemini's own settings",
        "/* pinned */",
        "// a user's hook",
    ] {
        assert!(out.text.contains(kept), "{}", out.text);
    }
    assert!(out.text.contains("\"echo after\"}]},\n"), "{}", out.text);
    assert_eq!(
        installed("s.json", Syntax::Jsonc, &out.text, PREFIX)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        install("s.json", Syntax::Jsonc, Some(&out.text), &entries(), PREFIX).unwrap(),
        None
    );
    let Removed::Text(back) = uninstall("s.json", Syntax::Jsonc, &out.text, PREFIX)
        .unwrap()
        .unwrap()
    else {
        panic!("the user's settings are left");
    };
    assert_eq!(back, COMMENTED);
}

#[test]
fn comments_are_refused_where_the_runtime_reads_plain_json() {
    let err = install("s.json", Syntax::Json, Some(COMMENTED), &entries(), PREFIX).unwrap_err();
    assert!(
        err.message.starts_with("s.json is not valid JSON"),
        "{err:?}"
    );
    let err = install(
        "s.json",
        Syntax::Jsonc,
        Some("{\"a\": 1,, // x\n}"),
        &entries(),
        PREFIX,
    )
    .unwrap_err();
    assert!(
        err.message
            .starts_with("s.json is not valid JSON, with comments or without"),
        "{err:?}"
    );
}
