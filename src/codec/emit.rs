//! The canonical YAML writer.
//!
//! We parse YAML with a library but write it ourselves, so that the bytes of a
//! file depend only on the entity: fixed key order (the order of the struct's
//! fields, then unknown fields), two-space indentation, and every string that a
//! YAML 1.1 or 1.2 reader could take for something else (`yes`, `on`, `0755`,
//! `2026-01-01`, `~`) quoted. Input is a `serde_json::Value` built with
//! `preserve_order`, which is how the codec carries field order here.

use serde_json::{Map, Value};

/// Writes a top-level mapping as a YAML document (no `---`, trailing newline).
pub fn document(map: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(256);
    mapping(map, 0, &mut out);
    out
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn mapping(map: &Map<String, Value>, indent: usize, out: &mut String) {
    for (key, value) in map {
        pad(out, indent);
        out.push_str(&scalar_string(key));
        out.push(':');
        nested(value, indent, out);
    }
}

/// Writes what follows `key:` or `-`: an inline scalar, or a nested block.
fn nested(value: &Value, indent: usize, out: &mut String) {
    match value {
        Value::Object(m) if m.is_empty() => out.push_str(" {}\n"),
        Value::Array(a) if a.is_empty() => out.push_str(" []\n"),
        Value::Object(m) => {
            out.push('\n');
            mapping(m, indent + 2, out);
        }
        Value::Array(items) => {
            out.push('\n');
            sequence(items, indent + 2, out);
        }
        Value::String(s) if block_literal_ok(s) => {
            out.push_str(" |");
            out.push_str(chomping(s));
            out.push('\n');
            for line in s.trim_end_matches('\n').split('\n') {
                if !line.is_empty() {
                    pad(out, indent + 2);
                    out.push_str(line);
                }
                out.push('\n');
            }
            for _ in 1..s.len() - s.trim_end_matches('\n').len() {
                out.push('\n');
            }
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

fn sequence(items: &[Value], indent: usize, out: &mut String) {
    for item in items {
        match item {
            Value::Object(m) if !m.is_empty() => {
                // The first key goes on the dash line; the rest align under it.
                let mut block = String::new();
                mapping(m, indent + 2, &mut block);
                pad(out, indent);
                out.push_str("- ");
                out.push_str(&block[indent + 2..]);
            }
            other => {
                pad(out, indent);
                out.push('-');
                nested(other, indent, out);
            }
        }
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => scalar_string(s),
        Value::Array(_) | Value::Object(_) => unreachable!("collections are written as blocks"),
    }
}

/// Floats always carry a `.` and a signed exponent, which YAML 1.1 requires.
fn number(n: &serde_json::Number) -> String {
    let text = n.to_string();
    if n.is_f64() && !text.contains('.') {
        return match text.split_once('e') {
            Some((mantissa, exp)) => {
                let exp = if exp.starts_with(['-', '+']) {
                    exp.to_owned()
                } else {
                    format!("+{exp}")
                };
                format!("{mantissa}.0e{exp}")
            }
            None => format!("{text}.0"),
        };
    }
    text
}

fn chomping(s: &str) -> &'static str {
    let trailing = s.len() - s.trim_end_matches('\n').len();
    match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    }
}

/// Multi-line text reads best as a literal block, when it can be one exactly.
fn block_literal_ok(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\t', '\n'])
        && s.chars().all(|c| c == '\n' || is_printable(c))
        && !s.trim_end_matches('\n').is_empty()
}

/// Characters that must be escaped: controls, and those YAML readers treat
/// as line breaks or byte-order marks (NEL, LS, PS, BOM) or as non-printable.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
}

fn is_printable(c: char) -> bool {
    c == '\t' || !needs_escape(c)
}

/// A YAML double-quoted scalar with every unsafe character escaped.
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A string as a scalar: plain when unambiguous, else quoted.
pub fn scalar_string(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_owned()
    } else if !s.contains('\n') && s.chars().all(|c| is_printable(c) && c != '\t') {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        double_quoted(s)
    }
}

const RESERVED: &[&str] = &[
    "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", "=", "<<", "inf", "infinity",
    "nan",
];

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if first.is_ascii_digit() || "-?:,[]{}#&*!|>'\"%@`+. \t".contains(first) {
        return false;
    }
    if s.ends_with([' ', '\t', ':']) || s.contains(": ") || s.contains(" #") {
        return false;
    }
    if !s.chars().all(|c| is_printable(c) && c != '\t') {
        return false;
    }
    !RESERVED.contains(&s.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> String {
        document(v.as_object().unwrap())
    }

    #[test]
    fn quotes_what_readers_would_misread() {
        for s in [
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "~",
            "null",
            "0755",
            "1.5",
            "2026-01-01",
            "",
            " x",
            "a: b",
            "-x",
            ".inf",
            "#c",
        ] {
            assert_ne!(scalar_string(s), s, "{s:?} must be quoted");
        }
        for s in ["main", "todo_3f2a9c1b7d4e", "ship the parser", "a-b", "x:y"] {
            assert_eq!(scalar_string(s), s);
        }
        assert_eq!(scalar_string("it's"), "it's");
        assert_eq!(scalar_string("'q'"), "'''q'''");
        assert_eq!(scalar_string("tab\there"), "\"tab\\there\"");
    }

    #[test]
    fn layout() {
        let text = doc(json!({
            "id": "g",
            "list": ["a", "yes"],
            "empty": [],
            "nested": {"k": 1, "f": 1.0, "e": 1e20},
            "notes": [{"at": "2026-01-01T00:00:00Z", "text": "one\ntwo\n"}],
            "multi": "line one\nline two",
        }));
        assert_eq!(
            text,
            "id: g\nlist:\n  - a\n  - 'yes'\nempty: []\nnested:\n  k: 1\n  f: 1.0\n  e: 1.0e+20\nnotes:\n  - at: '2026-01-01T00:00:00Z'\n    text: |\n      one\n      two\nmulti: |-\n  line one\n  line two\n"
        );
    }
}
