//! Reports → output: the `--json` envelope, errors, and human text.

pub mod check;
pub mod diff;
pub mod goal;
pub mod help;
pub mod hooks;
#[cfg(feature = "import-loopx")]
pub mod import;
pub mod markdown;
pub mod pr;
pub mod report;
pub mod review;
pub mod run;
pub mod style;
pub mod text;

use serde_json::{json, Map, Value};

use crate::Error;

/// `{"ok": true, …report}`; with a `failure`, `ok` is false and `error` is set.
pub fn ok_json(report: Value, failure: Option<&Error>) -> Value {
    let mut map = Map::new();
    map.insert("ok".into(), Value::Bool(failure.is_none()));
    if let Some(err) = failure {
        map.insert("error".into(), error_object(err, None));
    }
    match report {
        Value::Object(fields) => map.extend(fields),
        other => {
            map.insert("result".into(), other);
        }
    }
    Value::Object(map)
}

fn error_object(err: &Error, detail: Option<String>) -> Value {
    // Every error has the same keys: `hint` and `detail` are null when
    // there is none (a usage error's detail is clap's whole text).
    json!({
        "code": err.code().as_str(),
        "message": err.to_string(),
        "hint": err.hint(),
        "detail": detail,
    })
}

/// `{"ok": false, "error": {"code", "message", "hint", "detail"}}`.
pub fn error_json(err: &Error, detail: Option<String>) -> Value {
    json!({ "ok": false, "error": error_object(err, detail) })
}

/// `error[code]: message` and, when there is one, `hint: …`.
pub fn error_text(err: &Error) -> String {
    let mut out = format!("error[{}]: {err}\n", err.code());
    if let Some(hint) = err.hint() {
        out.push_str(&format!("hint: {hint}\n"));
    }
    out
}

/// State text (an agent's summary, a todo's text, a question) for one line
/// of terminal output: a line break is shown as `\n`, so the text can never
/// print a line of its own that reads as the tool's ("Decisions waiting for
/// you: none"). Markdown output uses [`markdown::text`] instead.
pub fn oneline(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.replace("\r\n", "\\n")
            .replace('\n', "\\n")
            .replace('\r', "\\r"),
    )
}

/// `text` with every control character but newline and tab, and every
/// invisible direction or width character, shown as an escape (`\u{1b}`):
/// text written by agents or pulled from a peer can then neither clear the
/// screen, set the terminal's title, rewrite a line with a carriage return,
/// nor reorder what a reader sees. JSON output is escaped by its encoder.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    escape_unsafe(text, |c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    })
}

/// [`terminal_safe`] for Markdown (`--markdown`): the zero-width space that
/// [`markdown::text`] puts after `@` and `#` (so no one is mentioned) is
/// kept as it is; everything else is escaped the same way.
pub fn markdown_safe(text: &str) -> std::borrow::Cow<'_, str> {
    escape_unsafe(text, |c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    })
}

fn escape_unsafe(text: &str, unsafe_char: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(&unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn terminal_safe_escapes_controls_and_keeps_layout() {
        let hostile = "ok\tline\n\x1b[2J\x1b]0;pwned\x07\rover\u{202e}txt";
        assert_eq!(
            super::terminal_safe(hostile),
            "ok\tline\n\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{d}over\\u{202e}txt"
        );
        assert!(matches!(
            super::terminal_safe("plain text\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
