//! Settings that are not hooks, in a runtime's JSON configuration: a value
//! set at a key path (`env.LOOPX_AGENT`), and items added to an array
//! (`permissions.allow`), as pure functions over the file's text, with
//! [`runtime_json`]'s layout rules.
//!
//! Uninstalling takes out exactly what installing put in: the key set (it
//! is ours by name), the items added; an object or array left empty by
//! that goes too. Anything else in the file is the user's and stays.

use serde_json::{Map, Value};

use super::runtime_json::{parse, shape, Installed, Parsed, Removed, Syntax};
use crate::model::Refusal;

/// One change to a JSON configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    /// Object keys from the top.
    pub path: Vec<String>,
    pub op: Op,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The key at `path` holds this value.
    Set(Value),
    /// The array at `path` holds these items (among the user's).
    Union(Vec<Value>),
}

impl Edit {
    pub fn set(path: &[&str], value: impl Into<Value>) -> Edit {
        Edit {
            path: path.iter().map(|s| (*s).to_owned()).collect(),
            op: Op::Set(value.into()),
        }
    }

    pub fn union(path: &[&str], items: &[&str]) -> Edit {
        Edit {
            path: path.iter().map(|s| (*s).to_owned()).collect(),
            op: Op::Union(items.iter().map(|s| Value::from(*s)).collect()),
        }
    }

    fn shown(&self) -> String {
        format!("`{}`", self.path.join("."))
    }

    /// Whether the change is in `root` already.
    pub fn is_in(&self, root: &Value) -> bool {
        let mut at = root;
        for key in &self.path {
            match at.get(key) {
                Some(v) => at = v,
                None => return false,
            }
        }
        match &self.op {
            Op::Set(value) => at == value,
            Op::Union(items) => at
                .as_array()
                .is_some_and(|a| items.iter().all(|i| a.contains(i))),
        }
    }
}

/// The object that holds the last key of `edit.path`, made on the way when
/// `create`; refuses a non-object on the way.
fn parent<'a>(
    file: &str,
    root: &'a mut Value,
    edit: &Edit,
    create: bool,
) -> Result<Option<&'a mut Map<String, Value>>, Refusal> {
    let mut at = root;
    let (_, above) = edit.path.split_last().expect("paths are not empty");
    let mut walked = Vec::new();
    for key in above {
        walked.push(key.as_str());
        let map = at.as_object_mut().expect("checked below");
        if !map.contains_key(key) {
            if !create {
                return Ok(None);
            }
            map.insert(key.clone(), Value::Object(Map::new()));
        }
        at = map.get_mut(key).expect("just made");
        if !at.is_object() {
            let shown = format!("`{}`", walked.join("."));
            return Err(shape(file, &shown, at, "an object"));
        }
    }
    Ok(at.as_object_mut())
}

fn apply_one(file: &str, root: &mut Value, edit: &Edit) -> Result<(), Refusal> {
    let key = edit.path.last().expect("paths are not empty").clone();
    let map = parent(file, root, edit, true)?.expect("created");
    match &edit.op {
        Op::Set(value) => {
            map.insert(key, value.clone());
        }
        Op::Union(items) => {
            let list = map.entry(key).or_insert_with(|| Value::Array(Vec::new()));
            let Some(list) = list.as_array_mut() else {
                return Err(shape(file, &edit.shown(), list, "an array"));
            };
            for item in items {
                if !list.contains(item) {
                    list.push(item.clone());
                }
            }
        }
    }
    Ok(())
}

/// The file (`existing` = `None`: a new one) with every edit made, or `None`
/// when they are all in already.
pub fn install(
    file: &str,
    syntax: Syntax,
    existing: Option<&str>,
    edits: &[Edit],
) -> Result<Option<Installed>, Refusal> {
    let Parsed { mut value, style } = parse(file, existing.unwrap_or(""), syntax)?;
    if edits.iter().all(|e| e.is_in(&value)) {
        return Ok(None);
    }
    let reformatted = style.relays(&value, existing);
    for edit in edits {
        apply_one(file, &mut value, edit)?;
    }
    Ok(Some(Installed {
        text: style.render(file, &value)?,
        reformatted,
    }))
}

/// The file without our edits, or `None` when none of them is in it.
pub fn uninstall(
    file: &str,
    syntax: Syntax,
    text: &str,
    edits: &[Edit],
) -> Result<Option<Removed>, Refusal> {
    let Parsed { mut value, style } = parse(file, text, syntax)?;
    let mut changed = false;
    for edit in edits {
        let key = edit.path.last().expect("paths are not empty");
        let Some(map) = parent(file, &mut value, edit, false)? else {
            continue;
        };
        match &edit.op {
            Op::Set(_) => changed |= map.remove(key).is_some(),
            Op::Union(items) => {
                let Some(list) = map.get_mut(key).and_then(Value::as_array_mut) else {
                    continue;
                };
                let had = list.len();
                list.retain(|i| !items.contains(i));
                if list.len() != had {
                    changed = true;
                    if list.is_empty() {
                        map.remove(key);
                    }
                }
            }
        }
        // Objects on the path that we emptied go too, innermost first.
        for depth in (1..edit.path.len()).rev() {
            let prefix = Edit {
                path: edit.path[..=depth - 1].to_vec(),
                op: edit.op.clone(),
            };
            let Some(map) = parent(file, &mut value, &prefix, false)? else {
                continue;
            };
            let name = &edit.path[depth - 1];
            if map
                .get(name)
                .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
            {
                map.remove(name);
            }
        }
    }
    if !changed {
        return Ok(None);
    }
    if value.as_object().is_some_and(Map::is_empty) {
        return Ok(Some(Removed::Empty));
    }
    Ok(Some(Removed::Text(style.render(file, &value)?)))
}

/// How many of `edits` have their key in the file (a `Set` with any value:
/// another agent's identity is still an identity).
pub fn present_keys(
    file: &str,
    syntax: Syntax,
    text: &str,
    edits: &[Edit],
) -> Result<usize, Refusal> {
    let Parsed { value, .. } = parse(file, text, syntax)?;
    Ok(edits
        .iter()
        .filter(|e| match &e.op {
            Op::Set(_) => e.path.iter().try_fold(&value, |at, k| at.get(k)).is_some(),
            Op::Union(items) => {
                let found = e.path.iter().try_fold(&value, |at, k| at.get(k));
                let list = found.and_then(Value::as_array);
                items
                    .iter()
                    .all(|item| list.is_some_and(|l| l.iter().any(|x| same_entry(x, item))))
            }
        })
        .count())
}

/// `x` is `item`, or both are hook entries whose command is the same but for
/// the agent baked in (`… --agent A`).
fn same_entry(x: &Value, item: &Value) -> bool {
    let command = |v: &Value| v.get("command").and_then(Value::as_str).map(str::to_owned);
    match (command(x), command(item)) {
        (Some(a), Some(b)) => a.split(" --agent ").next() == b.split(" --agent ").next(),
        _ => x == item,
    }
}

/// How many of `edits` are in the file (what the tests check an edit by).
#[cfg(test)]
fn present(file: &str, syntax: Syntax, text: &str, edits: &[Edit]) -> Result<usize, Refusal> {
    let Parsed { value, .. } = parse(file, text, syntax)?;
    Ok(edits.iter().filter(|e| e.is_in(&value)).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits() -> Vec<Edit> {
        vec![
            Edit::set(&["env", "LOOPX_AGENT"], "claude-a"),
            Edit::union(&["permissions", "allow"], &["Bash(git loopx:*)"]),
        ]
    }

    #[test]
    fn install_then_uninstall_gives_back_the_users_settings() {
        let user = "{\n  \"env\": {\n    \"FOO\": \"1\"\n  },\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls:*)\"\n    ]\n  }\n}\n";
        let done = install("s.json", Syntax::Json, Some(user), &edits())
            .unwrap()
            .unwrap();
        assert!(!done.reformatted);
        let v: Value = serde_json::from_str(&done.text).unwrap();
        assert_eq!(v["env"]["LOOPX_AGENT"], "claude-a");
        assert_eq!(v["permissions"]["allow"][1], "Bash(git loopx:*)");
        assert_eq!(
            install("s.json", Syntax::Json, Some(&done.text), &edits()).unwrap(),
            None
        );
        assert_eq!(
            present("s.json", Syntax::Json, &done.text, &edits()).unwrap(),
            2
        );
        let Removed::Text(back) = uninstall("s.json", Syntax::Json, &done.text, &edits())
            .unwrap()
            .unwrap()
        else {
            panic!("the user's keys are left");
        };
        assert_eq!(back, user);
    }

    #[test]
    fn a_file_of_ours_alone_empties() {
        let done = install("s.json", Syntax::Json, None, &edits())
            .unwrap()
            .unwrap();
        assert_eq!(
            uninstall("s.json", Syntax::Json, &done.text, &edits()).unwrap(),
            Some(Removed::Empty)
        );
        assert_eq!(
            uninstall("s.json", Syntax::Json, "{}", &edits()).unwrap(),
            None
        );
    }

    #[test]
    fn a_wrong_shape_is_refused_with_its_path() {
        let err = install("s.json", Syntax::Json, Some("{\"env\": []}"), &edits()).unwrap_err();
        assert!(err.message.contains("s.json: `env` is"), "{}", err.message);
        let err = install(
            "s.json",
            Syntax::Json,
            Some("{\"permissions\": {\"allow\": 1}}"),
            &edits(),
        )
        .unwrap_err();
        assert!(
            err.message.contains("`permissions.allow`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_commented_file_gets_our_keys_and_gives_them_back() {
        let user = "{\n  // OpenCode's theme\n  \"theme\": \"dark\",\n  \"permission\": {\n    \"edit\": \"ask\", /* always */\n  },\n}\n";
        let ours = [
            Edit::set(&["permission", "bash", "git loopx *"], "allow"),
            Edit::set(&["permission", "bash", "git loopx"], "allow"),
        ];
        let done = install("o.jsonc", Syntax::Jsonc, Some(user), &ours)
            .unwrap()
            .unwrap();
        assert!(!done.reformatted);
        assert!(
            done.text.contains("    \"edit\": \"ask\", /* always */\n    \"bash\": {\n      \"git loopx *\": \"allow\",\n      \"git loopx\": \"allow\",\n    },\n"),
            "{}",
            done.text
        );
        assert_eq!(
            present("o.jsonc", Syntax::Jsonc, &done.text, &ours).unwrap(),
            2
        );
        let Removed::Text(back) = uninstall("o.jsonc", Syntax::Jsonc, &done.text, &ours)
            .unwrap()
            .unwrap()
        else {
            panic!("the user's keys are left");
        };
        assert_eq!(back, user);
    }
}
