//! Keys in a TOML configuration (Codex's `.codex/config.toml`): a string
//! set at a key path, strings added to an array (the same [`Edit`]s as for
//! JSON, with string values), as pure functions over the file's text. `toml_edit` keeps the user's comments, order and layout
//! around our keys.
//!
//! Uninstalling takes out exactly what installing put in: the keys set
//! (ours by name), the items added; a table left empty by that goes too.

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::json_edit::{Edit, Op};
use super::runtime_json::{Installed, Removed};
use crate::model::Refusal;

/// A JSON string as TOML text: our keys hold only strings.
fn string_of(value: &serde_json::Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Whether `edit` is in `doc` already.
fn is_in(edit: &Edit, doc: &DocumentMut) -> bool {
    let mut at: &Item = doc.as_item();
    for key in &edit.path {
        match at.get(key) {
            Some(i) => at = i,
            None => return false,
        }
    }
    match &edit.op {
        Op::Set(v) => at.as_str() == Some(string_of(v)),
        Op::Union(items) => at.as_array().is_some_and(|a| {
            items
                .iter()
                .all(|i| a.iter().any(|x| x.as_str() == Some(string_of(i))))
        }),
    }
}

fn shown(edit: &Edit, depth: usize) -> String {
    format!("`{}`", edit.path[..depth].join("."))
}

fn parse(file: &str, text: &str) -> Result<DocumentMut, Refusal> {
    text.parse::<DocumentMut>().map_err(|e| {
        Refusal::invalid_input(format!(
            "{file} is not valid TOML: {}",
            e.to_string().trim()
        ))
        .with_hint(
            "fix the file (or move it away), then run the command again; nothing was written",
        )
    })
}

fn wrong(file: &str, at: &str, expected: &str) -> Refusal {
    Refusal::invalid_input(format!("{file}: {at} is not {expected}"))
        .with_hint("fix the file by hand, then run the command again; nothing was written")
}

/// The table holding the last key of `edit.path`, made (as a table of its
/// own, or inline where the user wrote it inline) when `create`.
fn parent<'a>(
    file: &str,
    doc: &'a mut DocumentMut,
    edit: &Edit,
    create: bool,
) -> Result<Option<&'a mut dyn toml_edit::TableLike>, Refusal> {
    let mut at: &mut dyn toml_edit::TableLike = doc.as_table_mut();
    for (depth, key) in edit.path[..edit.path.len() - 1].iter().enumerate() {
        if at.get(key).is_none() {
            if !create {
                return Ok(None);
            }
            let mut table = Table::new();
            table.set_implicit(true);
            at.insert(key, Item::Table(table));
        }
        at = match at.get_mut(key).expect("just made").as_table_like_mut() {
            Some(t) => t,
            None => return Err(wrong(file, &shown(edit, depth + 1), "a table")),
        };
    }
    Ok(Some(at))
}

pub fn install(
    file: &str,
    existing: Option<&str>,
    edits: &[Edit],
) -> Result<Option<Installed>, Refusal> {
    let mut doc = parse(file, existing.unwrap_or(""))?;
    if edits.iter().all(|e| is_in(e, &doc)) {
        return Ok(None);
    }
    for edit in edits {
        let key = edit.path.last().expect("paths are not empty").as_str();
        let table = parent(file, &mut doc, edit, true)?.expect("created");
        match &edit.op {
            Op::Set(v) => {
                table.insert(key, toml_edit::value(string_of(v)));
            }
            Op::Union(items) => {
                if table.get(key).is_none() {
                    table.insert(key, toml_edit::value(Array::new()));
                }
                let Some(list) = table.get_mut(key).and_then(Item::as_array_mut) else {
                    return Err(wrong(file, &shown(edit, edit.path.len()), "an array"));
                };
                for item in items.iter().map(string_of) {
                    if !list.iter().any(|x| x.as_str() == Some(item)) {
                        list.push(item);
                    }
                }
            }
        }
    }
    Ok(Some(Installed {
        text: doc.to_string(),
        reformatted: false,
    }))
}

pub fn uninstall(file: &str, text: &str, edits: &[Edit]) -> Result<Option<Removed>, Refusal> {
    let mut doc = parse(file, text)?;
    let mut changed = false;
    for edit in edits {
        let key = edit.path.last().expect("paths are not empty").as_str();
        let Some(table) = parent(file, &mut doc, edit, false)? else {
            continue;
        };
        match &edit.op {
            Op::Set(_) => changed |= table.remove(key).is_some(),
            Op::Union(items) => {
                let Some(list) = table.get_mut(key).and_then(Item::as_array_mut) else {
                    continue;
                };
                let had = list.len();
                list.retain(|x: &Value| {
                    !x.as_str()
                        .is_some_and(|s| items.iter().any(|i| string_of(i) == s))
                });
                if list.len() != had {
                    changed = true;
                    if list.is_empty() {
                        table.remove(key);
                    }
                }
            }
        }
        // Tables on the path that we emptied go too, innermost first.
        for depth in (1..edit.path.len()).rev() {
            let above = Edit {
                path: edit.path[..depth].to_vec(),
                op: edit.op.clone(),
            };
            let Some(table) = parent(file, &mut doc, &above, false)? else {
                continue;
            };
            let name = edit.path[depth - 1].as_str();
            if table
                .get(name)
                .and_then(Item::as_table_like)
                .is_some_and(|t| t.is_empty())
            {
                table.remove(name);
            }
        }
    }
    if !changed {
        return Ok(None);
    }
    let text = doc.to_string();
    if text.trim().is_empty() {
        return Ok(Some(Removed::Empty));
    }
    Ok(Some(Removed::Text(text)))
}

/// How many of `edits` have their key in the file (a `Set` with any value).
pub fn present_keys(file: &str, text: &str, edits: &[Edit]) -> Result<usize, Refusal> {
    let doc = parse(file, text)?;
    Ok(edits
        .iter()
        .filter(|e| match &e.op {
            Op::Set(_) => e
                .path
                .iter()
                .try_fold(doc.as_item(), |at, k| at.get(k))
                .is_some(),
            Op::Union(_) => is_in(e, &doc),
        })
        .count())
}

/// How many of `edits` are in the file (what the tests check an edit by).
#[cfg(test)]
fn present(file: &str, text: &str, edits: &[Edit]) -> Result<usize, Refusal> {
    let doc = parse(file, text)?;
    Ok(edits.iter().filter(|e| is_in(e, &doc)).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits() -> Vec<Edit> {
        vec![
            Edit::set(
                &["shell_environment_policy", "set", "LOOPX_AGENT"],
                "codex-a",
            ),
            Edit::union(&["sandbox_workspace_write", "writable_roots"], &["/r/.git"]),
        ]
    }

    #[test]
    fn install_keeps_the_users_config_and_uninstall_gives_it_back() {
        let user = "# mine\nmodel = \"m\"\n\n[sandbox_workspace_write]\nnetwork_access = true\n";
        let done = install("c.toml", Some(user), &edits()).unwrap().unwrap();
        let doc: DocumentMut = done.text.parse().unwrap();
        assert_eq!(
            doc["shell_environment_policy"]["set"]["LOOPX_AGENT"].as_str(),
            Some("codex-a")
        );
        assert_eq!(
            doc["sandbox_workspace_write"]["writable_roots"][0].as_str(),
            Some("/r/.git")
        );
        assert!(
            done.text.starts_with("# mine\nmodel = \"m\"\n"),
            "{}",
            done.text
        );
        assert_eq!(install("c.toml", Some(&done.text), &edits()).unwrap(), None);
        assert_eq!(present("c.toml", &done.text, &edits()).unwrap(), 2);
        let Removed::Text(back) = uninstall("c.toml", &done.text, &edits()).unwrap().unwrap()
        else {
            panic!("the user's keys are left")
        };
        assert_eq!(back, user);
    }

    #[test]
    fn ours_alone_empties_and_bad_toml_is_refused() {
        let done = install("c.toml", None, &edits()).unwrap().unwrap();
        assert_eq!(
            uninstall("c.toml", &done.text, &edits()).unwrap(),
            Some(Removed::Empty)
        );
        let err = install("c.toml", Some("x = ["), &edits()).unwrap_err();
        assert!(
            err.message.contains("c.toml is not valid TOML"),
            "{}",
            err.message
        );
        let err = install("c.toml", Some("shell_environment_policy = 1"), &edits()).unwrap_err();
        assert!(
            err.message.contains("`shell_environment_policy`"),
            "{}",
            err.message
        );
    }
}
