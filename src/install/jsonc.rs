//! Commented JSON (JSONC: `//` and `/* */` comments, trailing commas), as
//! OpenCode reads `opencode.json` and `opencode.jsonc` and Gemini CLI reads
//! `.gemini/settings.json`: a file's value, and a changed value written back
//! into the file's own text, as pure functions.
//!
//! Only what changed is rewritten, in the file's concrete syntax tree
//! (jsonc-parser's CST): a key added or taken out, an item added to or taken
//! from an array, a value replaced. The user's comments, other keys, their
//! order, the indentation and trailing commas stay; a new value is laid out
//! as its neighbours are. What is written is read back and must be the value
//! asked for, else [`rewrite`] gives nothing (and nothing is written).

use jsonc_parser::cst::{CstContainerNode, CstInputValue, CstLeafNode, CstNode, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

/// JSONC as those runtimes read it: JSON with comments and trailing
/// commas, nothing looser (no single quotes, bare keys, hex numbers).
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The value of a JSONC text (`None` when it holds none: only comments),
/// or what is wrong with it.
pub fn parse(text: &str) -> Result<Option<Value>, String> {
    let root = CstRootNode::parse(text, &options()).map_err(|e| e.to_string())?;
    Ok(root.value().and_then(|v| v.to_serde_value()))
}

/// The comments of a JSONC text, in order; `None` when it is not JSONC.
pub fn comments(text: &str) -> Option<Vec<String>> {
    fn walk(node: &CstNode, out: &mut Vec<String>) {
        if let Some(comment) = node.as_comment() {
            out.push(comment.to_string());
        }
        for child in node.children() {
            walk(&child, out);
        }
    }
    let root = CstRootNode::parse(text, &options()).ok()?;
    let mut out = Vec::new();
    for child in root.children() {
        walk(&child, &mut out);
    }
    Some(out)
}

/// `text` (JSONC) holding `value` instead of its own, with only the parts
/// that differ rewritten; `None` when it is not JSONC, or when what would
/// be written does not read back as `value`.
pub fn rewrite(text: &str, value: &Value) -> Option<String> {
    let root = CstRootNode::parse(text, &options()).ok()?;
    match root.value() {
        Some(node) => {
            let old = node.to_serde_value()?;
            patch(node, &old, value);
        }
        None => root.set_value(input(value)),
    }
    let out = root.to_string();
    (parse(&out).ok()?.as_ref() == Some(value)).then_some(out)
}

/// Makes `node` (whose value is `old`) hold `new`, rewriting only what
/// differs.
fn patch(node: CstNode, old: &Value, new: &Value) {
    if old == new {
        return;
    }
    match (old, new, &node) {
        (
            Value::Object(old),
            Value::Object(new),
            CstNode::Container(CstContainerNode::Object(o)),
        ) => patch_object(o, old, new),
        (Value::Array(old), Value::Array(new), CstNode::Container(CstContainerNode::Array(a))) => {
            patch_array(a, old, new)
        }
        _ => replace(node, new),
    }
}

fn patch_object(
    object: &jsonc_parser::cst::CstObject,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
) {
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        if let Some(prop) = object.get(key) {
            prop.remove();
        }
    }
    for (i, (key, value)) in new.iter().enumerate() {
        match (old.get(key), object.get(key)) {
            (Some(was), Some(prop)) => {
                if let Some(node) = prop.value() {
                    patch(node, was, value);
                }
            }
            _ => {
                // Right after the nearest key before it that is in the file.
                let at = new
                    .keys()
                    .take(i)
                    .rev()
                    .find_map(|k| object.get(k))
                    .map_or(0, |p| p.property_index() + 1);
                object.insert(at, key, input(value));
            }
        }
    }
}

fn patch_array(array: &jsonc_parser::cst::CstArray, old: &[Value], new: &[Value]) {
    let nodes = array.elements();
    if nodes.len() != old.len() {
        return replace(array.clone().into(), &Value::Array(new.to_vec()));
    }
    let kept = align(old, new);
    for (i, node) in nodes.iter().enumerate() {
        if !kept.iter().any(|&(o, _)| o == i) {
            node.clone().remove();
        }
    }
    for &(o, n) in &kept {
        patch(nodes[o].clone(), &old[o], &new[n]);
    }
    for (n, value) in new.iter().enumerate() {
        if !kept.iter().any(|&(_, k)| k == n) {
            // The elements before it in `new` are all there by now.
            array.insert(n, input(value));
        }
    }
}

/// Which elements of `old` stay as which of `new` (pairs of indices, in
/// order of both): the longest run of equal ones, and between two of them
/// objects (or arrays) at the same place, which are then edited rather than
/// replaced, so the comments in them stay.
fn align(old: &[Value], new: &[Value]) -> Vec<(usize, usize)> {
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut kept = Vec::new();
    let same_kind =
        |a: &Value, b: &Value| (a.is_object() && b.is_object()) || (a.is_array() && b.is_array());
    let gap = |kept: &mut Vec<(usize, usize)>, from: (usize, usize), to: (usize, usize)| {
        for (o, n) in (from.0..to.0).zip(from.1..to.1) {
            if same_kind(&old[o], &new[n]) {
                kept.push((o, n));
            }
        }
    };
    let (mut i, mut j) = (0, 0);
    let mut from = (0, 0);
    while i < n && j < m {
        if old[i] == new[j] && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            gap(&mut kept, from, (i, j));
            kept.push((i, j));
            i += 1;
            j += 1;
            from = (i, j);
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    gap(&mut kept, from, (n, m));
    kept
}

/// Puts `value` where `node` is.
fn replace(node: CstNode, value: &Value) {
    let value = input(value);
    match node {
        CstNode::Container(CstContainerNode::Object(n)) => drop(n.replace_with(value)),
        CstNode::Container(CstContainerNode::Array(n)) => drop(n.replace_with(value)),
        CstNode::Leaf(CstLeafNode::StringLit(n)) => drop(n.replace_with(value)),
        CstNode::Leaf(CstLeafNode::NumberLit(n)) => drop(n.replace_with(value)),
        CstNode::Leaf(CstLeafNode::BooleanLit(n)) => drop(n.replace_with(value)),
        CstNode::Leaf(CstLeafNode::NullKeyword(n)) => drop(n.replace_with(value)),
        CstNode::Leaf(CstLeafNode::WordLit(n)) => drop(n.replace_with(value)),
        // Not a value: the read-back in `rewrite` refuses the result.
        _ => {}
    }
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const USER: &str = "{\n  // the model we pay for\n  \"model\": \"a/b\",\n  /* keep this\n     list short */\n  \"plugin\": [\"x\", \"y\",],\n  \"permission\": {\n    \"edit\": \"ask\", // never allow\n  },\n}\n";

    #[test]
    fn unchanged_is_byte_for_byte() {
        let value = parse(USER).unwrap().unwrap();
        assert_eq!(rewrite(USER, &value).unwrap(), USER);
    }

    #[test]
    fn a_key_in_and_out_again_keeps_the_comments() {
        let mut value = parse(USER).unwrap().unwrap();
        value["permission"]["bash"] = json!({"git loopx *": "allow"});
        let with = rewrite(USER, &value).unwrap();
        assert!(with.contains("// never allow"), "{with}");
        assert!(with.contains("/* keep this\n     list short */"), "{with}");
        assert!(
            with.contains("    \"bash\": {\n      \"git loopx *\": \"allow\",\n    },\n"),
            "{with}"
        );
        value["permission"]
            .as_object_mut()
            .unwrap()
            .shift_remove("bash");
        assert_eq!(rewrite(&with, &value).unwrap(), USER);
    }

    #[test]
    fn array_items_come_and_go_in_place() {
        let text = "[\n  // first\n  {\"a\": 1, /* one */ \"b\": [1, 2]},\n  \"z\"\n]\n";
        let new = json!([{"a": 1, "b": [1, 2, 3]}, "q", "z"]);
        let out = rewrite(text, &new).unwrap();
        assert!(
            out.contains("// first") && out.contains("/* one */"),
            "{out}"
        );
        assert_eq!(parse(&out).unwrap().unwrap(), new);
        let back = rewrite(&out, &json!([{"a": 1, "b": [1, 2]}, "z"])).unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn not_jsonc_is_an_error_and_comments_are_listed() {
        assert!(parse("{\"a\": 1 // open\n").is_err());
        assert!(parse("{'a': 1}").is_err());
        assert_eq!(parse("// nothing\n").unwrap(), None);
        assert_eq!(
            comments(USER).unwrap(),
            [
                "// the model we pay for",
                "/* keep this\n     list short */",
                "// never allow"
            ]
        );
    }
}
