//! Mapping LoopX records to git-loopx entities (pure: no I/O, no clock).
//!
//! Ids: a LoopX todo `todo_<24 hex>` becomes `todo_` + 12 hex of a SHA-1 over
//! ("loopx", goal, LoopX id), a spend `run_` + 12 hex over its effect id, so
//! the same LoopX state always maps to the same ids. Every imported entity
//! keeps `origin: loopx:<id>`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::source;
use crate::model::{
    ids, parse_duration, Agent, Claim, Decision, Extra, Goal, GoalStatus, Monitor, Note, Priority,
    Role, Run, RunKind, Timestamp, Todo, TodoClass, TodoStatus,
};

/// Something of the LoopX state that has no equivalent here.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    /// `goal`, `todo`, `lease`, `spend` or `agent`.
    pub kind: &'static str,
    /// The LoopX id.
    pub loopx_id: String,
    /// The field, when only a field is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub why: String,
}

/// One goal as it will be written.
#[derive(Clone, Debug)]
pub struct Planned {
    pub goal: Goal,
    /// In the order they will be added.
    pub todos: Vec<Todo>,
    pub runs: Vec<Run>,
}

/// What an import writes, and what it leaves out.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub goals: Vec<Planned>,
    pub agents: Vec<Agent>,
    pub skipped: Vec<Skipped>,
    /// LoopX todo id → git-loopx todo id.
    pub todo_ids: BTreeMap<String, String>,
}

pub fn origin(id: &str) -> Value {
    Value::String(format!("loopx:{id}"))
}

fn with_origin(id: &str) -> Extra {
    let mut extra = Extra::new();
    extra.insert("origin".into(), origin(id));
    extra
}

/// The git-loopx id of LoopX todo `id` of goal `goal`.
pub fn todo_id(goal: &str, id: &str) -> String {
    ids::derive_id("todo_", &["loopx", goal, id])
}

/// Fields that are the reference's own bookkeeping (receipts, revisions,
/// projections): nothing here needs them.
const BOOKKEEPING: &[&str] = &[
    "schema_version",
    "content_revision",
    "done",
    "text",
    "index",
    "source_section",
    "last_actor_agent_id",
    "completion_continuation",
    "completion_receipt_id",
    "completion_turn_key",
    "completion_result",
    "completion_validation_required",
    "completion_validation_sha256",
    "completion_validation_revision",
    "completion_validation_revision_history",
    "completed_at",
    "claimed_by",
    "resume_condition",
    "resume_ready",
    "archive_state",
];

/// Fields this mapping reads.
const MAPPED: &[&str] = &[
    "todo_id",
    "title",
    "role",
    "task_class",
    "status",
    "priority",
    "updated_at",
    "created_by",
    "evidence",
    "note",
    "reason",
    "handoff_note",
    "resume_when",
    "unblocks_todo_id",
    "blocks_agent",
    "global_gate",
    "successor_todo_ids",
    "excluded_agents",
    "required_capabilities",
    "decision_outcome",
    "cadence",
    "next_due_at",
    "expires_at",
    "watch_only",
    "last_checked_at",
    "consecutive_no_change",
    "material_change_generation",
];

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

fn str_of<'a>(t: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    t.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn strings(t: &Map<String, Value>, key: &str) -> Vec<String> {
    t.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The plan for `goals` (already filtered), at `now`.
pub fn plan(goals: &[source::Goal], now: Timestamp) -> Plan {
    let mut plan = Plan::default();
    let mut agents: BTreeMap<String, ()> = BTreeMap::new();
    for g in goals {
        if !ids::is_valid_name(&g.id) {
            skip(
                &mut plan,
                "goal",
                &g.id,
                None,
                "not a valid git-loopx goal id".into(),
            );
            continue;
        }
        let goal = goal_of(g, now, &mut plan);
        for a in &g.agents {
            agents.insert(a.clone(), ());
        }
        for t in &g.todos {
            if let Some(id) = str_of(t, "todo_id") {
                plan.todo_ids.insert(id.to_owned(), todo_id(&g.id, id));
            }
        }
        // Oldest first, as LoopX gives no creation time: by updated_at, then id.
        let mut records: Vec<&Map<String, Value>> = g.todos.iter().collect();
        records.sort_by_key(|t| (str_of(t, "updated_at").unwrap_or(""), str_of(t, "todo_id")));
        let mut todos = Vec::new();
        for t in records {
            if let Some(todo) =
                map_todo(&g.id, t, &g.leases, &plan.todo_ids, now, &mut plan.skipped)
            {
                if let Some(c) = &todo.claim {
                    agents.insert(c.agent.clone(), ());
                }
                todos.push(todo);
            }
        }
        let runs = spend_runs(g, &mut plan, &mut agents);
        plan.goals.push(Planned { goal, todos, runs });
    }
    for id in agents.into_keys() {
        if !ids::is_valid_name(&id) {
            plan.skipped.push(Skipped {
                kind: "agent",
                loopx_id: id,
                field: None,
                why: "not a valid git-loopx agent id".into(),
            });
            continue;
        }
        plan.agents.push(Agent {
            id: id.clone(),
            runtime: None,
            capabilities: Vec::new(),
            registered_at: now,
            updated_at: now,
            rev: 1,
            extra: with_origin(&id),
        });
    }
    plan
}

/// Writes down what the plan does not bring over, and why.
fn skip(plan: &mut Plan, kind: &'static str, id: &str, field: Option<&str>, why: String) {
    plan.skipped.push(Skipped {
        kind,
        loopx_id: id.to_owned(),
        field: field.map(str::to_owned),
        why,
    });
}

/// The goal a LoopX goal becomes: stopped unless it is active, with its
/// quota when it sets one; a goal whose store is missing is noted.
fn goal_of(g: &source::Goal, now: Timestamp, plan: &mut Plan) -> Goal {
    let mut goal = Goal::new(&g.id, &g.objective, now);
    goal.extra = with_origin(&g.id);
    match g.status.as_str() {
        "active" => {}
        other => {
            goal.status = GoalStatus::Stopped;
            skip(
                plan,
                "goal",
                &g.id,
                Some("status"),
                format!("status `{other}` has no equivalent; the goal is imported as stopped"),
            );
        }
    }
    if let Some(c) = g.compute.filter(|c| *c > 0.0) {
        goal.quota.compute = c;
    }
    if let Some(h) = g.window_hours.filter(|h| *h > 0) {
        goal.quota.window_hours = h;
    }
    if g.store_missing {
        skip(
            plan,
            "goal",
            &g.id,
            Some("todos"),
            "no SQLite authority store for this goal under the runtime root: its todos and leases were not read".into(),
        );
    }
    goal
}

/// The goal's LoopX spends as spend records (one whose time does not read
/// is skipped), each agent they name noted in `agents`.
fn spend_runs(g: &source::Goal, plan: &mut Plan, agents: &mut BTreeMap<String, ()>) -> Vec<Run> {
    let mut runs = Vec::new();
    for s in &g.spends {
        let Some(at) = Timestamp::parse(&s.at) else {
            skip(
                plan,
                "spend",
                &s.key,
                Some("generated_at"),
                format!("`{}` is not a time", s.at),
            );
            continue;
        };
        let agent = s.agent.as_deref().filter(|a| ids::is_valid_name(a));
        let mut run = Run::new(
            ids::derive_id("run_", &["loopx", &g.id, &s.key]),
            RunKind::Spend,
            &g.id,
            agent,
            at,
        );
        run.slots = Some(s.slots);
        run.turn = s.turn.clone();
        run.todo = s
            .todo_id
            .as_ref()
            .and_then(|t| plan.todo_ids.get(t))
            .cloned();
        run.reason = Some("imported from LoopX".into());
        run.extra = with_origin(&s.key);
        if let Some(a) = agent {
            agents.insert(a.to_owned(), ());
        }
        runs.push(run);
    }
    runs
}

fn map_todo(
    goal: &str,
    t: &Map<String, Value>,
    leases: &[source::Lease],
    todo_ids: &BTreeMap<String, String>,
    now: Timestamp,
    skipped: &mut Vec<Skipped>,
) -> Option<Todo> {
    let lid = str_of(t, "todo_id")?.to_owned();
    let mut skips = Skips {
        lid: &lid,
        out: skipped,
    };
    let (class, status) = class_and_status(t, &mut skips)?;
    let priority = match str_of(t, "priority").unwrap_or("P1") {
        "P0" => Priority::P0,
        "P1" => Priority::P1,
        "P3" => Priority::P3,
        "P4" => Priority::P4,
        _ => Priority::P2,
    };
    let text = str_of(t, "title")
        .or_else(|| str_of(t, "text"))
        .unwrap_or("(no text)")
        .to_owned();
    let at = str_of(t, "updated_at")
        .and_then(Timestamp::parse)
        .unwrap_or(now);
    let created_by = str_of(t, "created_by").filter(|a| ids::is_valid_name(a));
    let id = todo_id(goal, &lid);
    let mut todo = Todo::new(
        id,
        goal,
        &text,
        class.role(),
        class,
        priority,
        created_by,
        at,
    );
    if str_of(t, "role") == Some("user") && class.role() == Role::Agent {
        skips.todo(
            Some("role"),
            "a user todo of an agent class is imported as the agent's".into(),
        );
    }
    todo.status = status;
    todo.evidence = str_of(t, "evidence").map(str::to_owned);
    for (key, label) in [
        ("note", ""),
        ("reason", "reason: "),
        ("handoff_note", "handoff: "),
    ] {
        if let Some(text) = str_of(t, key) {
            todo.notes.push(Note {
                at,
                agent: None,
                text: format!("{label}{text}"),
                extra: Extra::new(),
            });
        }
    }
    links(&mut todo, t, todo_ids, &mut skips);
    todo.exclude_agents = strings(t, "excluded_agents");
    todo.requires_capabilities = strings(t, "required_capabilities");
    todo.decision = match str_of(t, "decision_outcome") {
        Some("approve") => Some(Decision::Approve),
        Some("reject") => Some(Decision::Reject),
        Some("cancel") => Some(Decision::Cancel),
        _ => None,
    };
    if class == TodoClass::ContinuousMonitor {
        todo.monitor = monitor_of(t, &mut skips);
    }
    bring_leases(&mut todo, leases, status, now, &mut skips);
    unmapped(t, &mut skips);
    todo.extra = with_origin(&lid);
    Some(todo)
}

/// Where `map_todo` writes down what it could not bring over, for one
/// LoopX todo.
struct Skips<'a> {
    lid: &'a str,
    out: &'a mut Vec<Skipped>,
}

impl Skips<'_> {
    fn push(&mut self, kind: &'static str, field: Option<&str>, why: String) {
        self.out.push(Skipped {
            kind,
            loopx_id: self.lid.to_owned(),
            field: field.map(str::to_owned),
            why,
        });
    }

    fn todo(&mut self, field: Option<&str>, why: String) {
        self.push("todo", field, why);
    }
}

/// The todo's class and status, `None` (and why) for one that is not
/// imported: a class or status git-loopx has no equivalent of, or archived.
fn class_and_status(
    t: &Map<String, Value>,
    skips: &mut Skips<'_>,
) -> Option<(TodoClass, TodoStatus)> {
    let class = match str_of(t, "task_class").unwrap_or("advancement_task") {
        "advancement_task" => TodoClass::AdvancementTask,
        "continuous_monitor" => TodoClass::ContinuousMonitor,
        "blocker" => TodoClass::Blocker,
        "user_gate" => TodoClass::UserGate,
        "user_action" => TodoClass::UserAction,
        other => {
            skips.todo(
                Some("task_class"),
                format!("task class `{other}` has no equivalent; todo not imported"),
            );
            return None;
        }
    };
    let status = match str_of(t, "status").unwrap_or("open") {
        "open" => TodoStatus::Open,
        "done" => TodoStatus::Done,
        "blocked" => TodoStatus::Blocked,
        "deferred" => TodoStatus::Deferred,
        other => {
            skips.todo(
                Some("status"),
                format!("status `{other}` has no equivalent; todo not imported"),
            );
            return None;
        }
    };
    if str_of(t, "archive_state").is_some_and(|a| a != "active") {
        skips.todo(
            Some("archive_state"),
            "archived todos are not imported".into(),
        );
        return None;
    }
    Some((class, status))
}

/// The todos this one names, each mapped to its git-loopx id: its resume
/// condition, the todo it unblocks, its successors (a name that is not a
/// todo of the goal is skipped), and its gate's scope.
fn links(
    todo: &mut Todo,
    t: &Map<String, Value>,
    todo_ids: &BTreeMap<String, String>,
    skips: &mut Skips<'_>,
) {
    let mapped = |old: &str| todo_ids.get(old).cloned();
    if let Some(cond) = str_of(t, "resume_when") {
        match cond.strip_prefix("todo_done:").map(|x| (x, mapped(x))) {
            Some((_, Some(new))) => todo.resume_when = Some(format!("todo_done:{new}")),
            _ => skips.todo(
                Some("resume_when"),
                format!("resume condition `{cond}` has no equivalent (only todo_done:<a todo of this goal>)"),
            ),
        }
    }
    if let Some(old) = str_of(t, "unblocks_todo_id") {
        match mapped(old) {
            Some(new) => todo.unblocks = Some(new),
            None => skips.todo(
                Some("unblocks_todo_id"),
                format!("`{old}` is not a todo of this goal"),
            ),
        }
    }
    todo.blocks_agent = str_of(t, "blocks_agent").map(str::to_owned);
    todo.global = t
        .get("global_gate")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for old in strings(t, "successor_todo_ids") {
        match mapped(&old) {
            Some(new) => todo.successors.push(new),
            None => skips.todo(
                Some("successor_todo_ids"),
                format!("`{old}` is not a todo of this goal"),
            ),
        }
    }
}

/// A monitor's schedule, when its cadence is a duration.
fn monitor_of(t: &Map<String, Value>, skips: &mut Skips<'_>) -> Option<Monitor> {
    match str_of(t, "cadence") {
        Some(c) if parse_duration(c).is_some() => {
            let time = |key| str_of(t, key).and_then(Timestamp::parse);
            let count = |key| {
                t.get(key)
                    .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
                    .unwrap_or(0)
            };
            Some(Monitor {
                cadence: c.to_owned(),
                next_due_at: time("next_due_at"),
                expires_at: time("expires_at"),
                // LoopX 2.1.1 stores it as the string "true".
                watch_only: matches!(t.get("watch_only"), Some(Value::Bool(true)))
                    || str_of(t, "watch_only") == Some("true"),
                last_checked_at: time("last_checked_at"),
                consecutive_no_change: count("consecutive_no_change"),
                material_change_generation: count("material_change_generation"),
                polls: Vec::new(),
                extra: Extra::new(),
            })
        }
        Some(c) => {
            skips.todo(
                Some("cadence"),
                format!("cadence `{c}` is not a duration like 15m"),
            );
            None
        }
        None => None,
    }
}

/// Leases: the highest epoch is kept so fencing continues; a lease still
/// active at `now` on an open todo becomes its claim.
/// A lease past the highest epoch, or longer than a lease may last, or
/// taken after `now` (a clock far ahead), is not brought over: it would
/// fence its todo for good.
fn bring_leases(
    todo: &mut Todo,
    leases: &[source::Lease],
    status: TodoStatus,
    now: Timestamp,
    skips: &mut Skips<'_>,
) {
    let (mine, odd): (Vec<&source::Lease>, Vec<&source::Lease>) = leases
        .iter()
        .filter(|l| l.todo_id == skips.lid)
        .partition(|l| plausible(l, now));
    for l in odd {
        skips.push(
            "lease",
            None,
            format!(
                "the lease of {} (epoch {}, {} to {}) is past epoch {} or runs more than 24h or from after now: not brought over",
                l.owner,
                l.epoch,
                l.acquired_at,
                l.expires_at,
                crate::model::lease::MAX_IMPORTED_EPOCH
            ),
        );
    }
    todo.last_epoch = mine.iter().map(|l| l.epoch).max().unwrap_or(0);
    if let Some(l) = mine.iter().find(|l| l.status == "active") {
        let acquired = Timestamp::parse(&l.acquired_at);
        let expires = Timestamp::parse(&l.expires_at);
        match (acquired, expires) {
            (Some(acquired_at), Some(expires_at))
                if expires_at > now
                    && status == TodoStatus::Open
                    && ids::is_valid_name(&l.owner) =>
            {
                todo.claim = Some(Claim {
                    agent: l.owner.clone(),
                    epoch: l.epoch,
                    acquired_at,
                    expires_at,
                    extra: Extra::new(),
                });
            }
            _ => skips.push(
                "lease",
                None,
                format!(
                    "the lease of {} (epoch {}) has expired or its todo is not open: no claim",
                    l.owner, l.epoch
                ),
            ),
        }
    }
}

/// Every other field of the record that holds something: skipped by name.
fn unmapped(t: &Map<String, Value>, skips: &mut Skips<'_>) {
    for (key, value) in t {
        if MAPPED.contains(&key.as_str()) || BOOKKEEPING.contains(&key.as_str()) || is_empty(value)
        {
            continue;
        }
        skips.todo(Some(key), "no equivalent in git-loopx".into());
    }
}

/// Whether a LoopX lease is one a clock and a count of claims could have
/// made: an epoch up to [`crate::model::lease::MAX_IMPORTED_EPOCH`], and,
/// when its times read, at most 24 hours long and taken no later than a
/// day after `now`. An unreadable time is left to the claim's own check.
fn plausible(l: &source::Lease, now: Timestamp) -> bool {
    use crate::model::lease::{MAX_IMPORTED_EPOCH, MAX_TTL};
    if l.epoch > MAX_IMPORTED_EPOCH {
        return false;
    }
    match (
        Timestamp::parse(&l.acquired_at),
        Timestamp::parse(&l.expires_at),
    ) {
        (Some(acquired), Some(expires)) => {
            expires.unix() - acquired.unix() <= MAX_TTL && acquired.unix() - now.unix() <= 24 * 3600
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A monitor exactly as LoopX 2.1.1 stored it (`todo add --task-class
    /// continuous_monitor --cadence 15m --watch-only --expires-at …`):
    /// `watch_only` is the string "true".
    #[test]
    fn a_reference_monitor_keeps_every_field() {
        let record = serde_json::json!({
            "archive_state": "active", "cadence": "15m", "done": false,
            "expires_at": "2026-12-31T00:00:00Z", "next_due_at": "2026-12-04T04:07:01Z",
            "priority": "P1", "role": "agent", "schema_version": "todo_domain_record_v0",
            "status": "open", "task_class": "continuous_monitor", "text": "[P1] watch ci",
            "title": "watch ci", "todo_id": "todo_b0611219d70983830cf3431a",
            "updated_at": "2026-12-04T03:52:01Z", "watch_only": "true",
            "consecutive_no_change": "2", "material_change_generation": 1
        });
        let Value::Object(t) = record else {
            unreachable!()
        };
        let now = Timestamp::parse("2026-12-04T04:00:00Z").unwrap();
        let mut skipped = Vec::new();
        let todo = map_todo("g", &t, &[], &BTreeMap::new(), now, &mut skipped).unwrap();
        let m = todo.monitor.expect("a monitor");
        assert_eq!(m.cadence, "15m");
        assert!(m.watch_only, "the string \"true\" is watch-only");
        assert_eq!(m.expires_at, Timestamp::parse("2026-12-31T00:00:00Z"));
        assert_eq!(m.next_due_at, Timestamp::parse("2026-12-04T04:07:01Z"));
        assert_eq!(
            (m.consecutive_no_change, m.material_change_generation),
            (2, 1)
        );
        assert!(skipped.is_empty(), "{skipped:?}");
    }
}
