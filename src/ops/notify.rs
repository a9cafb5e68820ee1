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
//! A look delivers the oldest ten events due one by one and tells the
//! others in one `more_events` notification a sink, naming their keys. The
//! record is replaced whole (written, synced, renamed) after each event, so
//! a watcher killed mid-look sends again at most the event in flight. A
//! record that cannot be read is set aside (`notify.json.damaged`, which
//! `doctor` reports): the events of that look are taken as sent, and one
//! `record_damaged` notification says so, instead of every event again.
//! A sink's process leads a process group of its own: the whole group is
//! stopped at 30 s, and what the process left running in it when it exits
//! is stopped then; its standard error is never waited on past its exit.
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

use crate::model::Timestamp;
use crate::session::Context;
use crate::Result;

mod events;

pub use events::conditions;

/// One thing to tell the person.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// `gate_opened`, `reminder_opened`, `goal_done`, `goal_stopped`,
    /// `quota_throttled`, `agent_failing`, `answer_ignored` (an answer to a
    /// gate that does not count under gate_signers), `refused` (an attempt
    /// on the person's authority refused on this host),
    /// `governance_lost` (a runtime's hook files no longer govern it) or
    /// `state_broken` (the state cannot be read: `id` is the tip);
    /// `more_events` (the events a look did not send one by one, `keys`)
    /// or `record_damaged` (this host's record of what was sent could not
    /// be read).
    pub kind: String,
    pub repo: String,
    pub goal: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub id: Option<String>,
    pub text: String,
    /// When this host first saw it.
    pub at: Timestamp,
    /// `more_events`: the keys of the events it tells.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub keys: Vec<String>,
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
    /// What the person should know of the look itself (a damaged record).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Delivery {
    pub sink: String,
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

const FIRST_RETRY: i64 = 10;
const LAST_RETRY: i64 = 600;
/// How long a sink may take.
const SINK_TIME: Duration = Duration::from_secs(30);

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

/// Where a record that could not be read is set aside.
fn damaged_path(ctx: &Context) -> std::path::PathBuf {
    ctx.store.local_dir().join("notify.json.damaged")
}

/// The record as read: none yet, or one that cannot be read (what is wrong).
enum Stored {
    Missing,
    Found(Record),
    Damaged(String),
}

fn read_record(ctx: &Context) -> Stored {
    match std::fs::read(record_path(ctx)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored::Missing,
        Err(e) => Stored::Damaged(e.to_string()),
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(record) => Stored::Found(record),
            Err(e) => Stored::Damaged(e.to_string()),
        },
    }
}

/// Writes the record whole — a new file, flushed to the disk, renamed over
/// the old one — so a watcher killed at any point leaves the old record or
/// the new one, never a part.
fn write_record(ctx: &Context, record: &Record) -> Result<()> {
    let path = record_path(ctx);
    let tmp = path.with_extension("json.tmp");
    let bytes = serde_json::to_vec_pretty(record).expect("the record serializes");
    let written = std::fs::File::create(&tmp).and_then(|mut file| {
        file.write_all(&bytes)?;
        file.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| crate::Error::invalid_input(format!("cannot write {}: {e}", path.display())))
}

/// How many events a look delivers one by one; the others due are told
/// in one notification a sink (`more_events`), so a burst costs a look at
/// most this many processes and one more.
pub const ONE_BY_ONE: usize = 10;

/// One look: the state's events now, the new ones recorded, and every
/// event whose retry is due sent to the sinks it has still to reach — the
/// oldest [`ONE_BY_ONE`] one by one, the others in one notification a
/// sink. The record is written after each event, so a watcher killed
/// mid-look sends again at most the event it was delivering.
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
    let mut record = match read_record(ctx) {
        Stored::Found(record) => record,
        Stored::Missing => Record::default(),
        Stored::Damaged(why) => damaged_record(ctx, &mut look, &current, &why, now),
    };
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
        record
            .events
            .insert(key, Entry::new(event, look.sinks.clone(), now));
    }
    write_record(ctx, &record)?;
    let mut due: Vec<(Timestamp, String)> = record
        .events
        .iter()
        .filter(|(_, e)| !e.pending.is_empty() && e.next_try <= now)
        .map(|(key, e)| (e.event.at, key.clone()))
        .collect();
    due.sort();
    let rest = due.split_off(due.len().min(ONE_BY_ONE));
    for (_, key) in due {
        send_alone(&sinks, &mut record, &mut look, &key, now);
        write_record(ctx, &record)?;
    }
    if !rest.is_empty() {
        let rest: Vec<String> = rest.into_iter().map(|(_, key)| key).collect();
        send_together(ctx, &sinks, &mut record, &mut look, &rest, now);
        write_record(ctx, &record)?;
    }
    look.pending = record
        .events
        .values()
        .filter(|e| !e.pending.is_empty())
        .count();
    Ok(Some(look))
}

/// What was delivered is unknown: take every event of now as told (a
/// flood of all of them is worse than one message), and say so, once,
/// through the sinks; the damaged record is set aside.
fn damaged_record(
    ctx: &Context,
    look: &mut Look,
    current: &BTreeMap<String, Event>,
    why: &str,
    now: i64,
) -> Record {
    let _ = std::fs::rename(record_path(ctx), damaged_path(ctx));
    look.warnings.push(format!(
        "{} could not be read ({why}): the {} event(s) of now are taken as delivered, and the record was set aside as {}",
        record_path(ctx).display(),
        current.len(),
        damaged_path(ctx).display()
    ));
    let mut record = Record::default();
    for (key, event) in current {
        record
            .events
            .insert(key.clone(), Entry::told(event.clone()));
    }
    let event = Event {
        kind: "record_damaged".to_owned(),
        repo: repo_name(ctx),
        goal: "-".to_owned(),
        id: None,
        text: format!(
            "this host's record of notifications sent could not be read ({why}); the {} event(s) of now were taken as sent: `git loopx status` shows them",
            current.len()
        ),
        at: ctx.now,
        keys: Vec::new(),
    };
    record.events.insert(
        format!("record_damaged/{now}"),
        Entry::new(event, look.sinks.clone(), now),
    );
    record
}

/// Sends the event `key` on its own to each sink it is pending for; a sink
/// no longer configured is dropped, one that failed is tried again later.
fn send_alone(sinks: &[Sink], record: &mut Record, look: &mut Look, key: &str, now: i64) {
    let entry = record.events.get_mut(key).expect("a due key is recorded");
    let mut failed = None;
    entry.pending.retain(|sink| {
        let Some(found) = sinks.iter().find(|s| s.name == sink) else {
            return false; // no longer configured
        };
        let result = deliver(found, &entry.event);
        look.settle(sink, key, &result);
        if let Err(e) = &result {
            failed = Some(format!("{sink}: {e}"));
        }
        result.is_err()
    });
    entry.tried(failed, now);
}

/// Sends the due events past the first few as one `more_events` message a
/// sink; each is settled by how its sinks took it.
fn send_together(
    ctx: &Context,
    sinks: &[Sink],
    record: &mut Record,
    look: &mut Look,
    rest: &[String],
    now: i64,
) {
    let mut failed: BTreeMap<&str, String> = BTreeMap::new();
    for sink in sinks {
        let keys: Vec<String> = rest
            .iter()
            .filter(|k| record.events[*k].pending.iter().any(|p| p == sink.name))
            .cloned()
            .collect();
        if keys.is_empty() {
            continue;
        }
        let result = deliver(sink, &more_events(ctx, record, keys.clone()));
        for key in &keys {
            look.settle(sink.name, key, &result);
        }
        match result {
            Ok(()) => {
                for key in &keys {
                    let entry = record.events.get_mut(key).expect("recorded");
                    entry.pending.retain(|p| p != sink.name);
                }
            }
            Err(e) => {
                failed.insert(sink.name, e);
            }
        }
    }
    for key in rest {
        let entry = record.events.get_mut(key).expect("recorded");
        entry.pending.retain(|p| sinks.iter().any(|s| s.name == p));
        let why = entry
            .pending
            .iter()
            .find_map(|p| failed.get(p.as_str()).map(|e| format!("{p}: {e}")));
        entry.tried(why, now);
    }
}

impl Entry {
    fn new(event: Event, pending: Vec<String>, now: i64) -> Entry {
        Entry {
            event,
            pending,
            attempts: 0,
            next_try: now,
            error: None,
        }
    }

    /// An event taken as told to every sink.
    fn told(event: Event) -> Entry {
        Entry::new(event, Vec::new(), 0)
    }

    /// After a try: the error, and the pause before the next one while a
    /// sink is still to be reached.
    fn tried(&mut self, failed: Option<String>, now: i64) {
        self.attempts += 1;
        self.error = failed;
        if !self.pending.is_empty() {
            let pause = (FIRST_RETRY << (self.attempts - 1).min(10)).min(LAST_RETRY);
            self.next_try = now + pause;
        }
    }
}

impl Look {
    fn settle(&mut self, sink: &str, key: &str, result: &std::result::Result<(), String>) {
        let delivery = Delivery {
            sink: sink.to_owned(),
            key: key.to_owned(),
            error: result.as_ref().err().cloned(),
        };
        match result {
            Ok(()) => self.delivered.push(delivery),
            Err(_) => self.failed.push(delivery),
        }
    }
}

/// The one notification for the events a look does not send one by one:
/// how many of each kind, and their keys.
fn more_events(ctx: &Context, record: &Record, keys: Vec<String>) -> Event {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for key in &keys {
        *kinds
            .entry(record.events[key].event.kind.as_str())
            .or_default() += 1;
    }
    let each: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    Event {
        kind: "more_events".to_owned(),
        repo: repo_name(ctx),
        goal: "-".to_owned(),
        id: None,
        text: format!(
            "{} more event(s) ({}); `git loopx status` shows them",
            keys.len(),
            each.join(", ")
        ),
        at: ctx.now,
        keys,
    }
}

fn repo_name(ctx: &Context) -> String {
    crate::ops::repos::repository_path(ctx.repo_dir())
        .unwrap_or_else(|_| ctx.repo_dir().to_owned())
        .to_string_lossy()
        .into_owned()
}

/// The one event of a state that cannot be read: the tip it was read at,
/// what is wrong, and what to run.
fn state_broken(ctx: &Context, e: &crate::Error) -> BTreeMap<String, Event> {
    let repo = repo_name(ctx);
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
        keys: Vec::new(),
    };
    BTreeMap::from([(key, event)])
}

/// What is wrong with this host's record of notifications, for `doctor`:
/// what it found, and what to do.
pub fn record_problem(ctx: &Context) -> Option<(String, String)> {
    if let Stored::Damaged(why) = read_record(ctx) {
        return Some((
            format!(
                "{} cannot be read ({why}): the next look takes the events of then as sent and tells the person once",
                record_path(ctx).display()
            ),
            "`git loopx watch --once` sets it aside and starts a new record".to_owned(),
        ));
    }
    let damaged = damaged_path(ctx);
    damaged.exists().then(|| {
        (
            format!(
                "a record of notifications that could not be read was set aside as {}: events that were still to be retried then were taken as sent",
                damaged.display()
            ),
            format!(
                "see `git loopx status` for what waits for you, then remove {}",
                damaged.display()
            ),
        )
    })
}

/// Events still waiting for a sink, with their last error (for `doctor`).
pub fn undelivered(ctx: &Context) -> Vec<(String, u32, Option<String>)> {
    let Stored::Found(record) = read_record(ctx) else {
        return Vec::new();
    };
    record
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
        "more_events" => "more events wait",
        "record_damaged" => "this host's record of notifications was damaged",
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

/// How much of a sink's standard error is kept for its error message.
const SAID_KEPT: usize = 4096;

/// Runs a sink's process with `input` on its standard input, within
/// [`SINK_TIME`]; exit 0 is delivered. It leads a process group of its
/// own: at the limit the whole group is stopped, and when the process
/// exits, whatever it left running in its group is stopped too (SIGTERM,
/// SIGKILL 5 s later). Its standard error is read as it comes, never waited
/// for: a process that left its group (`setsid`) and still holds the pipe
/// does not hold up the look.
fn run(cmd: &mut Command, input: &[u8]) -> std::result::Result<(), String> {
    use std::os::unix::process::CommandExt as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    // Written from a thread: a sink that never reads its input must not
    // block the look on a full pipe. Not joined, for the same reason.
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let mut stderr = child.stderr.take();
    if let Some(pipe) = &stderr {
        let flags = rustix::fs::fcntl_getfl(pipe).map_err(|e| e.to_string())?;
        rustix::fs::fcntl_setfl(pipe, flags | rustix::fs::OFlags::NONBLOCK)
            .map_err(|e| e.to_string())?;
    }
    let mut said = Vec::new();
    let mut drain = |pipe: &mut Option<std::process::ChildStderr>| {
        let mut buf = [0u8; 4096];
        while let Some(p) = pipe {
            match std::io::Read::read(p, &mut buf) {
                Ok(0) => *pipe = None,
                Ok(n) => {
                    let room = SAID_KEPT.saturating_sub(said.len());
                    said.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break, // nothing more for now
            }
        }
    };
    let status =
        crate::git_cmd::wait_limited(&mut child, SINK_TIME, true, &mut |_| drain(&mut stderr))
            .map_err(|e| e.to_string())?;
    drain(&mut stderr);
    drop(stderr);
    if status.is_some() {
        crate::git_cmd::stop_group(child.id());
    }
    let said = String::from_utf8_lossy(&said);
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
