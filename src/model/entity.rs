//! The entities kept on the state branch (SPEC §2), one file each.
//!
//! Every entity keeps the fields it does not know in `extra`, so a newer peer's
//! additions survive this version's read-modify-write. Field order here is the
//! canonical key order of the YAML files.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::Timestamp;

/// Fields this version does not know, kept verbatim (sorted by key).
pub type Extra = BTreeMap<String, serde_json::Value>;

/// The state format this version reads and writes.
pub const FORMAT: u32 = 1;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `loopx.yaml`: what the branch is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub format: u32,
    pub default_goal: String,
    pub created_at: Timestamp,
    /// The keys that sign gate resolutions (ssh public keys, `type base64
    /// [comment]`): when set, a resolution counts only when the state commit
    /// that made it is signed by one of them (docs/gates.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gate_signers: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Active,
    Stopped,
    /// Marked done by `goal done` (or `todo done --no-follow-up` on the
    /// last open todo): no turn runs until `goal resume`.
    Done,
}

/// One source of authority the agents must respect (a spec file, a policy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuthoritySource {
    pub path: String,
    pub role: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The compute quota policy of a goal (SPEC §2.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuotaPolicy {
    #[serde(default = "default_compute", deserialize_with = "finite")]
    pub compute: f64,
    #[serde(default = "default_window_hours")]
    pub window_hours: u32,
    #[serde(default = "default_slot_minutes")]
    pub slot_minutes: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_slots: Option<u32>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn default_compute() -> f64 {
    1.0
}

/// A finite number: YAML's `.nan` and `.inf` read as numbers, but the
/// writer has no spelling for them (they would be written as `null`, which
/// no reader takes), and a quota of either means nothing.
fn finite<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!(
            "`compute` is {value}, not a finite number"
        )))
    }
}
fn default_window_hours() -> u32 {
    24
}
fn default_slot_minutes() -> u32 {
    1
}

impl Default for QuotaPolicy {
    fn default() -> Self {
        QuotaPolicy {
            compute: default_compute(),
            window_hours: default_window_hours(),
            slot_minutes: default_slot_minutes(),
            allowed_slots: None,
            extra: Extra::new(),
        }
    }
}

impl QuotaPolicy {
    /// The compute that counts: clamped to [0, 1] and kept to two
    /// decimals, as LoopX 2.1.1 reads it (`round(x, 2)`: the float's exact
    /// value rounded, half to even, which Rust's `{:.2}` also does).
    pub fn effective_compute(&self) -> f64 {
        let clamped = self.compute.clamp(0.0, 1.0);
        format!("{clamped:.2}").parse().unwrap_or(clamped)
    }

    /// `round(window_hours * 60 / slot_minutes * compute)` unless
    /// overridden, half to even as LoopX rounds it.
    pub fn allowed_slots(&self) -> u32 {
        if let Some(n) = self.allowed_slots {
            return n;
        }
        let slots = f64::from(self.window_hours) * 60.0 / f64::from(self.slot_minutes.max(1));
        (slots * self.effective_compute()).round_ties_even() as u32
    }
}

/// `goals/<id>/goal.yaml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    pub id: String,
    pub objective: String,
    pub status: GoalStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_scope: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authority_sources: Vec<AuthoritySource>,
    #[serde(default)]
    pub quota: QuotaPolicy,
    /// Whether a goal whose only open todos are blocked asks for a replan
    /// turn (the default) or waits for them (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replan_when_blocked: Option<bool>,
    /// The goal decisions only a person takes (`done`, `stop`): refused to
    /// an agent and inside an agent runtime.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub person_only: Vec<String>,
    /// Who marked the goal done (an agent id, or a person's `name <email>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_at: Option<Timestamp>,
    /// Why the goal is done, in the words of whoever marked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_note: Option<String>,
    /// Where the runs that left the tip's tree went (see
    /// [`crate::model::retention`]): the latest archives only, each of
    /// which leads to the ones before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archive: Vec<Archived>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub rev: u64,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One archive of a goal's runs: the days up to `through` left the tip's
/// tree in a commit whose parent, `commit`, still holds them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Archived {
    /// Every run dated before this time left the tree (one written late,
    /// after the archive, leaves with the next).
    pub through: Timestamp,
    /// How many run records left the tree.
    pub runs: u64,
    /// The highest `seq` among them, so numbering goes on after it.
    pub last_seq: u64,
    /// The commit that still holds them: the parent of the archiving commit.
    pub commit: String,
    /// Each agent's latest turn and writeback among the runs archived so
    /// far (by this archive and the ones before it), so that a reader of
    /// the tip knows when an agent was last seen without reading history.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, LastSeen>,
}

/// An agent's latest turn receipt and writeback in a goal's archived runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LastSeen {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback: Option<Timestamp>,
    /// The writeback's run and todo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todo: Option<String>,
}

impl LastSeen {
    /// The later of each of `self`'s and `other`'s.
    pub fn merge(&mut self, other: &LastSeen) {
        self.turn = self.turn.max(other.turn);
        if other.writeback > self.writeback {
            self.writeback = other.writeback;
            self.run = other.run.clone();
            self.todo = other.todo.clone();
        }
    }
}

impl Goal {
    /// Whether a goal blocked on every side asks for a replan turn.
    pub fn replans_when_blocked(&self) -> bool {
        self.replan_when_blocked.unwrap_or(true)
    }

    /// A new active goal with the default quota policy.
    pub fn new(id: &str, objective: &str, now: Timestamp) -> Self {
        Goal {
            id: id.to_owned(),
            objective: objective.to_owned(),
            status: GoalStatus::Active,
            next_action: None,
            write_scope: Vec::new(),
            guards: Vec::new(),
            authority_sources: Vec::new(),
            quota: QuotaPolicy::default(),
            replan_when_blocked: None,
            person_only: Vec::new(),
            done_by: None,
            done_at: None,
            done_note: None,
            archive: Vec::new(),
            created_at: now,
            updated_at: now,
            rev: 1,
            extra: Extra::new(),
        }
    }
}

/// `agents/<id>.yaml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    pub registered_at: Timestamp,
    pub updated_at: Timestamp,
    pub rev: u64,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(inline))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Agent,
    User,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(inline))]
#[serde(rename_all = "snake_case")]
pub enum TodoClass {
    AdvancementTask,
    ContinuousMonitor,
    Blocker,
    UserGate,
    UserAction,
}

impl TodoClass {
    pub fn role(self) -> Role {
        match self {
            TodoClass::AdvancementTask | TodoClass::ContinuousMonitor | TodoClass::Blocker => {
                Role::Agent
            }
            TodoClass::UserGate | TodoClass::UserAction => Role::User,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(inline))]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Open,
    Blocked,
    Deferred,
    Done,
}

impl TodoStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, TodoStatus::Done | TodoStatus::Deferred)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(inline))]
pub enum Priority {
    P0,
    P1,
    P2,
    P3,
    P4,
}

/// A lease on a todo (SPEC §2.2): live while `now < expires_at`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub agent: String,
    pub epoch: u64,
    pub acquired_at: Timestamp,
    pub expires_at: Timestamp,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Claim {
    pub fn is_live(&self, now: Timestamp) -> bool {
        now < self.expires_at
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The schedule and recent polls of a `continuous_monitor` todo (field
/// names as LoopX 2.x names them; see docs/agent-loop.md "Monitors").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Monitor {
    /// How often it is due, as given to `--every` (e.g. `15m`).
    pub cadence: String,
    /// When it is next due: a monitor is selected only from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_due_at: Option<Timestamp>,
    /// From this time on the monitor has expired and is not selected again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Its turns only observe and report: no code changes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub watch_only: bool,
    /// When the last poll was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_checked_at: Option<Timestamp>,
    /// Quiet polls since the last material one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub consecutive_no_change: u64,
    /// How many polls found something that needs work.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub material_change_generation: u64,
    /// The last polls, oldest first (at most [`Monitor::KEPT_POLLS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub polls: Vec<Poll>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Monitor {
    /// How many polls a monitor keeps: older ones are dropped, so a
    /// long-running monitor does not grow its file without bound.
    pub const KEPT_POLLS: usize = 20;

    /// A monitor due every `cadence`, first due at `next_due_at`.
    pub fn new(cadence: &str, next_due_at: Timestamp) -> Self {
        Monitor {
            cadence: cadence.to_owned(),
            next_due_at: Some(next_due_at),
            expires_at: None,
            watch_only: false,
            last_checked_at: None,
            consecutive_no_change: 0,
            material_change_generation: 0,
            polls: Vec::new(),
            extra: Extra::new(),
        }
    }

    /// Whether it has expired at `now` (`expires_at` reached).
    pub fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|e| e <= now)
    }
}

/// One recorded poll of a monitor (`todo poll`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Poll {
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// It found something that needs work (else it was quiet).
    #[serde(default)]
    pub material: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The todo a material poll created for the work it found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
    Cancel,
}

/// `goals/<goal>/todos/<xx>/<id>.yaml`: agent and user todos; gates are `user_gate`s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Todo {
    pub id: String,
    pub goal: String,
    pub text: String,
    pub role: Role,
    pub class: TodoClass,
    pub status: TodoStatus,
    pub priority: Priority,
    pub created_at: Timestamp,
    /// The order the todo was added in within its goal: one more than the
    /// highest `seq` when it was added (see [`crate::model::GoalState::add_todo`]).
    /// Todos made by older versions have none and sort by `created_at`, `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    pub updated_at: Timestamp,
    pub rev: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub last_epoch: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires_capabilities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_agents: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_when: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub successors: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unblocks: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_agent: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub global: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Who answered a gate: the git identity (`name <email>`) of the person
    /// who resolved it, as git names the committer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<String>,
    /// When the gate was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
    /// The latest handoff and its packet (`todo handoff`); a new one replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Box<crate::model::handoff::Handoff>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<Monitor>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Todo {
    /// Ordering key: (priority, created_at, seq, id).
    pub fn order_key(&self) -> (Priority, Timestamp, Option<u64>, &str) {
        (self.priority, self.created_at, self.seq, &self.id)
    }

    /// The order todos were added in: (created_at, seq, id).
    pub fn added_key(&self) -> (Timestamp, Option<u64>, &str) {
        (self.created_at, self.seq, &self.id)
    }

    pub fn is_gate(&self) -> bool {
        self.class == TodoClass::UserGate
    }

    /// The claim, if it is still live at `now`.
    pub fn live_claim(&self, now: Timestamp) -> Option<&Claim> {
        self.claim.as_ref().filter(|c| c.is_live(now))
    }

    /// The highest epoch this todo has handed out.
    pub fn epoch(&self) -> u64 {
        self.claim
            .as_ref()
            .map_or(self.last_epoch, |c| c.epoch.max(self.last_epoch))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Writeback,
    Spend,
    Void,
    Turn,
    /// A todo's note moved out of the todo's file when a merge made the
    /// file too large (`model::limits::shed_notes`): `todo`, `agent`, `at`
    /// and the text in `summary`.
    Note,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(inline))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    SurfaceOnly,
    OutcomeGap,
    OutcomeProgress,
    PrimaryGoalOutcome,
}

impl Outcome {
    /// Accountable outcomes are the ones a spend may be charged to.
    pub fn is_accountable(self) -> bool {
        matches!(self, Outcome::OutcomeProgress | Outcome::PrimaryGoalOutcome)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    pub command: String,
    pub exit_code: i32,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `goals/<goal>/runs/<yyyy-mm-dd>/<xx>/<id>.yaml` (`<xx>` the id's shard):
/// the append-only evidence ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    pub kind: RunKind,
    pub goal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub at: Timestamp,
    /// The order the record was added in within its goal (see
    /// [`crate::model::GoalState::add_run`]); records of the same second sort
    /// by it. Older records have none and sort by `at`, `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Validation>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// Evidence outside git (a CI run, a report): URLs, append-only like `artifacts`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifact_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A turn receipt's recorded `should-run` answer, replayed for its key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<serde_json::Value>,
    /// A planning or replanning turn's receipt: the highest todo `seq` of
    /// the goal when the turn was decided, so a later decision can tell
    /// whether the turn added any todo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todo_seq: Option<u64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The snake_case name of a status, for messages.
pub fn status_name(status: TodoStatus) -> &'static str {
    match status {
        TodoStatus::Open => "open",
        TodoStatus::Blocked => "blocked",
        TodoStatus::Deferred => "deferred",
        TodoStatus::Done => "done",
    }
}

impl Run {
    /// The order records were added in: (at, seq, id).
    pub fn added_key(&self) -> (Timestamp, Option<u64>, &str) {
        (self.at, self.seq, &self.id)
    }

    /// A run record with only the common fields set.
    pub fn new(id: String, kind: RunKind, goal: &str, agent: Option<&str>, at: Timestamp) -> Self {
        Run {
            id,
            kind,
            goal: goal.to_owned(),
            agent: agent.map(str::to_owned),
            at,
            seq: None,
            todo: None,
            epoch: None,
            outcome: None,
            summary: None,
            validation: None,
            artifacts: Vec::new(),
            artifact_urls: Vec::new(),
            turn: None,
            slots: None,
            writeback: None,
            spend: None,
            reason: None,
            decision: None,
            todo_seq: None,
            extra: Extra::new(),
        }
    }
}

impl Todo {
    /// A new open todo with only the required fields set.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: String,
        goal: &str,
        text: &str,
        role: Role,
        class: TodoClass,
        priority: Priority,
        created_by: Option<&str>,
        now: Timestamp,
    ) -> Self {
        Todo {
            id,
            goal: goal.to_owned(),
            text: text.to_owned(),
            role,
            class,
            status: TodoStatus::Open,
            priority,
            created_at: now,
            seq: None,
            created_by: created_by.map(str::to_owned),
            updated_at: now,
            rev: 1,
            claim: None,
            last_epoch: 0,
            requires_capabilities: Vec::new(),
            exclude_agents: Vec::new(),
            resume_when: None,
            validate: None,
            evidence: None,
            successors: Vec::new(),
            unblocks: None,
            blocks_agent: None,
            global: false,
            decision: None,
            resolved_by: None,
            resolved_at: None,
            notes: Vec::new(),
            handoff: None,
            monitor: None,
            extra: Extra::new(),
        }
    }
}

/// The serde (snake_case) name of a unit enum value.
pub fn entity_name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::from("?"),
    }
}
