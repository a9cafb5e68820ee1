//! A handoff packet as lines of text, shared by `prompt` (the receiver's
//! turn) and `review`.

use std::fmt::Write as _;

use crate::model::handoff::Handoff;

/// The packet's sections, each line starting with `indent`; `t` renders a
/// piece of agent-written text (Markdown escaping, or nothing).
pub fn packet(h: &Handoff, indent: &str, t: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    if let Some(s) = &h.work_summary {
        let _ = writeln!(out, "{indent}Work done so far:");
        for line in s.lines() {
            let _ = writeln!(out, "{indent}  {}", t(line));
        }
    }
    if !h.approaches_tried.is_empty() {
        let _ = writeln!(out, "{indent}Tried, and why it did not work:");
        for a in &h.approaches_tried {
            match &a.reason {
                Some(r) => {
                    let _ = writeln!(out, "{indent}- {}: {}", t(&a.approach), t(r));
                }
                None => {
                    let _ = writeln!(out, "{indent}- {}", t(&a.approach));
                }
            }
        }
    }
    if !h.next_steps.is_empty() {
        let _ = writeln!(out, "{indent}Next steps:");
        for (i, s) in h.next_steps.iter().enumerate() {
            let _ = writeln!(out, "{indent}{}. {}", i + 1, t(s));
        }
    }
    if !h.open_questions.is_empty() {
        let _ = writeln!(out, "{indent}Open questions:");
        for q in &h.open_questions {
            let _ = writeln!(out, "{indent}- {}", t(q));
        }
    }
    if !h.files.is_empty() {
        let _ = writeln!(out, "{indent}Files to read:");
        for f in &h.files {
            let _ = writeln!(out, "{indent}- {}", t(f));
        }
    }
    out
}
