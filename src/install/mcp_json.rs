//! Claude Code's project MCP configuration (`.mcp.json` at the project's
//! root): registering `git loopx mcp` as the server `loopx` and taking it
//! out again, as pure functions over the file's text.
//!
//! The file's shape is `{"mcpServers": {"<name>": {"command": …, "args":
//! […], …}, …}, …}`. Our entry is `mcpServers.loopx` running `git loopx mcp`;
//! nothing else is touched, and the file keeps its key order, indentation
//! and final newline ([`runtime_json`]'s layout rules). A `loopx` server
//! that runs something else is the user's: install refuses to replace it,
//! uninstall leaves it. A file that is not JSON, or not of that shape, is
//! refused with its path, and nothing is written.

use serde_json::{json, Map, Value};

use super::runtime_json::{self, Installed, Removed, Syntax};
use super::Baked;
use crate::model::Refusal;

/// The server's name in `mcpServers`.
pub const NAME: &str = "loopx";

/// Our entry: `git loopx mcp`, with `--agent ID` and `--goal ID` when given.
pub fn entry(baked: Baked) -> Value {
    let mut args = vec!["loopx", "mcp"];
    args.extend(baked.args());
    json!({ "command": "git", "args": args })
}

/// Whether `server` runs `git loopx mcp` (ours, whatever agent it names).
fn is_ours(server: &Value) -> bool {
    let args: Vec<&str> = server
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    server.get("command").and_then(Value::as_str) == Some("git")
        && args.starts_with(&["loopx", "mcp"])
}

/// The `mcpServers` object, checked; `None` when the file has none.
fn servers<'a>(
    path: &str,
    root: &'a mut Value,
) -> Result<Option<&'a mut Map<String, Value>>, Refusal> {
    let Some(servers) = root.get_mut("mcpServers") else {
        return Ok(None);
    };
    if !servers.is_object() {
        return Err(runtime_json::shape(
            path,
            "`mcpServers`",
            servers,
            "an object of servers",
        ));
    }
    Ok(servers.as_object_mut())
}

/// The file with our server in it (`existing` = `None`: a new file), or
/// `None` when it is there already.
pub fn install(
    path: &str,
    existing: Option<&str>,
    server: &Value,
) -> Result<Option<Installed>, Refusal> {
    let parsed = runtime_json::parse(path, existing.unwrap_or(""), Syntax::Json)?;
    let (mut value, style) = (parsed.value, parsed.style);
    let reformatted = style.relays(&value, existing);
    if servers(path, &mut value)?.is_none() {
        let root = value.as_object_mut().expect("checked to be an object");
        root.insert("mcpServers".to_owned(), Value::Object(Map::new()));
    }
    let servers = servers(path, &mut value)?.expect("just made");
    match servers.get(NAME) {
        Some(current) if current == server => return Ok(None),
        Some(current) if !is_ours(current) => {
            return Err(Refusal::invalid_input(format!(
                "{path}: `mcpServers.{NAME}` is a server of yours, not `git loopx mcp`"
            ))
            .with_hint("rename or remove it, then run the command again; nothing was written"))
        }
        // Ours with another agent baked in is replaced in place.
        _ => {
            servers.insert(NAME.to_owned(), server.clone());
        }
    }
    Ok(Some(Installed {
        text: style.render(path, &value)?,
        reformatted,
    }))
}

/// The file without our server, or `None` when it has none; an empty
/// `mcpServers` goes too.
pub fn uninstall(path: &str, text: &str) -> Result<Option<Removed>, Refusal> {
    let parsed = runtime_json::parse(path, text, Syntax::Json)?;
    let (mut value, style) = (parsed.value, parsed.style);
    let Some(servers) = servers(path, &mut value)? else {
        return Ok(None);
    };
    if !servers.get(NAME).is_some_and(is_ours) {
        return Ok(None);
    }
    servers.remove(NAME);
    let emptied = servers.is_empty();
    let root = value.as_object_mut().expect("checked to be an object");
    if emptied {
        root.remove("mcpServers");
    }
    if root.is_empty() {
        return Ok(Some(Removed::Empty));
    }
    Ok(Some(Removed::Text(style.render(path, &value)?)))
}

/// Our server's command line, when the file has it (`git loopx mcp …`).
pub fn installed(path: &str, text: &str) -> Result<Option<String>, Refusal> {
    let mut value = runtime_json::parse(path, text, Syntax::Json)?.value;
    let Some(server) = servers(path, &mut value)?.and_then(|s| s.get(NAME).cloned()) else {
        return Ok(None);
    };
    if !is_ours(&server) {
        return Ok(None);
    }
    let args: Vec<&str> = server["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    Ok(Some(format!("git {}", args.join(" "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(agent: Option<&str>) -> Value {
        entry(Baked { agent, goal: None })
    }

    #[test]
    fn a_new_file_holds_our_server_and_goes_on_uninstall() {
        let out = install("f", None, &ours(None)).unwrap().unwrap();
        assert_eq!(
            out.text,
            "{\n  \"mcpServers\": {\n    \"loopx\": {\n      \"command\": \"git\",\n      \"args\": [\n        \"loopx\",\n        \"mcp\"\n      ]\n    }\n  }\n}\n"
        );
        assert_eq!(install("f", Some(&out.text), &ours(None)).unwrap(), None);
        assert_eq!(
            installed("f", &out.text).unwrap().as_deref(),
            Some("git loopx mcp")
        );
        assert_eq!(uninstall("f", &out.text).unwrap(), Some(Removed::Empty));
    }

    #[test]
    fn the_users_servers_and_settings_are_kept_in_order() {
        let user = "{\n    \"mcpServers\": {\n        \"docs\": {\"command\": \"docs-mcp\"}\n    },\n    \"other\": 1\n}\n";
        let out = install("f", Some(user), &ours(Some("agent-a")))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&out.text).unwrap();
        assert_eq!(value["mcpServers"]["docs"]["command"], "docs-mcp");
        assert_eq!(
            value["mcpServers"]["loopx"]["args"],
            json!(["loopx", "mcp", "--agent", "agent-a"])
        );
        let keys: Vec<&String> = value["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["docs", "loopx"]);
        assert!(
            out.text.contains("\n    \"other\": 1\n"),
            "indentation kept: {}",
            out.text
        );
        // Another agent replaces ours in place.
        let again = install("f", Some(&out.text), &ours(Some("agent-b")))
            .unwrap()
            .unwrap();
        assert!(again.text.contains("agent-b") && !again.text.contains("agent-a"));
        let Some(Removed::Text(left)) = uninstall("f", &again.text).unwrap() else {
            panic!("the user's server stays");
        };
        let left: Value = serde_json::from_str(&left).unwrap();
        assert_eq!(
            left,
            json!({"mcpServers": {"docs": {"command": "docs-mcp"}}, "other": 1})
        );
    }

    #[test]
    fn a_loopx_server_of_the_users_and_bad_files_are_refused() {
        let theirs = r#"{"mcpServers": {"loopx": {"command": "loopx-fork"}}}"#;
        let err = install("f", Some(theirs), &ours(None)).unwrap_err();
        assert!(err.message.contains("server of yours"), "{}", err.message);
        assert_eq!(uninstall("f", theirs).unwrap(), None);
        let err = install("f", Some("{\"mcpServers\": []}"), &ours(None)).unwrap_err();
        assert!(
            err.message.contains("`mcpServers` is an array"),
            "{}",
            err.message
        );
        let err = install("f", Some("{not json"), &ours(None)).unwrap_err();
        assert!(err.message.contains("not valid JSON"), "{}", err.message);
    }
}
