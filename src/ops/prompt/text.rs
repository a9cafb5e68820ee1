//! The heartbeat prompt's text: goal, selected todo, the exact calls, the
//! rules. It is what the use case hands the agent, so it is made here and
//! carried in the report; the CLI, the hooks and the MCP server print it as
//! it is.
//!
//! One text for both surfaces ([`Surface`]): every git-loopx call in it is
//! written by [`call`], as a command line or as an MCP tool call.

use std::fmt::Write as _;

use super::calls::*;
use super::{PromptReport, Runtime, Surface};
use crate::model::{Timestamp, Todo};
use crate::ops::{done, gate, goal, lease, monitor, quota, should_run, todo, writeback};

/// The prompt for `r`. With an agent known, every `git loopx` command in it
/// names the agent (`git loopx --agent A …`), and the goal when it is not
/// the default one, so the commands act as the agent, on the goal, even in
/// a shell the runtime gave neither.
pub fn prompt(r: &PromptReport, now: Timestamp, s: Surface) -> String {
    let mut who = String::from("`git loopx ");
    if let Some(agent) = &r.agent {
        who = format!("{who}--agent {agent} ");
    }
    if r.names_goal {
        who = format!("{who}--goal {} ", r.goal.id);
    }
    body(r, now, s).replace("`git loopx ", &who)
}

fn body(r: &PromptReport, now: Timestamp, s: Surface) -> String {
    let mut out = String::new();
    header(&mut out, r);
    if r.decision.should_run && r.todo.is_none() {
        planning(&mut out, r, s);
        return out;
    }
    let Some(todo) = &r.todo else {
        no_work(&mut out, r, s);
        return out;
    };
    this_turn(&mut out, r, todo, now, s);
    gates(&mut out, r);
    steps(&mut out, r, &todo.id, s);
    rules(&mut out, r, &todo.id, s);
    out
}

/// Who the turn is for and the goal it serves: objective, next action,
/// guards and where the agent may write.
fn header(out: &mut String, r: &PromptReport) {
    let agent = r.agent.as_deref().unwrap_or("<agent>");
    let g = &r.goal;
    let _ = writeln!(out, "# git-loopx turn {} for {agent}", r.turn);
    let _ = writeln!(out);
    let _ = writeln!(out, "Goal `{}`: {}", g.id, g.objective);
    if let Some(next) = &g.next_action {
        let _ = writeln!(out, "Next action: {next}");
    }
    for guard in &g.guards {
        let _ = writeln!(out, "Guard: {guard}");
    }
    if !g.write_scope.is_empty() {
        let _ = writeln!(out, "Write only within: {}", g.write_scope.join(", "));
    }
    let _ = writeln!(out);
}

/// A turn with nothing to do: why, when to ask again, the gates that wait,
/// and (where a stop hook runs) to end the turn now.
fn no_work(out: &mut String, r: &PromptReport, s: Surface) {
    let d = &r.decision;
    let _ = writeln!(
        out,
        "Do not work this turn: {} ({}).",
        d.effective_action, d.reason
    );
    let _ = writeln!(
        out,
        "Check again in {} seconds with {}.",
        d.scheduler_hint.wake_after_seconds,
        call::<should_run::ShouldRunArgs>(s, SHOULD_RUN, &[], &[])
    );
    gates(out, r);
    if let Some(line) = stop_hook_line(r.runtime) {
        let _ = writeln!(out, "\nEnd this turn now, without changes.");
        let _ = writeln!(out, "{line}");
    }
}

/// The todo of this turn: its text, the lease held on it, what completes
/// it, its monitor, its latest notes and the handoff that passed it here.
fn this_turn(out: &mut String, r: &PromptReport, todo: &Todo, now: Timestamp, s: Surface) {
    let _ = writeln!(out, "## This turn: {} ({:?})", todo.id, todo.priority);
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", todo.text);
    if let Some(c) = todo.live_claim(now) {
        let _ = writeln!(
            out,
            "\nYou hold this todo (epoch {}), lease until {}.",
            c.epoch, c.expires_at
        );
    }
    if let Some(v) = &todo.validate {
        let _ = writeln!(
            out,
            "It is complete only when `{v}` exits 0 (run by {}).",
            s.pick("`todo done`", "the `complete_todo` tool")
        );
    }
    monitor(out, todo, s);
    for n in todo.notes.iter().rev().take(3).rev() {
        let _ = writeln!(
            out,
            "Note from {} at {}: {}",
            n.agent.as_deref().unwrap_or("user"),
            n.at,
            n.text
        );
    }
    if let Some(h) = &r.handoff {
        let _ = writeln!(
            out,
            "\n## Handoff from {} (epoch {}, {})\n",
            h.from, h.epoch, h.at
        );
        let _ = writeln!(
            out,
            "{} passed this todo to you. Start from what it left you:",
            h.from
        );
        out.push_str(&h.sections("", &|s| s.to_owned()));
    }
}

/// The calls of the turn, in order: claim (when needed), work, check,
/// write back, complete, spend.
fn steps(out: &mut String, r: &PromptReport, id: &str, s: Surface) {
    let d = &r.decision;
    let turn = r.turn.as_str();
    let _ = writeln!(out, "\n## {}, in order\n", s.pick("Commands", "Tool calls"));
    let mut step = 1;
    if d.selected_todo.as_ref().is_some_and(|t| t.claim_required) {
        let claim = call::<lease::ClaimArgs>(s, CLAIM, &[("todo", id)], &[]);
        let again = call::<should_run::ShouldRunArgs>(s, SHOULD_RUN, &[], &[]);
        let _ = writeln!(
            out,
            "{step}. {claim} — claim first; on claim_conflict stop and run {again} again."
        );
        step += 1;
    }
    let _ = writeln!(out, "{step}. Do one bounded piece of the work; commit it to your code branch (not loopx-state), naming the todo: `git commit --trailer \"Loopx-Todo: {id}\"`.");
    step += 1;
    let _ = writeln!(
        out,
        "{step}. Check it the way `validate` will, before you claim progress."
    );
    step += 1;
    let wrote = [
        ("todo", id),
        ("turn", turn),
        ("outcome", "outcome_progress"),
        ("summary", "\"<what changed>\""),
        ("artifacts", "<commit>"),
    ];
    let wrote = call::<writeback::WritebackArgs>(s, WRITEBACK, &wrote, &[]);
    let _ = writeln!(out, "{step}. {wrote}");
    step += 1;
    let finished = call::<done::DoneArgs>(
        s,
        DONE,
        &[("todo", id), ("evidence", "\"<proof>\"")],
        &[&[("next", "\"<follow-up>\""), ("no_follow_up", "")]],
    );
    let _ = writeln!(out, "{step}. If the todo is finished: {finished}");
    step += 1;
    let spend = call::<quota::SpendArgs>(s, SPEND, &[("turn", turn)], &[]);
    let _ = writeln!(out, "{step}. {spend}");
}

/// The rules of a working turn.
fn rules(out: &mut String, r: &PromptReport, id: &str, s: Surface) {
    let _ = writeln!(out, "\n## Rules\n");
    let _ = writeln!(out, "- Claim before you work; work only on {id} this turn.");
    let _ = writeln!(
        out,
        "- On `stale_epoch` or `not_claim_holder`, stop: someone else holds the todo now."
    );
    let _ = writeln!(out, "- Write back once, with the true outcome: `surface_only` or `outcome_gap` when you made no real progress.");
    let _ = writeln!(
        out,
        "- Spend once per accountable writeback; quiet turns and failed validations never spend."
    );
    let _ = writeln!(
        out,
        "- `{}` queues the follow-up work; `{}` says none is needed, and on the goal's last open todo it ends the goal.",
        s.pick("--next", "next"),
        s.pick("--no-follow-up", "no_follow_up")
    );
    let ask = call::<gate::AddArgs>(
        s,
        GATE,
        &[("question", "\"<question>\"")],
        &[&[("unblocks", "<todo>")]],
    );
    let _ = writeln!(
        out,
        "- A question only the user can answer: {ask}, then move on."
    );
    let _ = writeln!(
        out,
        "- Never edit the loopx-state branch by hand; every change goes through {}.",
        s.pick("`git loopx`", "the git-loopx tools")
    );
    if let Some(line) = stop_hook_line(r.runtime) {
        let _ = writeln!(
            out,
            "- When the turn is done, stop with a short summary of the writeback."
        );
        let _ = writeln!(out, "- {line}");
    }
}

/// A planning turn (no open todo) or a replanning turn (every open todo is
/// blocked): the agent shapes the work instead of doing it.
fn planning(out: &mut String, r: &PromptReport, s: Surface) {
    let d = &r.decision;
    let turn = r.turn.as_str();
    let replan = d.effective_action == "replan_required";
    if replan {
        let _ = writeln!(out, "## This turn: replan ({})", d.reason);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Every open todo of this goal is blocked. Work on no todo this turn; look at why they are blocked and reshape the plan:"
        );
        for t in &r.blocked {
            let why = t
                .notes
                .last()
                .map(|n| format!(" — last note: {}", n.text))
                .unwrap_or_default();
            let _ = writeln!(out, "- {} {}{why}", t.id, t.text);
        }
        let update = |status| {
            let args = [("todo", "<id>"), ("status", status), ("note", "\"<why>\"")];
            call::<todo::UpdateArgs>(s, UPDATE, &args, &[])
        };
        let _ = writeln!(
            out,
            "\nUnblock a todo whose obstacle is gone ({}), \
             add smaller todos that get around an obstacle ({}), \
             ask the user what only they can answer ({}), \
             or park a todo that is no longer wanted ({}).",
            update("open"),
            call::<todo::AddArgs>(s, ADD, &[("text", "\"<text>\"")], &[]),
            call::<gate::AddArgs>(
                s,
                GATE,
                &[("question", "\"<question>\""), ("unblocks", "<id>")],
                &[]
            ),
            update("deferred"),
        );
    } else {
        let _ = writeln!(out, "## This turn: plan ({})", d.reason);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "No todo is open. Work on no todo this turn: compare the objective with what is done, then either"
        );
        let add = call::<todo::AddArgs>(
            s,
            ADD,
            &[("text", "\"<text>\"")],
            &[&[("priority", "P1")], &[("validate", "\"<check>\"")]],
        );
        let _ = writeln!(
            out,
            "- add the next todos, each one bounded piece of work towards the objective, most important first: {add}; or"
        );
        let end =
            call::<goal::DoneArgs>(s, GOAL_DONE, &[("note", "\"<what was delivered>\"")], &[]);
        let _ = writeln!(
            out,
            "- if the objective is met and nothing useful is left, end the goal: {end}."
        );
        if !r.done.is_empty() {
            let _ = writeln!(out, "\nDone so far (latest last):");
            for t in &r.done {
                let _ = writeln!(out, "- {} {}", t.id, t.text);
            }
        }
    }
    gates(out, r);
    let (steps, calls) = s.pick(("Commands", "commands"), ("Tool calls", "calls"));
    let _ = writeln!(out, "\n## {steps}, in order\n");
    let _ = writeln!(
        out,
        "1. The todo and goal {calls} above; do not change code this turn."
    );
    let wrote = [
        ("turn", turn),
        ("outcome", "outcome_progress"),
        ("summary", "\"<what you planned and why>\""),
    ];
    let _ = writeln!(
        out,
        "2. {} (no {}: the writeback is on the goal; `surface_only` if you changed nothing)",
        call::<writeback::WritebackArgs>(s, WRITEBACK, &wrote, &[]),
        s.pick("--todo", "todo")
    );
    let spend = call::<quota::SpendArgs>(s, SPEND, &[("turn", turn)], &[]);
    let _ = writeln!(out, "3. {spend}");
    let _ = writeln!(out, "\n## Rules\n");
    let _ = writeln!(
        out,
        "- Add only real work; do not invent a gate or a filler todo to keep the loop going."
    );
    let _ = writeln!(
        out,
        "- A planning turn that adds nothing and does not end the goal is not asked for again: the goal then waits for a person."
    );
    let _ = writeln!(
        out,
        "- Never edit the loopx-state branch by hand; every change goes through {}.",
        s.pick("`git loopx`", "the git-loopx tools")
    );
    if let Some(line) = stop_hook_line(r.runtime) {
        let _ = writeln!(out, "- {line}");
    }
}

/// What the runtime's git-loopx Stop hook does, for the runtimes that have
/// one (installed by `git loopx hooks install`); a generic host names none.
fn stop_hook_line(runtime: Runtime) -> Option<String> {
    (runtime != Runtime::Generic).then(|| {
        format!(
            "If git-loopx's {} hooks are installed (hooks install --{}), \
             they ask should-run whether another turn follows and hand you its prompt; otherwise your host loop decides.",
            runtime.display(),
            runtime.name()
        )
    })
}

fn gates(out: &mut String, r: &PromptReport) {
    if r.gates.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nWaiting for the user (mention these in your reply; do not decide them):"
    );
    for g in &r.gates {
        let _ = writeln!(out, "- {} {}", g.id, g.question);
    }
}

/// What a monitor turn is: observe, then record the poll (`todo poll`).
fn monitor(out: &mut String, todo: &crate::model::Todo, s: Surface) {
    let Some(m) = &todo.monitor else {
        return;
    };
    let id = todo.id.as_str();
    let _ = writeln!(
        out,
        "\nThis is a monitor, due every {}: check what it watches, then record the poll instead of finishing the todo:",
        m.cadence
    );
    let saw = ("note", "\"<what you saw>\"");
    let quiet = [("todo", id), ("quiet", "")];
    let quiet = call::<monitor::PollArgs>(s, POLL, &quiet, &[&[saw]]);
    let _ = writeln!(out, "  nothing needs work: {quiet}");
    let material = [
        ("todo", id),
        ("material", ""),
        saw,
        ("next", "\"<the work>\""),
    ];
    let material = call::<monitor::PollArgs>(s, POLL, &material, &[]);
    let _ = writeln!(out, "  something needs work: {material}");
    let _ = writeln!(
        out,
        "A quiet poll is no progress: write back `surface_only` and do not spend. Leave the monitor open."
    );
    if m.watch_only {
        let _ = writeln!(
            out,
            "Watch-only: observe, poll and report; do not change code or commit to your code branch."
        );
    }
}

/// The placeholders the prompt's commands carry (`<commit>`), as the agent
/// fills them in.
const PLACEHOLDERS: &[&str] = &[
    "what changed",
    "commit",
    "proof",
    "follow-up",
    "question",
    "todo",
    "id",
    "why",
    "text",
    "check",
    "agent",
];

/// `prompt` with each placeholder written `{commit}` instead of
/// `<commit>`: Codex hands a Stop hook's reason to the model XML-escaped
/// (`&lt;commit&gt;`), which a model copies into the command as is.
pub fn braced_placeholders(prompt: &str) -> String {
    let mut out = prompt.to_owned();
    for name in PLACEHOLDERS {
        out = out.replace(&format!("<{name}>"), &format!("{{{name}}}"));
    }
    out
}
