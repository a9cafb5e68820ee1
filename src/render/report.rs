//! The report of an unattended stretch, as terminal text, Markdown (safe to
//! post: every piece of state text goes through [`markdown::text`], as in
//! `pr --markdown`) or a self-contained HTML page that reads on a phone.
//!
//! The three are one document ([`Doc`]) written three ways: what the state
//! says (text an agent or a person wrote) and what git-loopx names (ids,
//! commits, commands) are kept apart to the end, so each form escapes each
//! as it must. Each list shows at most `limit` items, then says how many
//! more there are.

use std::fmt::Write as _;

use crate::ops::report::{GoalReport, Report};
use crate::render::markdown;

/// A piece of a line: state text, or something git-loopx names.
enum Piece {
    Text(String),
    Code(String),
    /// Words of our own.
    Plain(String),
}

type Line = Vec<Piece>;

fn text(s: impl Into<String>) -> Piece {
    Piece::Text(s.into())
}
fn code(s: impl Into<String>) -> Piece {
    Piece::Code(s.into())
}
fn plain(s: impl Into<String>) -> Piece {
    Piece::Plain(s.into())
}

struct Section {
    title: &'static str,
    /// What an empty list says.
    empty: &'static str,
    items: Vec<Line>,
}

struct GoalDoc {
    title: Line,
    summary: Line,
    sections: Vec<Section>,
}

struct Doc {
    title: String,
    lead: Line,
    goals: Vec<GoalDoc>,
    /// The command that shows every item.
    whole: String,
}

/// How a form writes each kind of piece.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    Text,
    Markdown,
    Html,
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn write_line(line: &Line, form: Form) -> String {
    let mut out = String::new();
    for piece in line {
        match (piece, form) {
            (Piece::Text(s), Form::Text) => out.push_str(&crate::render::oneline(s)),
            (Piece::Code(s) | Piece::Plain(s), Form::Text) => out.push_str(s),
            (Piece::Text(s), Form::Markdown) => out.push_str(&markdown::text(s)),
            (Piece::Code(s), Form::Markdown) => out.push_str(&markdown::code(s)),
            (Piece::Plain(s), Form::Markdown) => out.push_str(s),
            (Piece::Text(s) | Piece::Plain(s), Form::Html) => {
                out.push_str(&escape_html(&crate::render::oneline(s)))
            }
            (Piece::Code(s), Form::Html) => {
                let _ = write!(out, "<code>{}</code>", escape_html(s));
            }
        }
    }
    out
}

/// The report as text (`md`: Markdown), each list cut at `limit` items
/// (0: no cut).
pub fn report(r: &Report, md: bool, limit: usize) -> String {
    let doc = doc(r, limit);
    let form = if md { Form::Markdown } else { Form::Text };
    let mut out = String::new();
    if md {
        let _ = writeln!(out, "## {}", doc.title);
    } else {
        let _ = writeln!(out, "{}", doc.title);
    }
    let _ = writeln!(out, "\n{}", write_line(&doc.lead, form));
    let item = if md { "- " } else { "    " };
    for g in &doc.goals {
        if md {
            let _ = writeln!(out, "\n## {}\n", write_line(&g.title, form));
        } else {
            let _ = writeln!(out, "\n{}", write_line(&g.title, form));
        }
        let _ = writeln!(out, "{}", write_line(&g.summary, form));
        for s in &g.sections {
            if md {
                let _ = writeln!(out, "\n### {}\n", s.title);
            } else {
                let _ = writeln!(out, "\n  {}:", s.title);
            }
            if s.items.is_empty() {
                let _ = writeln!(out, "{item}{}", s.empty);
            }
            for line in &s.items {
                let _ = writeln!(out, "{item}{}", write_line(line, form));
            }
        }
    }
    if md {
        return markdown::fit(&out, markdown::COMMENT_LIMIT, &doc.whole);
    }
    out
}

/// The page's style: one column that wraps every word, so nothing is
/// wider than a phone's screen.
pub const STYLE: &str = "body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;padding:0 12px;\
max-width:48rem;overflow-wrap:anywhere;word-break:break-word}\
h1{font-size:1.3rem}h2{font-size:1.15rem;border-top:1px solid #ccc;padding-top:.6rem}\
h3{font-size:1rem;margin-bottom:.2rem}ul{padding-left:1.1rem;margin-top:.2rem}\
li{margin:.15rem 0}code{font-size:.9em;background:#f2f2f2;padding:0 .2em;word-break:break-all}\
.lead,.summary{color:#333}";

/// The report as a page of its own: every piece escaped, no script, its
/// one style inline (marked with `nonce` when a server sends a policy
/// that asks for one).
pub fn html(r: &Report, limit: usize, nonce: Option<&str>) -> String {
    let doc = doc(r, limit);
    let form = Form::Html;
    let mut out = String::new();
    let nonce = nonce.map_or_else(String::new, |n| format!(" nonce=\"{}\"", escape_html(n)));
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style{nonce}>{STYLE}</style></head>\n<body>\n",
        escape_html(&doc.title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", escape_html(&doc.title));
    let _ = writeln!(out, "<p class=\"lead\">{}</p>", write_line(&doc.lead, form));
    for g in &doc.goals {
        let _ = writeln!(out, "<section>\n<h2>{}</h2>", write_line(&g.title, form));
        let _ = writeln!(
            out,
            "<p class=\"summary\">{}</p>",
            write_line(&g.summary, form)
        );
        for s in &g.sections {
            let _ = writeln!(out, "<h3>{}</h3>\n<ul>", escape_html(s.title));
            if s.items.is_empty() {
                let _ = writeln!(out, "<li>{}</li>", escape_html(s.empty));
            }
            for line in &s.items {
                let _ = writeln!(out, "<li>{}</li>", write_line(line, form));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("</section>\n");
    }
    out.push_str("</body></html>\n");
    out
}

fn doc(r: &Report, limit: usize) -> Doc {
    let title = match (&r.from, r.from_time) {
        (_, Some(at)) => format!("git loopx report since {at}"),
        (Some(c), None) => format!("git loopx report since {}", c.short()),
        (None, None) => "git loopx report since the beginning".to_owned(),
    };
    let limit_flag = if limit == 0 {
        String::new()
    } else {
        " --limit 0".to_owned()
    };
    let whole = format!("git loopx report --since {}{limit_flag}", r.since);
    let lead = vec![
        plain(format!("As of {}, state ", r.now)),
        code(r.tip.short()),
        plain(" ("),
        code(format!("--since {}", r.since)),
        plain(")."),
    ];
    let goals = r.goals.iter().map(|g| goal_doc(g, limit, &whole)).collect();
    Doc {
        title,
        lead,
        goals,
        whole,
    }
}

fn section(
    title: &'static str,
    empty: &'static str,
    mut items: Vec<Line>,
    limit: usize,
    whole: &str,
) -> Section {
    if limit > 0 && items.len() > limit {
        let more = items.len() - limit;
        items.truncate(limit);
        items.push(vec![
            plain(format!("and {more} more (")),
            code(whole),
            plain(")"),
        ]);
    }
    Section {
        title,
        empty,
        items,
    }
}

fn goal_doc(g: &GoalReport, limit: usize, whole: &str) -> GoalDoc {
    let v = &g.review;
    let title = vec![
        plain("Goal "),
        code(&v.goal),
        plain(": "),
        text(&v.objective),
    ];
    let summary = vec![plain(format!(
        "{} state commit(s); {} writeback(s), {} todo(s) done, {} failure(s); quota {} of {} slot(s) over {} h.",
        v.commits,
        v.delivered.len(),
        v.completed.len(),
        g.failures.len() + g.failed_turns.len(),
        g.quota.spent,
        g.quota.allowance,
        g.quota.hours
    ))];
    let risks: Vec<Line> = g.risks.iter().map(|r| vec![text(&r.text)]).collect();
    GoalDoc {
        title,
        summary,
        sections: vec![
            section("Waiting for you", "nothing", waiting_lines(g), limit, whole),
            section("Next actions", "none", next_lines(g), limit, whole),
            section("Risks", "none seen", risks, limit, whole),
            section(
                "Delivered",
                "no todo done",
                delivered_lines(g),
                limit,
                whole,
            ),
            section("Failures", "none", failure_lines(g), limit, whole),
            section("Quota", "", quota_lines(g), limit, whole),
            section("Handoffs", "none", handoff_lines(g), limit, whole),
            section("Agents", "none active", agent_lines(g), limit, whole),
        ],
    }
}

/// The gates and reminders that wait for the person, each with the
/// command that answers it.
fn waiting_lines(g: &GoalReport) -> Vec<Line> {
    let v = &g.review;
    let flag = if v.default {
        String::new()
    } else {
        format!(" --goal {}", v.goal)
    };

    let mut waiting: Vec<Line> = Vec::new();
    for d in &v.decisions {
        waiting.push(vec![
            plain("gate "),
            code(&d.id),
            plain(" "),
            text(&d.text),
            plain(" — "),
            code(format!(
                "git loopx{flag} gate resolve {} --approve|--reject",
                d.id
            )),
        ]);
    }
    for a in &v.ignored_answers {
        waiting.push(vec![text(a.sentence())]);
    }
    for a in &v.user_actions {
        waiting.push(vec![
            plain("reminder "),
            code(&a.id),
            plain(" "),
            text(&a.text),
            plain(" — "),
            code(format!("git loopx{flag} todo done {}", a.id)),
        ]);
    }
    waiting
}

/// What comes next, by whom, with the command when there is one.
fn next_lines(g: &GoalReport) -> Vec<Line> {
    g.next_actions
        .iter()
        .map(|a| {
            let mut line = vec![plain(format!("{}: ", a.by)), text(&a.text)];
            if let Some(c) = &a.command {
                line.extend([plain(" — "), code(c)]);
            }
            line
        })
        .collect()
}

/// The todos done in the range and the gates answered.
fn delivered_lines(g: &GoalReport) -> Vec<Line> {
    let v = &g.review;
    let mut delivered: Vec<Line> = Vec::new();
    for d in &v.completed {
        delivered.push(vec![
            plain("done "),
            code(&d.id),
            plain(" "),
            text(&d.text),
            plain(": "),
            text(d.evidence.as_deref().unwrap_or("no evidence")),
        ]);
    }
    for a in &v.answered {
        let gate = &a.gate;
        let decision = gate
            .decision
            .map_or_else(|| "resolved".to_owned(), |d| crate::ops::snake(&d));
        let mut line = vec![
            plain("answered "),
            code(&gate.id),
            plain(" "),
            text(&gate.text),
            plain(format!(": {decision} by ")),
            text(gate.resolved_by.as_deref().unwrap_or("(not recorded)")),
        ];
        if !a.counts {
            line.push(plain(" — not made by you: ignored, still open"));
        }
        delivered.push(line);
    }
    delivered
}

/// The writebacks that failed and the turns that ended without one.
fn failure_lines(g: &GoalReport) -> Vec<Line> {
    let mut failures: Vec<Line> = Vec::new();
    for f in &g.failures {
        let why = match &f.validation {
            Some(v) if v.exit_code != 0 => {
                format!("validation `{}` exited {}", v.command, v.exit_code)
            }
            _ => "no progress (outcome_gap)".to_owned(),
        };
        failures.push(vec![
            code(&f.id),
            plain(" on "),
            code(f.todo.as_deref().unwrap_or("the goal")),
            plain(" by "),
            text(f.agent.as_deref().unwrap_or("?")),
            plain(format!(" at {}: ", f.at)),
            text(why),
            plain(": "),
            text(f.summary.as_deref().unwrap_or("")),
        ]);
    }
    for t in &g.failed_turns {
        let how = match (t.turn.exit_code, t.turn.timed_out) {
            (_, true) => "ran past its time limit".to_owned(),
            (Some(0), _) => "exited 0 with no writeback".to_owned(),
            (Some(c), _) => format!("exited {c}"),
            (None, _) => "ended by a signal".to_owned(),
        };
        failures.push(vec![
            plain("turn "),
            code(&t.turn.key),
            plain(" of "),
            text(&t.agent),
            plain(format!(" at {} {how}", t.at)),
        ]);
    }
    failures
}

/// The slots spent against the allowance, and each window.
fn quota_lines(g: &GoalReport) -> Vec<Line> {
    let q = &g.quota;
    let mut quota: Vec<Line> = vec![vec![plain(format!(
        "spent {} slot(s) in the range against {} allowed; now {} of {} in the window{}",
        q.spent,
        q.allowance,
        q.window_spent,
        q.allowed_slots,
        if q.throttled { ": throttled" } else { "" }
    ))]];
    for w in &q.windows {
        quota.push(vec![plain(format!(
            "{} for {} h: {} of {} slot(s){}",
            w.start,
            w.hours,
            w.spent,
            w.allowed_slots,
            if w.allowed_slots > 0 && w.spent >= w.allowed_slots {
                ", throttled"
            } else {
                ""
            }
        ))]);
    }
    quota
}

/// Each handoff in the range, with its note.
fn handoff_lines(g: &GoalReport) -> Vec<Line> {
    let v = &g.review;
    v.handoffs
        .iter()
        .map(|h| {
            vec![
                code(&h.todo),
                plain(" "),
                text(&h.text),
                plain(" to "),
                text(&h.handoff.to),
                plain(format!(" at {}: ", h.handoff.at)),
                text(&h.handoff.note),
            ]
        })
        .collect()
}

/// Each active agent's writebacks, failures and leases.
fn agent_lines(g: &GoalReport) -> Vec<Line> {
    g.agents
        .iter()
        .map(|a| {
            let mut words = format!(
                " — {} writeback(s) on {} todo(s), {} failed",
                a.writebacks,
                a.todos.len(),
                a.failures
            );
            if let Some(at) = a.last_writeback {
                let _ = write!(words, ", last at {at}");
            }
            if a.failed_turns > 0 {
                let _ = write!(words, "; {} failed turn(s)", a.failed_turns);
            }
            if a.consecutive_failures > 0 {
                let _ = write!(
                    words,
                    "; {} failed turn(s) in a row",
                    a.consecutive_failures
                );
            }
            if a.guard_releases > 0 {
                let _ = write!(words, "; {} loop-guard release(s)", a.guard_releases);
            }
            if !a.expired_leases.is_empty() {
                let _ = write!(
                    words,
                    "; {} lease(s) expired unused",
                    a.expired_leases.len()
                );
            }
            vec![text(&a.id), plain(words)]
        })
        .collect()
}
