//! `serve`'s one report: every goal's `status`, laid out as a board, what
//! needs the person, the agents, activity by hour and recent writebacks.
//!
//! Nothing here decides anything of its own: each goal's panel *is* the
//! [`status`](crate::ops::status) report, the board's columns are the
//! buckets `status` counts ([`State::buckets`]), the writebacks come from
//! `history` and their commits from `log`. The report is read-only and made
//! for one state commit (`commit`), so a server may keep it until the tip
//! moves.

mod activity;

use serde::Serialize;

use crate::model::{Bucket, Priority, Role, Run, RunKind, State, Timestamp, TodoClass};
use crate::ops::status::{self, StatusReport};
use crate::ops::writeback::{history, HistoryArgs};
use crate::session::Context;
use crate::store::Oid;
use crate::Result;

pub use activity::{Activity, AgentLine, Series};

/// How many cards a board column shows; the rest are counted.
pub const COLUMN_CARDS: usize = 100;
/// How many writebacks, over every goal, the report lists.
pub const RECENT_WRITEBACKS: usize = 20;

/// What the dashboard shows, for one state commit.
#[derive(Debug, Serialize)]
pub struct DashboardReport {
    pub commit: Oid,
    pub now: Timestamp,
    pub default_goal: String,
    /// An agent not seen (turn, writeback, claim) for this long is stale.
    pub stale_after_seconds: i64,
    /// Open gates and reminders of every goal, oldest question first.
    pub needs_you: Vec<NeedsYou>,
    /// The default goal first, then the others by id.
    pub goals: Vec<GoalPanel>,
    pub agents: Vec<AgentLine>,
    pub activity: Activity,
    /// The latest writebacks of every goal, newest first.
    pub recent: Vec<RecentWriteback>,
    /// The latest attempts on the person's authority refused on this host
    /// in the last week, newest first (as `status` lists them).
    pub refused: Vec<crate::session::refused::Refused>,
    /// Runtimes installed here that their files no longer govern.
    pub governance_lost: Vec<crate::ops::hooks::Ungoverned>,
}

/// Something only the person can do, and the command that does it.
#[derive(Debug, Serialize)]
pub struct NeedsYou {
    pub goal: String,
    pub id: String,
    /// `gate` (a decision: work waits for it) or `reminder` (a user action).
    pub kind: &'static str,
    pub question: String,
    /// What waits for the answer, in words (`global`, `blocks A`, `holds T`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holds: Option<String>,
    /// The text of the todo the gate unblocks, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holds_todo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<Timestamp>,
    /// The commands that answer it, ready to paste.
    pub commands: Vec<String>,
    /// A resolution exists but does not count (`gate_signers`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resolution_not_signed: bool,
    /// That answer, with who it claims, when and its commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_answer: Option<crate::ops::signers::IgnoredAnswer>,
    /// The `validate` command written into the todo, exactly: the page
    /// shows it, and answering never runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validate: Option<String>,
}

/// One goal: its `status` report and its board.
#[derive(Debug, Serialize)]
pub struct GoalPanel {
    pub status: StatusReport,
    pub board: Vec<Column>,
    /// Slots spent per hour of the quota window, oldest hour first (at
    /// most the last 48 hours).
    pub spent_per_hour: Vec<u32>,
}

/// One bucket of the board.
#[derive(Debug, Serialize)]
pub struct Column {
    pub bucket: Bucket,
    /// Every todo in the bucket; `cards` holds at most [`COLUMN_CARDS`].
    pub total: usize,
    pub cards: Vec<Card>,
}

#[derive(Debug, Serialize)]
pub struct Card {
    pub id: String,
    pub text: String,
    pub role: Role,
    pub class: TodoClass,
    pub priority: Priority,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_left: Option<i64>,
    /// The open gates that hold it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_when: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    pub updated_at: Timestamp,
}

/// A writeback with the todo it was about and the commit that recorded it.
#[derive(Debug, Serialize)]
pub struct RecentWriteback {
    pub goal: String,
    pub run: Run,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub todo_text: Option<String>,
    /// The todo's evidence, once it is done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// The state commit with its `Loopx-Run` trailer; `None` when it is not
    /// among the latest first-parent commits (a peer's, merged by `sync`).
    pub commit: Option<Oid>,
}

/// How many first-parent state commits are searched for writebacks' commits.
const COMMIT_SCAN: usize = 400;

/// The dashboard for the current tip. The context's goal is changed while
/// each goal is read, and put back.
pub fn dashboard(ctx: &mut Context, stale_after_seconds: i64) -> Result<DashboardReport> {
    let (tip, state) = ctx.load()?;
    let saved = ctx.goal_flag().map(str::to_owned);
    let mut ids: Vec<String> = state.goals.keys().cloned().collect();
    ids.sort_by_key(|id| (*id != state.meta.default_goal, id.clone()));
    let result = panels(ctx, &state, &ids);
    ctx.set_goal(saved);
    let (goals, mut recent) = result?;

    let refused = goals
        .first()
        .map(|g| g.status.refused.clone())
        .unwrap_or_default();
    let governance_lost = goals
        .first()
        .map(|g| g.status.governance_lost.clone())
        .unwrap_or_default();
    let mut needs_you = Vec::new();
    for panel in &goals {
        needs_you.extend(needs(&panel.status, &state));
    }
    needs_you.sort_by(|a, b| (a.asked_at, &a.id).cmp(&(b.asked_at, &b.id)));

    recent.sort_by(|a, b| b.run.added_key().cmp(&a.run.added_key()));
    recent.truncate(RECENT_WRITEBACKS);
    find_commits(ctx, &mut recent)?;

    Ok(DashboardReport {
        commit: tip,
        now: ctx.now,
        default_goal: state.meta.default_goal.clone(),
        stale_after_seconds,
        needs_you,
        agents: activity::agents(&state, &goals, ctx.now, stale_after_seconds),
        activity: activity::activity(&state, ctx.now),
        goals,
        recent,
        refused,
        governance_lost,
    })
}

type Panels = (Vec<GoalPanel>, Vec<RecentWriteback>);

fn panels(ctx: &mut Context, state: &State, ids: &[String]) -> Result<Panels> {
    let mut goals = Vec::new();
    let mut recent = Vec::new();
    for id in ids {
        ctx.set_goal(Some(id.clone()));
        let status = status::status(ctx)?;
        let runs = history(
            ctx,
            &HistoryArgs {
                kind: Some(RunKind::Writeback),
                todo: None,
                limit: RECENT_WRITEBACKS,
                ..HistoryArgs::default()
            },
        )?;
        let gs = &state.goals[id];
        recent.extend(runs.runs.into_iter().map(|run| {
            let todo = run.todo.as_deref().and_then(|t| gs.todos.get(t));
            RecentWriteback {
                goal: id.clone(),
                todo_text: todo.map(|t| t.text.clone()),
                evidence: todo.and_then(|t| t.evidence.clone()),
                run,
                commit: None,
            }
        }));
        goals.push(GoalPanel {
            board: board(state, id, ctx.now),
            spent_per_hour: activity::spent_per_hour(gs, ctx.now),
            status,
        });
    }
    Ok((goals, recent))
}

/// The open gates and reminders of one goal's status, with their commands.
fn needs(status: &StatusReport, state: &State) -> Vec<NeedsYou> {
    let goal = &status.goal.id;
    let flag = if *goal == state.meta.default_goal {
        String::new()
    } else {
        format!("--goal {goal} ")
    };
    let gs = &state.goals[goal];
    let gates = status.gates.iter().map(|g| NeedsYou {
        goal: goal.clone(),
        id: g.id.clone(),
        kind: "gate",
        question: g.question.clone(),
        holds: Some(g.scope_label.clone()),
        holds_todo: g
            .unblocks
            .as_deref()
            .and_then(|t| gs.todos.get(t))
            .map(|t| t.text.clone()),
        asked_at: Some(g.asked_at),
        commands: ["--approve", "--reject"]
            .iter()
            .map(|d| format!("git loopx {flag}gate resolve {} {d} --note \"…\"", g.id))
            .collect(),
        resolution_not_signed: g.resolution_not_signed,
        ignored_answer: status
            .ignored_answers
            .iter()
            .find(|a| a.gate == g.id)
            .cloned(),
        validate: g.validate.clone(),
    });
    let reminders = status.user_actions.iter().map(|a| NeedsYou {
        goal: goal.clone(),
        id: a.id.clone(),
        kind: "reminder",
        question: a.text.clone(),
        holds: None,
        holds_todo: None,
        asked_at: gs.todos.get(&a.id).map(|t| t.created_at),
        commands: vec![format!(
            "git loopx {flag}todo done {} --evidence \"…\"",
            a.id
        )],
        resolution_not_signed: false,
        ignored_answer: None,
        validate: a.validate.clone(),
    });
    gates.chain(reminders).collect()
}

/// The board of one goal: the buckets in the order a person reads them.
fn board(state: &State, goal: &str, now: Timestamp) -> Vec<Column> {
    const ORDER: [Bucket; 7] = [
        Bucket::ForUser,
        Bucket::Ready,
        Bucket::Running,
        Bucket::HeldByGate,
        Bucket::Waiting,
        Bucket::Deferred,
        Bucket::Done,
    ];
    let gs = &state.goals[goal];
    let buckets = state.buckets(goal, now);
    // Which open gates hold which todo.
    let mut holding: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for gate in gs.todos.all_facts() {
        if gate.class == TodoClass::UserGate && !gate.status.is_terminal() {
            if let Some(held) = gate.unblocks {
                holding.entry(held).or_default().push(gate.id.to_owned());
            }
        }
    }
    ORDER
        .iter()
        .map(|&bucket| {
            let mut ids: Vec<_> = buckets
                .iter()
                .filter(|(_, b)| *b == bucket)
                .filter_map(|(id, _)| gs.todos.facts(id))
                .map(|f| (f.priority, f.created_at, f.seq, f.id))
                .collect();
            let total = ids.len();
            ids.sort();
            if bucket != Bucket::Done {
                // Done cards are ordered by when they finished, below.
                ids.truncate(COLUMN_CARDS);
            }
            let mut cards: Vec<Card> = ids
                .iter()
                .map(|key| key.3)
                .filter_map(|id| gs.todos.get(id))
                .map(|t| {
                    let claim = t.live_claim(now);
                    Card {
                        id: t.id.clone(),
                        text: t.text.clone(),
                        role: t.role,
                        class: t.class,
                        priority: t.priority,
                        holder: claim.map(|c| c.agent.clone()),
                        expires_at: claim.map(|c| c.expires_at),
                        seconds_left: claim.map(|c| now.seconds_until(c.expires_at)),
                        gates: holding.get(t.id.as_str()).cloned().unwrap_or_default(),
                        resume_when: t.resume_when.clone(),
                        evidence: t.evidence.clone(),
                        updated_at: t.updated_at,
                    }
                })
                .collect();
            if bucket == Bucket::Done {
                // The latest finished first.
                cards.sort_by(|a, b| (b.updated_at, &b.id).cmp(&(a.updated_at, &a.id)));
            }
            cards.truncate(COLUMN_CARDS);
            Column {
                bucket,
                total,
                cards,
            }
        })
        .collect()
}

/// Each writeback's commit, by the `Loopx-Run` trailer `log` reports.
fn find_commits(ctx: &Context, recent: &mut [RecentWriteback]) -> Result<()> {
    if recent.is_empty() {
        return Ok(());
    }
    let log = crate::ops::log::log(
        ctx,
        &crate::ops::log::LogArgs {
            limit: COMMIT_SCAN,
            ..Default::default()
        },
    )?;
    for entry in log.entries {
        for run in &entry.runs {
            if let Some(w) = recent.iter_mut().find(|w| &w.run.id == run) {
                w.commit.get_or_insert_with(|| entry.commit.clone());
            }
        }
    }
    Ok(())
}

/// The state commit a read would see now, from the ref alone (on a fresh
/// clone, the remote's, as [`Context::load`] reads it).
pub fn tip(ctx: &Context) -> Result<Oid> {
    match ctx.store.tip()? {
        Some(tip) => Ok(tip),
        None => Ok(ctx.load()?.0),
    }
}
