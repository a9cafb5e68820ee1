//! Reports → output: the `--json` envelope, errors, and human text.

pub mod prompt;
pub mod review;
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
    let mut obj = json!({
        "code": err.code().as_str(),
        "message": err.to_string(),
        "hint": err.hint(),
    });
    if let Some(detail) = detail {
        obj["detail"] = Value::String(detail);
    }
    obj
}

/// `{"ok": false, "error": {"code", "message", "hint"}}`.
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
