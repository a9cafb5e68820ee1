//! Telling the person (`watch`, and `serve` while it runs): what needs them
//! is turned into events, each sent once to what they configured, with
//! retries.
//!
//! An event is a condition of the state at the time of a look, with a key
//! that names it: a gate open (`gate_opened/<goal>/<id>`), a reminder open,
//! a goal done or stopped, a goal throttled until a time, an agent failing
//! (`status`'s agents' health). A key not yet in this host's record is a
//! new event; a sent key whose condition is gone is forgotten, so the same
//! condition coming back (an agent failing again) is told again. The record
//! (`.git/loopx/notify.json`, never on the branch) keeps, per event, the
//! sinks it still has to reach, and when to try again: a delivery that
//! failed is retried with a growing pause (10 s doubling to 10 min), and
//! `doctor` shows it. One watcher a repository delivers at a time (an OS
//! lock on `.git/loopx/notify.lock`).
//!
//! Sinks, from git config: `loopx.notify.command` (run by `sh -c`, the
//! event as one JSON line on its standard input; exit 0 is delivered),
//! `loopx.notify.webhook` (a JSON POST by `curl`; with
//! `loopx.notify.webhookFormat=slack`, `{"text": …}` (with `&`, `<`, `>` escaped as Slack asks) as a Slack-compatible
//! incoming webhook takes), `loopx.notify.desktop=true` (`notify-send`, or
//! `osascript` on macOS).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::{GoalStatus, Timestamp};
use crate::ops::Context;
use crate::Result;

/// One thing to tell the person.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// `gate_opened`, `reminder_opened`, `goal_done`, `goal_stopped`,
    /// `quota_throttled`, `agent_failing`, `answer_ignored` (an answer to a
    /// gate that does not count under gate_signers), `refused` (an attempt
    /// on the person's authority refused on this host),
    /// `governance_lost` (a runtime's hook files no longer govern it) or
    /// `state_broken` (the state cannot be read: `id` is the tip).
    pub kind: String,
    pub repo: String,
    pub goal: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub id: Option<String>,
    pub text: String,
    /// When this host first saw it.
    pub at: Timestamp,
}

/// An event in the record: the sinks it has still to reach.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    event: Event,
    pending: Vec<String>,
    attempts: u32,
    /// Unix seconds before which no retry is made.
    next_try: i64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    error: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    events: BTreeMap<String, Entry>,
}

/// What one look did.
#[derive(Debug, Default, Serialize)]
pub struct Look {
    /// Events seen for the first time.
    pub new: Vec<Event>,
    /// Deliveries made: the sink and the event's key.
    pub delivered: Vec<Delivery>,
    /// Deliveries that failed this time and will be retried.
    pub failed: Vec<Delivery>,
    /// Events still waiting for a sink after this look.
    pub pending: usize,
    /// The sinks configured (none: nothing is recorded or sent).
    pub sinks: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Delivery {
    pub sink: String,
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How many of the last week's refused attempts a look tells.
const REFUSED_TOLD: usize = 50;

const FIRST_RETRY: i64 = 10;
const LAST_RETRY: i64 = 600;
/// How long a sink may take.
const SINK_TIME: Duration = Duration::from_secs(30);

/// The events the state holds now, by key.
pub fn conditions(ctx: &Context) -> Result<BTreeMap<String, Event>> {
    let repo = crate::ops::repos::repository_path(ctx.repo_dir())
        .unwrap_or_else(|_| ctx.repo_dir().to_owned())
        .to_string_lossy()
        .into_owned();
    let all = crate::ops::status::status_all(ctx)?;
    let mut out = BTreeMap::new();
    let mut add = |key: String, kind: &str, goal: &str, id: Option<&str>, text: String| {
        out.insert(
            key,
            Event {
                kind: kind.to_owned(),
                repo: repo.clone(),
                goal: goal.to_owned(),
                id: id.map(str::to_owned),
                text,
                at: ctx.now,
            },
        );
    };
    for g in &all.goals {
        let goal = g.goal.id.as_str();
        for gate in &g.gates {
            let key = format!("gate_opened/{goal}/{}", gate.id);
            add(
                key,
                "gate_opened",
                goal,
                Some(&gate.id),
                gate.question.clone(),
            );
        }
        for t in &g.user_actions {
            let key = format!("reminder_opened/{goal}/{}", t.id);
            add(key, "reminder_opened", goal, Some(&t.id), t.text.clone());
        }
        match g.goal.status {
            GoalStatus::Done => add(
                format!("goal_done/{goal}"),
                "goal_done",
                goal,
                None,
                g.goal.objective.clone(),
            ),
            GoalStatus::Stopped => add(
                format!("goal_stopped/{goal}"),
                "goal_stopped",
                goal,
                None,
                g.goal.objective.clone(),
            ),
            GoalStatus::Active if g.quota.throttled() => add(
                format!("quota_throttled/{goal}/{}", g.quota.next_eligible_at),
                "quota_throttled",
                goal,
                None,
                format!(
                    "{} of {} slots spent in {} h; the next one frees at {}",
                    g.quota.spent_slots,
                    g.quota.allowed_slots,
                    g.quota.window_hours,
                    g.quota.next_eligible_at
                ),
            ),
            GoalStatus::Active => {}
        }
        for a in g.agents.iter().filter(|a| !a.healthy) {
            let mut why = Vec::new();
            if a.consecutive_failures > 0 {
                why.push(format!(
                    "{} failed turn(s) in a row",
                    a.consecutive_failures
                ));
            }
            if a.guard_releases > 0 {
                why.push(format!("{} loop-guard release(s)", a.guard_releases));
            }
            if !a.expired_leases.is_empty() {
                why.push(format!(
                    "lease(s) expired with no writeback: {}",
                    a.expired_leases.join(", ")
                ));
            }
            let key = format!("agent_failing/{goal}/{}", a.id);
            add(key, "agent_failing", goal, Some(&a.id), why.join("; "));
        }
        for a in &g.ignored_answers {
            let key = format!("answer_ignored/{goal}/{}/{}", a.gate, a.commit);
            add(key, "answer_ignored", goal, Some(&a.gate), a.sentence());
        }
    }
    // What is told of this host, not of a goal: under the default goal.
    let goal = all
        .goals
        .first()
        .map(|g| g.goal.id.clone())
        .unwrap_or_default();
    let week_ago = ctx.now.plus_seconds(-7 * 24 * 3600);
    for r in crate::ops::refused::latest(ctx.store.common_dir(), week_ago, REFUSED_TOLD) {
        let what = format!("{} {} {} {}", r.at, r.code, r.by, r.message);
        let key = format!(
            "refused/{}/{}",
            r.at.unix(),
            &sha1_smol::Sha1::from(&what).digest().to_string()[..12]
        );
        let first = r.message.lines().next().unwrap_or_default();
        add(key, "refused", &goal, None, format!("{}: {first}", r.by));
    }
    if let Some(g) = all.goals.first() {
        for u in &g.governance_lost {
            let key = format!("governance_lost/{}/{}", u.runtime, u.path.display());
            add(
                key,
                "governance_lost",
                &goal,
                None,
                format!(
                    "{} is not governed: {}: {}; {}",
                    u.runtime,
                    u.path.display(),
                    u.problem,
                    u.fix
                ),
            );
        }
    }
    Ok(out)
}

/// A configured sink: its name (`command`, `webhook`, `desktop`), what it
/// runs or posts to, and (a webhook) whether it takes Slack's `{"text"}`.
struct Sink {
    name: &'static str,
    target: String,
    slack: bool,
}

fn sinks(ctx: &Context) -> Vec<Sink> {
    let config = |key: &str| {
        ctx.store
            .config_string(key)
            .filter(|v| !v.trim().is_empty())
    };
    let mut out = Vec::new();
    if let Some(target) = config("loopx.notify.command") {
        out.push(Sink {
            name: "command",
            target,
            slack: false,
        });
    }
    if let Some(target) = config("loopx.notify.webhook") {
        let slack = config("loopx.notify.webhookFormat").is_some_and(|f| f == "slack");
        out.push(Sink {
            name: "webhook",
            target,
            slack,
        });
    }
    if config("loopx.notify.desktop").is_some_and(|v| v == "true") {
        out.push(Sink {
            name: "desktop",
            target: String::new(),
            slack: false,
        });
    }
    out
}

fn record_path(ctx: &Context) -> std::path::PathBuf {
    ctx.store.local_dir().join("notify.json")
}

fn read_record(ctx: &Context) -> Record {
    std::fs::read(record_path(ctx))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn write_record(ctx: &Context, record: &Record) -> Result<()> {
    let path = record_path(ctx);
    let tmp = path.with_extension("json.tmp");
    let bytes = serde_json::to_vec_pretty(record).expect("the record serializes");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| crate::Error::invalid_input(format!("cannot write {}: {e}", path.display())))
}

/// One look: the state's events now, the new ones recorded, and every
/// event whose retry is due sent to the sinks it has still to reach.
/// `None` when another watcher of this repository holds the lock.
pub fn look(ctx: &Context) -> Result<Option<Look>> {
    let sinks = sinks(ctx);
    let mut look = Look {
        sinks: sinks.iter().map(|s| s.name.to_owned()).collect(),
        ..Look::default()
    };
    if sinks.is_empty() {
        return Ok(Some(look));
    }
    let Some(_lock) = ctx.store.try_lock_local("notify.lock") else {
        return Ok(None);
    };
    let now = ctx.now.unix();
    let (current, broken) = match conditions(ctx) {
        Ok(current) => (current, false),
        Err(e) if e.code() == crate::model::Code::StateInvalid => (state_broken(ctx, &e), true),
        Err(e) => return Err(e),
    };
    let mut record = read_record(ctx);
    // Sent events whose condition is gone are forgotten: it may come back.
    // While the state cannot be read, nothing is known to be gone.
    record.events.retain(|key, e| {
        !e.pending.is_empty()
            || current.contains_key(key)
            || (broken && !key.starts_with("state_broken/"))
    });
    for (key, event) in current {
        if record.events.contains_key(&key) {
            continue;
        }
        look.new.push(event.clone());
        record.events.insert(
            key,
            Entry {
                event,
                pending: look.sinks.clone(),
                attempts: 0,
                next_try: now,
                error: None,
            },
        );
    }
    for (key, entry) in record.events.iter_mut() {
        if entry.pending.is_empty() || entry.next_try > now {
            continue;
        }
        let mut failed = None;
        entry.pending.retain(|sink| {
            let Some(found) = sinks.iter().find(|s| s.name == sink) else {
                return false; // no longer configured
            };
            match deliver(found, &entry.event) {
                Ok(()) => {
                    look.delivered.push(Delivery {
                        sink: sink.clone(),
                        key: key.clone(),
                        error: None,
                    });
                    false
                }
                Err(e) => {
                    look.failed.push(Delivery {
                        sink: sink.clone(),
                        key: key.clone(),
                        error: Some(e.clone()),
                    });
                    failed = Some(format!("{sink}: {e}"));
                    true
                }
            }
        });
        entry.attempts += 1;
        entry.error = failed;
        if !entry.pending.is_empty() {
            let pause = (FIRST_RETRY << (entry.attempts - 1).min(10)).min(LAST_RETRY);
            entry.next_try = now + pause;
        }
    }
    look.pending = record
        .events
        .values()
        .filter(|e| !e.pending.is_empty())
        .count();
    write_record(ctx, &record)?;
    Ok(Some(look))
}

/// The one event of a state that cannot be read: the tip it was read at,
/// what is wrong, and what to run.
fn state_broken(ctx: &Context, e: &crate::Error) -> BTreeMap<String, Event> {
    let repo = crate::ops::repos::repository_path(ctx.repo_dir())
        .unwrap_or_else(|_| ctx.repo_dir().to_owned())
        .to_string_lossy()
        .into_owned();
    let tip = ctx.store.tip().ok().flatten();
    let short = tip.as_ref().map(|t| t.short().to_owned());
    let key = format!(
        "state_broken/{}",
        tip.as_ref().map_or("none", |t| t.0.as_str())
    );
    let event = Event {
        kind: "state_broken".to_owned(),
        repo,
        goal: "-".to_owned(),
        id: short,
        text: format!("{e}; `git loopx doctor` says how to mend it"),
        at: ctx.now,
    };
    BTreeMap::from([(key, event)])
}

/// Events still waiting for a sink, with their last error (for `doctor`).
pub fn undelivered(ctx: &Context) -> Vec<(String, u32, Option<String>)> {
    read_record(ctx)
        .events
        .into_iter()
        .filter(|(_, e)| !e.pending.is_empty())
        .map(|(key, e)| (key, e.attempts, e.error))
        .collect()
}

/// One line for a person.
pub fn line(event: &Event) -> String {
    let what = match event.kind.as_str() {
        "gate_opened" => "a gate waits for you",
        "reminder_opened" => "a reminder waits for you",
        "goal_done" => "goal done",
        "goal_stopped" => "goal stopped",
        "quota_throttled" => "quota throttled",
        "agent_failing" => "an agent is failing",
        "state_broken" => "the state cannot be read",
        other => other,
    };
    let id = event
        .id
        .as_deref()
        .map(|i| format!(" {i}"))
        .unwrap_or_default();
    format!(
        "git loopx: {what} in {} ({}{id}): {}",
        event.repo, event.goal, event.text
    )
}

/// Text as Slack's message format takes it: `&`, `<` and `>` escaped, so
/// agent text cannot ping (`<!channel>`) or hide a link (`<url|label>`).
fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn deliver(sink: &Sink, event: &Event) -> std::result::Result<(), String> {
    match sink.name {
        "command" => {
            // One JSON line: appended to a file, events stay a line each.
            let mut line = serde_json::to_vec(event).expect("an event serializes");
            line.push(b'\n');
            run(Command::new("sh").args(["-c", &sink.target]), &line)
        }
        "webhook" => {
            let body = match sink.slack {
                true => serde_json::json!({ "text": slack_escaped(&line(event)) }),
                false => serde_json::to_value(event).expect("an event serializes"),
            };
            // curl, as git's own transports use it: any scheme it speaks
            // (https included), proxies from its environment.
            run(
                Command::new("curl").args([
                    "--silent",
                    "--show-error",
                    "--fail",
                    "--max-time",
                    "20",
                    "--header",
                    "Content-Type: application/json",
                    "--data-binary",
                    "@-",
                    "--",
                    &sink.target,
                ]),
                body.to_string().as_bytes(),
            )
        }
        _ => run(&mut desktop(&line(event)), b""),
    }
}

/// The desktop's own notifier: `notify-send` (freedesktop), else macOS's
/// `osascript`, the text given as an argument of the script's run
/// handler, never as script source, so no text can become AppleScript.
fn desktop(text: &str) -> Command {
    let on_path = |program: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
    };
    if !on_path("notify-send") && on_path("osascript") {
        let mut cmd = Command::new("osascript");
        cmd.args([
            "-e",
            "on run argv",
            "-e",
            "display notification (item 1 of argv) with title \"git loopx\"",
            "-e",
            "end run",
            "--",
            text,
        ]);
        return cmd;
    }
    let mut cmd = Command::new("notify-send");
    cmd.args(["git loopx", text]);
    cmd
}

/// Runs a sink's process with `input` on its standard input, within
/// [`SINK_TIME`]; exit 0 is delivered.
fn run(cmd: &mut Command, input: &[u8]) -> std::result::Result<(), String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    let stderr = child.stderr.take();
    let status = crate::git_cmd::wait_limited(&mut child, SINK_TIME, false, &mut |_| {})
        .map_err(|e| e.to_string())?;
    let said = stderr
        .map(|mut s| {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut s, &mut text);
            text
        })
        .unwrap_or_default();
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(format!(
            "exited with {}{}",
            s.code().map_or("a signal".into(), |c| c.to_string()),
            match said.split_whitespace().collect::<Vec<_>>().join(" ") {
                text if text.is_empty() => text,
                text => format!(": {text}"),
            }
        )),
        None => Err(format!("took more than {} s", SINK_TIME.as_secs())),
    }
}
