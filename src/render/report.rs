//! The report of an unattended stretch, as terminal text, Markdown (safe to
//! post: every piece of state text goes through [`markdown::text`], as in
//! `pr --markdown`) or a self-contained HTML page.

use std::fmt::Write as _;

use crate::ops::report::Report;
use crate::render::markdown;

pub fn report(r: &Report, md: bool) -> String {
    let code = |s: &str| super::review::id_text(s, md);
    let t = |s: &str| super::review::state_text(s, md);
    let h = |out: &mut String, level: usize, title: &str| {
        if md {
            let _ = writeln!(out, "\n{} {title}\n", "#".repeat(level + 1));
        } else if level == 1 {
            let _ = writeln!(out, "\n{title}");
        } else {
            let _ = writeln!(out, "\n  {title}:");
        }
    };
    let item = if md { "- " } else { "    " };
    let mut out = String::new();
    let from = match (&r.from, r.from_time) {
        (_, Some(at)) => format!("since {at}"),
        (Some(c), None) => format!("since {}", code(c.short())),
        (None, None) => "since the beginning".to_owned(),
    };
    if md {
        let _ = writeln!(out, "## git loopx report {from}");
    } else {
        let _ = writeln!(out, "git loopx report {from}");
    }
    let _ = writeln!(
        out,
        "\nAs of {}, state {} (`--since {}`).",
        r.now,
        code(r.tip.short()),
        t(&r.since)
    );
    for g in &r.goals {
        let v = &g.review;
        h(
            &mut out,
            1,
            &format!("Goal {}: {}", code(&v.goal), t(&v.objective)),
        );
        let flag = if v.default {
            String::new()
        } else {
            format!(" --goal {}", v.goal)
        };
        let _ = writeln!(
            out,
            "{} state commit(s); {} writeback(s), {} todo(s) done, {} failure(s); quota {} of {} slot(s) over {} h.",
            v.commits,
            v.delivered.len(),
            v.completed.len(),
            g.failures.len(),
            g.quota.spent,
            g.quota.allowance,
            g.quota.hours
        );

        h(&mut out, 2, "Waiting for you");
        if v.decisions.is_empty() && v.user_actions.is_empty() {
            let _ = writeln!(out, "{item}nothing");
        }
        for d in &v.decisions {
            let command = format!("git loopx{flag} gate resolve {} --approve|--reject", d.id);
            let _ = writeln!(
                out,
                "{item}gate {} {} — {}",
                code(&d.id),
                t(&d.text),
                code(&command)
            );
        }
        for a in &v.user_actions {
            let _ = writeln!(out, "{item}reminder {} {}", code(&a.id), t(&a.text));
        }

        h(&mut out, 2, "Delivered");
        if v.completed.is_empty() {
            let _ = writeln!(out, "{item}no todo done");
        }
        for d in &v.completed {
            let _ = writeln!(out, "{item}{}", super::review::completed(d, md));
        }
        for a in &v.answered {
            let _ = writeln!(out, "{item}answered {}", super::review::answered(a, md));
        }

        h(&mut out, 2, "Quota");
        let _ = writeln!(
            out,
            "{item}spent {} slot(s) in the range against {} allowed ({} every {} h); now {} of {} in the window{}",
            g.quota.spent,
            g.quota.allowance,
            g.quota.allowed_slots,
            g.quota.window_hours,
            g.quota.window_spent,
            g.quota.allowed_slots,
            if g.quota.throttled { ": throttled" } else { "" }
        );

        h(&mut out, 2, "Failures");
        if g.failures.is_empty() {
            let _ = writeln!(out, "{item}none");
        }
        for f in &g.failures {
            let why = match &f.validation {
                Some(v) if v.exit_code != 0 => {
                    format!("validation `{}` exited {}", v.command, v.exit_code)
                }
                _ => "no progress (outcome_gap)".to_owned(),
            };
            let _ = writeln!(
                out,
                "{item}{} on {} by {} at {}: {}: {}",
                code(&f.id),
                code(f.todo.as_deref().unwrap_or("the goal")),
                t(f.agent.as_deref().unwrap_or("?")),
                f.at,
                t(&why),
                t(f.summary.as_deref().unwrap_or(""))
            );
        }

        h(&mut out, 2, "Agents");
        if g.agents.is_empty() {
            let _ = writeln!(out, "{item}none active");
        }
        for a in &g.agents {
            let mut line = format!(
                "{} — {} writeback(s) on {} todo(s), {} failed",
                t(&a.id),
                a.writebacks,
                a.todos.len(),
                a.failures
            );
            if let Some(at) = a.last_writeback {
                let _ = write!(line, ", last at {at}");
            }
            if a.consecutive_failures > 0 {
                let _ = write!(line, "; {} failed turn(s) in a row", a.consecutive_failures);
            }
            if a.guard_releases > 0 {
                let _ = write!(line, "; {} loop-guard release(s)", a.guard_releases);
            }
            if !a.expired_leases.is_empty() {
                let _ = write!(line, "; {} lease(s) expired unused", a.expired_leases.len());
            }
            let _ = writeln!(out, "{item}{line}");
        }
    }
    if md {
        let whole = format!("git loopx report --since {} --markdown", r.since);
        return markdown::fit(&out, markdown::COMMENT_LIMIT, &whole);
    }
    out
}

/// The text report in a page of its own: escaped, no script, no style
/// from elsewhere.
pub fn html(r: &Report) -> String {
    let text = report(r, false);
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>git loopx report</title></head>\n<body><pre>{escaped}</pre></body></html>\n"
    )
}
