//! Bounded-time fuzzing of what reads untrusted bytes and of the merge:
//! the YAML codec, the binary cache decoder (snapshots and deltas) and the
//! three-way merge engine.
//!
//! cargo-fuzz needs a nightly compiler and its own crate, so these are
//! self-made mutational loops run as ordinary tests. Each target draws cases
//! from a seeded generator (arbitrary bytes, and real encoded entities,
//! snapshots and deltas mutated: bytes flipped, inserted, deleted, ranges
//! duplicated and spliced between files, truncation, YAML tokens, deep
//! nesting, huge counts and lengths) until its time is up, then prints how
//! many cases it ran.
//!
//! - `LOOPX_FUZZ_SECONDS` — time per target (default 2; CI runs longer);
//! - `LOOPX_FUZZ_SEED` — the run's seed (default: from the clock, printed);
//! - `LOOPX_FUZZ_REPLAY` — run the one case with this case seed (printed on
//!   a failure) and nothing else;
//! - `LOOPX_FUZZ_CASE_MS` — the most one case may take (default 10000,
//!   room for a loaded machine): a slower case fails the target with its
//!   seed, as a hang would.
//!
//! A failure names the target, the case seed and the input (escaped, cut
//! to a few KB).

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use loopx::codec;

use crate::env::within;
use loopx::codec::binary::{self, DeltaFile, DeltaFileRef};
use loopx::model::merge::merge;
use loopx::model::*;

// ---------------------------------------------------------------- driver

/// splitmix64: small, fast, and every seed gives a full-period stream.
#[derive(Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Small numbers often, large ones sometimes.
    fn size(&mut self, max: usize) -> usize {
        let cap = [4, 16, 64, 1024, max][self.below(5)].min(max);
        self.below(cap + 1)
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn budget() -> Duration {
    let secs = std::env::var("LOOPX_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs.max(0.0))
}

/// Runs `check(gen(rng))` on fresh cases until the time budget is spent.
/// The cases run on a worker thread that a watchdog observes, so a case
/// that hangs fails the target (naming its seed) instead of the test run.
/// `describe` renders an input for a failure report. Returns how many
/// cases ran.
fn drive<I, G, C, D>(name: &str, gen: G, check: C, describe: D) -> u64
where
    I: 'static,
    G: Fn(&mut Rng) -> I + Send + Sync + 'static,
    C: Fn(&I) + Send + Sync + 'static,
    D: Fn(&I) -> String + Send + Sync + 'static,
{
    let gen = Arc::new(gen);
    let describe = Arc::new(describe);
    let replay = env_u64("LOOPX_FUZZ_REPLAY");
    let seed = env_u64("LOOPX_FUZZ_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let cap = Duration::from_millis(env_u64("LOOPX_FUZZ_CASE_MS").unwrap_or(10_000));
    let began = Instant::now();
    let deadline = began + budget();
    // (case seed, started) of the case running now.
    let current: Arc<Mutex<Option<(u64, Instant)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let cases = Arc::new(AtomicU64::new(0));
    let (worker_gen, worker_current, worker_stop, worker_cases) =
        (gen.clone(), current.clone(), stop.clone(), cases.clone());
    let worker_describe = describe.clone();
    let worker = std::thread::spawn(move || -> Result<(Duration, u64), String> {
        let mut master = Rng::new(seed);
        let mut slowest = (Duration::ZERO, 0);
        loop {
            let case_seed = replay.unwrap_or_else(|| master.next());
            // The watchdog times the check, not the making of the input.
            let input = worker_gen(&mut Rng::new(case_seed));
            let started = Instant::now();
            *worker_current.lock().unwrap() = Some((case_seed, started));
            let outcome = catch_unwind(AssertUnwindSafe(|| check(&input)));
            let took = started.elapsed();
            *worker_current.lock().unwrap() = None;
            worker_cases.fetch_add(1, Ordering::Relaxed);
            if took > slowest.0 {
                slowest = (took, case_seed);
            }
            if let Err(panic) = outcome {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                return Err(format!(
                    "case {case_seed} panicked: {message}\ninput: {}",
                    worker_describe(&input)
                ));
            }
            if replay.is_some() || worker_stop.load(Ordering::Relaxed) {
                return Ok(slowest);
            }
        }
    });
    loop {
        std::thread::sleep(Duration::from_millis(10));
        if worker.is_finished() {
            break;
        }
        if Instant::now() >= deadline {
            stop.store(true, Ordering::Relaxed);
        }
        let running = *current.lock().unwrap();
        if let Some((case_seed, started)) = running {
            if started.elapsed() > cap {
                // The worker is stuck in this case; leave it and report.
                let input = gen(&mut Rng::new(case_seed));
                panic!(
                    "fuzz {name}: case {case_seed} ran longer than {cap:?} (seed {seed}; \
                     replay with LOOPX_FUZZ_REPLAY={case_seed})\ninput: {}",
                    describe(&input)
                );
            }
        }
    }
    let cases = cases.load(Ordering::Relaxed);
    match worker.join().expect("the worker catches its panics") {
        Ok((slowest, slowest_seed)) => {
            println!(
                "fuzz {name}: {cases} cases in {:.1} s (seed {seed}); slowest {:.1} ms (case {slowest_seed})",
                began.elapsed().as_secs_f64(),
                slowest.as_secs_f64() * 1e3
            );
            cases
        }
        Err(failure) => panic!(
            "fuzz {name} (seed {seed}, after {cases} cases): {failure}\n\
             replay with LOOPX_FUZZ_REPLAY=<case seed above>"
        ),
    }
}

/// Bytes for a report: printable ASCII as is, the rest escaped, cut to 4 KB.
fn show(bytes: &[u8]) -> String {
    let mut out = format!("{} bytes: \"", bytes.len());
    for &b in bytes.iter().take(4096) {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    if bytes.len() > 4096 {
        out.push_str(" …");
    }
    out
}

// ---------------------------------------------------------------- corpus

fn t(s: i64) -> Timestamp {
    Timestamp::from_unix(1_800_000_000 + s)
}

fn extra_of(v: Value) -> Extra {
    match v {
        Value::Object(m) => m.into_iter().collect(),
        _ => Extra::new(),
    }
}

/// A state that sets every field of every entity at least once: two goals,
/// agents, todos of every class (claimed, released, gated, monitored, with
/// notes and unknown fields) and runs of every kind.
pub(crate) fn rich_state(todos: usize, runs: usize) -> State {
    let mut state = State::with_goal(Goal::new("main", "ship it", t(0)), t(0));
    state.meta.extra = extra_of(json!({"zz_future": {"nested": [1, "two", null]}}));
    let mut side = Goal::new("side-quest", "a: colon\nand a line", t(1));
    side.next_action = Some("yes".into());
    side.write_scope = vec!["src/**".into(), "- dash".into()];
    side.guards = vec!["no force push".into()];
    side.authority_sources = vec![AuthoritySource {
        path: "README.md".into(),
        role: "spec".into(),
        extra: Extra::new(),
    }];
    side.quota.allowed_slots = Some(7);
    side.extra = extra_of(json!({"zz_owner": "ops"}));
    state
        .goals
        .insert("side-quest".into(), GoalState::new(side));
    for (i, name) in ["agent-a", "agent-b"].into_iter().enumerate() {
        state.agents.insert(
            name.into(),
            Agent {
                id: name.into(),
                runtime: (i == 0).then(|| "claude".into()),
                capabilities: vec!["rust".into(), "0755".into()],
                registered_at: t(2),
                updated_at: t(3),
                rev: 2,
                extra: extra_of(json!({"zz_host": "~"})),
            },
        );
    }
    let classes = [
        (Role::Agent, TodoClass::AdvancementTask),
        (Role::Agent, TodoClass::ContinuousMonitor),
        (Role::Agent, TodoClass::Blocker),
        (Role::User, TodoClass::UserGate),
        (Role::User, TodoClass::UserAction),
    ];
    let texts = [
        "plain text",
        "key: value # not a comment",
        "line one\nline two\n",
        "\u{85}nel \u{2028} \u{1F980} émoji",
        "'quoted' \"double\" \\ back",
        "- looks like a list",
        "no",
        "1e3",
    ];
    for i in 0..todos {
        let goal = if i % 3 == 2 { "side-quest" } else { "main" };
        let id = ids::derive_id("todo_", &["fuzz", &i.to_string()]);
        let (role, class) = classes[i % classes.len()];
        let mut todo = Todo::new(
            id.clone(),
            goal,
            texts[i % texts.len()],
            role,
            class,
            [Priority::P0, Priority::P1, Priority::P2, Priority::P3][i % 4],
            Some("agent-a"),
            t(10 + i as i64),
        );
        todo.rev = 1 + i as u64;
        todo.updated_at = t(20 + i as i64);
        if role == Role::Agent && i % 2 == 0 {
            todo.claim = Some(Claim {
                agent: "agent-b".into(),
                epoch: 3,
                acquired_at: t(30),
                expires_at: t(930),
                extra: extra_of(json!({"zz_lease": true})),
            });
            todo.last_epoch = 2;
        } else {
            todo.last_epoch = i as u64 % 3;
        }
        if i % 4 == 1 {
            todo.status = [TodoStatus::Blocked, TodoStatus::Deferred, TodoStatus::Done][i % 3];
        }
        todo.requires_capabilities = vec!["rust".into()];
        todo.exclude_agents = vec!["agent-c".into()];
        todo.resume_when = Some(format!("todo_done:{id}"));
        todo.validate = Some("cargo test --quiet".into());
        todo.evidence = Some("ran: ok\n".into());
        todo.successors = vec![ids::derive_id("todo_", &["next", &i.to_string()])];
        if class == TodoClass::UserGate {
            todo.unblocks = Some(ids::derive_id("todo_", &["fuzz", "0"]));
            todo.blocks_agent = Some("agent-a".into());
            todo.global = true;
            todo.decision = Some([Decision::Approve, Decision::Reject, Decision::Cancel][i % 3]);
            todo.resolved_by = Some("A Person <person@example.com>".into());
            todo.resolved_at = Some(t(30));
        }
        todo.notes = (0..i % 4)
            .map(|n| Note {
                at: t(40 + n as i64),
                agent: (n % 2 == 0).then(|| "agent-a".into()),
                text: format!("note {n}: {}", texts[n % texts.len()]),
                extra: if n == 1 {
                    extra_of(json!({"zz_k": 1.5}))
                } else {
                    Extra::new()
                },
            })
            .collect();
        if class == TodoClass::ContinuousMonitor {
            let mut monitor = Monitor::new("1h", t(3600));
            monitor.expires_at = Some(t(86_400));
            monitor.watch_only = i % 2 == 0;
            monitor.last_checked_at = Some(t(0));
            monitor.consecutive_no_change = 2;
            monitor.polls.push(Poll {
                at: t(0),
                agent: Some("agent-a".into()),
                material: false,
                note: Some("quiet".into()),
                follow_up: None,
                extra: Extra::new(),
            });
            todo.monitor = Some(monitor);
        }
        if i % 5 == 0 {
            todo.extra = extra_of(json!({"zz_new_field": ["a", {"b": -1}], "zz_on": "on"}));
        }
        let gs = state.goals.get_mut(goal).unwrap();
        gs.todos.insert(id, todo);
    }
    let kinds = [
        RunKind::Writeback,
        RunKind::Spend,
        RunKind::Void,
        RunKind::Turn,
        RunKind::Note,
    ];
    for i in 0..runs {
        let goal = if i % 3 == 2 { "side-quest" } else { "main" };
        let id = ids::derive_id("run_", &["fuzz", &i.to_string()]);
        let mut run = Run::new(
            id.clone(),
            kinds[i % kinds.len()],
            goal,
            Some("agent-a"),
            t(100 + 86_400 * i as i64),
        );
        run.todo = Some(ids::derive_id("todo_", &["fuzz", "0"]));
        run.epoch = Some(3);
        run.outcome = Some(
            [
                Outcome::SurfaceOnly,
                Outcome::OutcomeGap,
                Outcome::OutcomeProgress,
                Outcome::PrimaryGoalOutcome,
            ][i % 4],
        );
        run.summary = Some(texts[i % texts.len()].into());
        run.validation = Some(Validation {
            command: "cargo test".into(),
            exit_code: -(i as i32),
            extra: Extra::new(),
        });
        run.artifacts = vec!["target/out.txt".into()];
        run.turn = Some(format!("turn-{i}"));
        run.slots = Some(i as u32);
        run.writeback = Some(ids::derive_id("run_", &["wb", &i.to_string()]));
        run.spend = (i % 2 == 1).then(|| ids::derive_id("run_", &["sp", &i.to_string()]));
        run.reason = Some("because".into());
        run.decision = Some(json!({"should_run": i % 2 == 0, "rule": "quota"}));
        run.extra = extra_of(json!({"zz_cost": 0.25}));
        state.goals.get_mut(goal).unwrap().runs.insert(id, run);
    }
    state.check().expect("the corpus state is valid");
    state.clean();
    state
}

/// The YAML files of a few corpus states, as (path, bytes).
fn yaml_corpus() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for (todos, runs) in [(0, 0), (6, 5), (12, 8)] {
        files.extend(codec::encode_state(&rich_state(todos, runs)));
    }
    files.sort();
    files.dedup();
    files
}

/// What the codec target mutates: single files, whole trees, and a state
/// to apply a file to.
struct CodecCorpus {
    files: Vec<(String, Vec<u8>)>,
    trees: Vec<Vec<(String, Vec<u8>)>>,
    state: State,
}

fn codec_corpus() -> CodecCorpus {
    CodecCorpus {
        files: yaml_corpus(),
        trees: [(0, 0), (2, 1), (7, 5)]
            .into_iter()
            .map(|(t, r)| codec::encode_state(&rich_state(t, r)).into_iter().collect())
            .collect(),
        state: rich_state(3, 3),
    }
}

// ---------------------------------------------------------------- mutators

const YAML_TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ",",
    ": ",
    "- ",
    "? ",
    "&a ",
    "*a",
    "&b [*a, *a]",
    "!!str ",
    "!!binary ",
    "!!int ",
    "!!float ",
    "!!map ",
    "!!seq ",
    "!!null ",
    "!!bool ",
    "!!timestamp ",
    "!<tag:yaml.org,2002:str> ",
    "!custom ",
    "<<: *a\n",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "%TAG ! tag:x.org,2000:\n",
    "|\n",
    ">-\n",
    "|+2\n",
    "\"\\u0000\"",
    "\"\\uD800\"",
    "'",
    "\"",
    "#",
    "\n",
    "\n  ",
    "\n    - ",
    "\t",
    "~",
    "null",
    "true",
    "yes",
    "No",
    ".nan",
    ".inf",
    "-.inf",
    "0x7fffffffffffffff",
    "0o777",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "9223372036854775807",
    "-1",
    "1e400",
    "-0",
    "0.1e-400",
    "9999-12-31T23:59:59Z",
    "+10000-01-01T00:00:00Z",
    "-0001-01-01T00:00:00Z",
    "1970-01-01T00:00:00+25:00",
    "2026-02-30T00:00:00Z",
    "2026-12-02T10:00:00.999999999Z",
    "2026-12-02",
    "\u{feff}",
    "\u{85}",
    "\u{2028}",
    "\r\n",
    "\r",
    "\0",
    "\x1b[2J",
    "claim:\n  agent: x\n  epoch: 18446744073709551615\n",
    "epoch: 0\n",
    "rev: -1\n",
    "notes:\n- at: 2026-12-02T10:00:00Z\n  text: n\n",
    "format: 2\n",
    "extra: {a: 1}\n",
    "status: done\n",
    "role: user\n",
    "class: user_gate\n",
    "id: todo_000000000000\n",
];

const BINARY_BYTES: &[u8] = &[0, 1, 2, 3, 4, 5, 0x7f, 0x80, 0xff, b'{', b'"', b'}'];

fn mutate_yaml(rng: &mut Rng, bytes: &mut Vec<u8>, corpus: &[(String, Vec<u8>)]) {
    match rng.below(12) {
        0..=2 => {
            let token = rng.pick(YAML_TOKENS).as_bytes();
            let at = rng.below(bytes.len() + 1);
            bytes.splice(at..at, token.iter().copied());
        }
        3 => {
            // Replace the rest of a line after its key with a token.
            if let Some(at) = line_value_start(rng, bytes) {
                let end = bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |n| at + n);
                let token = rng.pick(YAML_TOKENS).as_bytes();
                bytes.splice(at..end, token.iter().copied());
            }
        }
        4 => nest(rng, bytes),
        5 => repeat_line(rng, bytes),
        _ => mutate_bytes(rng, bytes, corpus, b":-[]{}#&*!|>'\"\n %@`\t,?"),
    }
}

/// Where a random line's value starts (after `key: `), if any.
fn line_value_start(rng: &mut Rng, bytes: &[u8]) -> Option<usize> {
    let lines: Vec<usize> = std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .filter(|&i| i < bytes.len())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let start = *rng.pick(&lines);
    let line_end = bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| start + n);
    let colon = bytes[start..line_end].windows(2).position(|w| w == b": ")?;
    Some(start + colon + 2)
}

/// Deep nesting: flow brackets, flow maps or block sequences, sometimes
/// unclosed.
fn nest(rng: &mut Rng, bytes: &mut Vec<u8>) {
    // Deeper than the parser's recursion limit; kept under ~1,000 so that a
    // case stays fast (the 100,000-deep file has its own test below).
    let depth = 1 + rng.size(1_000);
    let at = line_value_start(rng, bytes).unwrap_or(0);
    let (open, close): (&[u8], &[u8]) = match rng.below(4) {
        0 => (b"[", b"]"),
        1 => (b"{a: ", b"}"),
        2 => (b"[{x: ", b"}]"),
        _ => (b"- ", b""),
    };
    let mut inner = Vec::with_capacity(depth * (open.len() + close.len()) + 1);
    for _ in 0..depth {
        inner.extend_from_slice(open);
    }
    inner.push(b'1');
    if !rng.chance(4) {
        for _ in 0..depth {
            inner.extend_from_slice(close);
        }
    }
    bytes.splice(at..at, inner);
}

/// Huge counts: one line repeated many times.
fn repeat_line(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let Some(at) = line_value_start(rng, bytes) else {
        return;
    };
    let start = bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |n| n + 1);
    let end = bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| at + n + 1);
    let line = bytes[start..end].to_vec();
    let times = 1 + rng.size(20_000);
    let mut grown = Vec::with_capacity(line.len() * times);
    for _ in 0..times {
        grown.extend_from_slice(&line);
    }
    if grown.len() < 1 << 20 {
        bytes.splice(start..start, grown);
    }
}

/// Byte-level mutations: flip, set, insert, delete, duplicate, splice,
/// truncate. `interesting` are bytes worth setting.
fn mutate_bytes(
    rng: &mut Rng,
    bytes: &mut Vec<u8>,
    corpus: &[(String, Vec<u8>)],
    interesting: &[u8],
) {
    let len = bytes.len();
    let at = rng.below(len + 1);
    let span = 1 + rng.size(64).min(len.saturating_sub(at));
    match rng.below(8) {
        0 if at < len => bytes[at] ^= 1 << rng.below(8),
        1 if at < len => bytes[at] = *rng.pick(interesting),
        2 if at < len => bytes[at] = rng.next() as u8,
        3 => {
            let n = 1 + rng.below(8);
            let fresh: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            bytes.splice(at..at, fresh);
        }
        4 if at < len => {
            bytes.drain(at..(at + span).min(len));
        }
        5 if at < len => {
            let piece = bytes[at..(at + span).min(len)].to_vec();
            let to = rng.below(bytes.len() + 1);
            bytes.splice(to..to, piece);
        }
        6 if !corpus.is_empty() => {
            let other = &rng.pick(corpus).1;
            if !other.is_empty() {
                let from = rng.below(other.len());
                let n = (1 + rng.size(256)).min(other.len() - from);
                let cut = (at + rng.size(64)).min(len);
                bytes.splice(at..cut, other[from..from + n].iter().copied());
            }
        }
        _ => bytes.truncate(at),
    }
}

// ---------------------------------------------------------------- codec

/// One codec case: a file of the layout (its path says which entity) and
/// bytes, or a whole tree.
enum CodecCase {
    File(String, Vec<u8>),
    Tree(Vec<(String, Vec<u8>)>),
}

fn describe_codec(case: &CodecCase) -> String {
    match case {
        CodecCase::File(path, bytes) => format!("{path}: {}", show(bytes)),
        CodecCase::Tree(files) => files
            .iter()
            .map(|(p, b)| format!("{p}: {}", show(b)))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// An alias bomb: each level a list of the previous level's alias.
fn alias_bomb(rng: &mut Rng) -> Vec<u8> {
    let levels = 2 + rng.below(10);
    let width = 2 + rng.below(9);
    let mut out = String::from("a0: &a0 [\"lol\"]\n");
    for l in 1..levels {
        let refs = vec![format!("*a{}", l - 1); width].join(", ");
        let _ = writeln!(out, "a{l}: &a{l} [{refs}]");
    }
    let _ = writeln!(out, "text: *a{}", levels - 1);
    out.into_bytes()
}

/// Past this size a file is refused for its size alone: mutating it further
/// only makes the case slow to build (one grew to 600 KB in 21 s).
const GROWN_ENOUGH: usize = 2 * codec::MAX_FILE_BYTES;

fn gen_codec(rng: &mut Rng, all: &CodecCorpus) -> CodecCase {
    let corpus = &all.files[..];
    let (path, seed) = rng.pick(corpus).clone();
    match rng.below(10) {
        0 => {
            let n = rng.size(4096);
            CodecCase::File(path, (0..n).map(|_| rng.next() as u8).collect())
        }
        1 => {
            let mut bytes = alias_bomb(rng);
            if rng.chance(2) {
                bytes.extend_from_slice(&seed);
            }
            CodecCase::File(path, bytes)
        }
        2 => {
            // A whole tree with one to three files mutated, dropped or added.
            let mut files = rng.pick(&all.trees).clone();
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(files.len());
                match rng.below(6) {
                    0 => {
                        files.remove(i);
                    }
                    1 => {
                        let (p, b) = rng.pick(corpus).clone();
                        files.push((p, b));
                    }
                    2 => {
                        let weird = [
                            "goals/main/todos/zz/todo_zz0000000000.yaml",
                            "goals/main/runs/2026-12-02/run_0123456789ab.yaml",
                            "goals/ghost/goal.yaml",
                            "goals/main/todos/ab/cd/todo_ab0000000000.yaml",
                            "agents/.yaml",
                            "agents/../x.yaml",
                            "README.md",
                            "loopx.yaml/x",
                        ];
                        files.push((rng.pick(&weird).to_string(), seed.clone()));
                    }
                    _ => {
                        for _ in 0..1 + rng.size(8) {
                            if files[i].1.len() > GROWN_ENOUGH {
                                break;
                            }
                            mutate_yaml(rng, &mut files[i].1, corpus);
                        }
                    }
                }
            }
            CodecCase::Tree(files)
        }
        _ => {
            let mut bytes = seed;
            for _ in 0..1 + rng.size(12) {
                if bytes.len() > GROWN_ENOUGH {
                    break;
                }
                mutate_yaml(rng, &mut bytes, corpus);
            }
            CodecCase::File(path, bytes)
        }
    }
}

/// Decodes `bytes` as a `T`; what decodes must encode to bytes that decode
/// to the same value, and encode again to the same bytes.
fn round_trips<T>(path: &str, bytes: &[u8])
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let Ok(value) = codec::decode::<T>(path, bytes) else {
        return;
    };
    let encoded = codec::encode(&value);
    // A canonical encoding can be longer than the input (defaults spelt
    // out): past the reader's limit, the writer refuses it before any
    // commit (`Checked`'s readable check), so nothing unreadable is written.
    if encoded.len() > codec::MAX_FILE_BYTES {
        assert!(
            codec::check_file(path, &encoded).is_err(),
            "an encoding past the limit is not refused for writing"
        );
        return;
    }
    let back: T = codec::decode(path, &encoded).unwrap_or_else(|e| {
        panic!(
            "the writer's bytes do not read back: {e}\nvalue: {value:?}\nwritten: {}",
            show(&encoded)
        )
    });
    assert_eq!(
        back,
        value,
        "re-read value differs; written {}",
        show(&encoded)
    );
    assert_eq!(codec::encode(&back), encoded, "encoding is not stable");
}

fn check_codec(case: &CodecCase, corpus: &CodecCorpus) {
    match case {
        CodecCase::File(path, bytes) => {
            // The entity the path names (through the layout, as a delta's
            // file is replayed), and then every other type: a todo's bytes
            // read as a run must be refused just as cleanly.
            let mut state = corpus.state.clone();
            let _ = codec::apply_file(&mut state, path, Some(bytes));
            match bytes.len() % 5 {
                0 => round_trips::<Todo>(path, bytes),
                1 => round_trips::<Run>(path, bytes),
                2 => round_trips::<Goal>(path, bytes),
                3 => round_trips::<Agent>(path, bytes),
                _ => round_trips::<Meta>(path, bytes),
            }
        }
        CodecCase::Tree(files) => {
            let decoded =
                codec::decode_state(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())));
            if let Ok(state) = decoded {
                state.check().expect("a decoded state is valid");
                let again = codec::encode_state(&state);
                let back =
                    codec::decode_state(again.iter().map(|(p, b)| (p.as_str(), b.as_slice())))
                        .unwrap_or_else(|e| panic!("the state's own files do not read back: {e}"));
                assert_eq!(back, state);
            }
        }
    }
}

// ---------------------------------------------------------------- binary

enum BinaryCase {
    /// Snapshot bytes; `sealed`: the checksum was recomputed after the
    /// mutation, so the decoder's structure checks are what is tested.
    Snapshot {
        bytes: Vec<u8>,
        original: Vec<u8>,
        sealed: bool,
    },
    Delta(Vec<u8>),
}

fn describe_binary(case: &BinaryCase) -> String {
    match case {
        BinaryCase::Snapshot { bytes, sealed, .. } => {
            format!("snapshot (sealed {sealed}) {}", show(bytes))
        }
        BinaryCase::Delta(bytes) => format!("delta {}", show(bytes)),
    }
}

fn snapshot_corpus() -> Vec<(String, Vec<u8>)> {
    [(0, 0), (3, 2), (9, 6)]
        .into_iter()
        .map(|(t, r)| {
            (
                format!("snapshot {t}/{r}"),
                binary::encode(&rich_state(t, r)),
            )
        })
        .collect()
}

fn delta_corpus() -> Vec<(String, Vec<u8>)> {
    let state = rich_state(6, 5);
    let gs = &state.goals["main"];
    let todos: Vec<&Todo> = gs.todos.values().collect();
    let runs: Vec<&Run> = gs.runs.values().collect();
    let yaml = codec::encode(&state.goals["main"].goal);
    let files: Vec<(String, DeltaFileRef<'_>)> = vec![
        (codec::todo_path(todos[0]), DeltaFileRef::Todo(todos[0])),
        (codec::todo_path(todos[1]), DeltaFileRef::Todo(todos[1])),
        (codec::run_path(runs[0]), DeltaFileRef::Run(runs[0])),
        (codec::goal_path("main"), DeltaFileRef::Yaml(&yaml)),
        (codec::todo_path(todos[2]), DeltaFileRef::Removed),
    ];
    let refs: Vec<(&str, DeltaFileRef<'_>)> = files
        .iter()
        .map(|(p, f)| {
            let f = match f {
                DeltaFileRef::Removed => DeltaFileRef::Removed,
                DeltaFileRef::Yaml(b) => DeltaFileRef::Yaml(b),
                DeltaFileRef::Todo(t) => DeltaFileRef::Todo(t),
                DeltaFileRef::Run(r) => DeltaFileRef::Run(r),
            };
            (p.as_str(), f)
        })
        .collect();
    vec![
        ("delta".into(), binary::encode_delta(&"a".repeat(40), &refs)),
        (
            "delta 1".into(),
            binary::encode_delta(&"b".repeat(40), &refs[..1]),
        ),
        ("delta 0".into(), binary::encode_delta("", &[])),
    ]
}

/// Overwrites a varint somewhere with a huge one (a length, a count).
fn huge_varint(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let value: u64 = *rng.pick(&[
        u64::MAX,
        u64::MAX / 2,
        u32::MAX as u64,
        1 << 40,
        bytes.len() as u64,
        bytes.len() as u64 + 1,
    ]);
    let mut varint = Vec::new();
    let mut n = value;
    while n >= 0x80 {
        varint.push((n as u8) | 0x80);
        n >>= 7;
    }
    varint.push(n as u8);
    let at = rng.below(bytes.len() + 1);
    let end = (at + 1 + rng.below(2)).min(bytes.len());
    bytes.splice(at..end, varint);
}

fn mutate_binary(rng: &mut Rng, bytes: &mut Vec<u8>, corpus: &[(String, Vec<u8>)]) {
    for _ in 0..1 + rng.size(8) {
        if rng.chance(4) {
            huge_varint(rng, bytes);
        } else {
            mutate_bytes(rng, bytes, corpus, BINARY_BYTES);
        }
    }
}

fn gen_binary(
    rng: &mut Rng,
    snapshots: &[(String, Vec<u8>)],
    deltas: &[(String, Vec<u8>)],
) -> BinaryCase {
    if rng.chance(3) {
        let mut bytes = rng.pick(deltas).1.clone();
        if rng.chance(10) {
            let n = rng.size(512);
            bytes = loopx::codec::binary::DELTA_MAGIC.to_vec();
            bytes.extend((0..n).map(|_| rng.next() as u8));
        } else {
            mutate_binary(rng, &mut bytes, deltas);
        }
        return BinaryCase::Delta(bytes);
    }
    let original = rng.pick(snapshots).1.clone();
    let sealed = !rng.chance(4);
    let mut body = original[..original.len() - 8].to_vec();
    if rng.chance(10) {
        let n = rng.size(1024);
        body = loopx::codec::binary::MAGIC.to_vec();
        body.extend((0..n).map(|_| rng.next() as u8));
    } else {
        mutate_binary(rng, &mut body, snapshots);
    }
    let bytes = if sealed {
        binary::seal(body)
    } else {
        let mut b = body;
        b.extend_from_slice(&original[original.len() - 8..]);
        b
    };
    BinaryCase::Snapshot {
        bytes,
        original,
        sealed,
    }
}

/// Reads everything a decoded snapshot holds, the way commands do: keys,
/// facts straight from the bytes, the entities, and a re-encoding. An entry
/// whose bytes do not decode is not read: a lazy read trusts checksummed
/// bytes (see `codec/binary.rs`), so the check is that the facts and the
/// entity agree wherever the entity decodes.
fn read_all(state: &State) {
    use loopx::model::tracked::Facts;
    let mut trusted = 0;
    for gs in state.goals.values() {
        let keys: Vec<String> = gs.todos.keys().map(str::to_owned).collect();
        for key in &keys {
            let whole = gs.todos.encoded(key).and_then(binary::todo_from);
            if whole.is_none() && gs.todos.encoded(key).is_some() {
                trusted += 1;
                continue;
            }
            let facts = gs.todos.facts(key).expect("a key has facts");
            let todo = gs.todos.get(key).expect("a key has an entity");
            assert_eq!(
                facts,
                todo.facts(),
                "facts from bytes differ from the entity's"
            );
        }
        let keys: Vec<String> = gs.runs.keys().map(str::to_owned).collect();
        for key in &keys {
            let whole = gs.runs.encoded(key).and_then(binary::run_from);
            if whole.is_none() && gs.runs.encoded(key).is_some() {
                trusted += 1;
                continue;
            }
            let facts = gs.runs.facts(key).expect("a key has facts");
            let run = gs.runs.get(key).expect("a key has an entity");
            assert_eq!(
                facts,
                run.facts(),
                "facts from bytes differ from the entity's"
            );
        }
    }
    UNREADABLE.fetch_add(trusted, Ordering::Relaxed);
}

/// Entries of sealed, decoded snapshots whose bytes hold no whole entity
/// (a lazy read of one would panic: it trusts checksummed bytes).
static UNREADABLE: AtomicU64 = AtomicU64::new(0);

fn delta_ref(file: &DeltaFile) -> DeltaFileRef<'_> {
    match file {
        DeltaFile::Removed => DeltaFileRef::Removed,
        DeltaFile::Yaml(b) => DeltaFileRef::Yaml(b),
        DeltaFile::Todo(t) => DeltaFileRef::Todo(t),
        DeltaFile::Run(r) => DeltaFileRef::Run(r),
    }
}

fn check_binary(case: &BinaryCase) {
    match case {
        BinaryCase::Snapshot {
            bytes,
            original,
            sealed,
        } => {
            let decoded = binary::decode(bytes.clone());
            if !sealed && bytes != original {
                assert!(decoded.is_none(), "a damaged snapshot passed its checksum");
            }
            if let Some(state) = decoded {
                read_all(&state);
                let _ = binary::encode(&state);
            }
        }
        BinaryCase::Delta(bytes) => {
            let Some(delta) = binary::decode_delta(bytes) else {
                return;
            };
            let files: Vec<(&str, DeltaFileRef<'_>)> = delta
                .files
                .iter()
                .map(|(path, file)| (path.as_str(), delta_ref(file)))
                .collect();
            // The decoder takes non-minimal varints and any JSON spacing, so
            // the bytes may change once; from then on they are fixed.
            let again = binary::encode_delta(&delta.parent, &files);
            let redecoded = binary::decode_delta(&again).expect("a re-encoded delta decodes");
            assert_eq!(redecoded.files.len(), delta.files.len());
            let files: Vec<(&str, DeltaFileRef<'_>)> = redecoded
                .files
                .iter()
                .map(|(path, file)| (path.as_str(), delta_ref(file)))
                .collect();
            let third = binary::encode_delta(&redecoded.parent, &files);
            assert_eq!(third, again, "a delta's encoding is not stable");
            let mut state = rich_state(6, 5);
            let _ = loopx::store::cache::replay(&mut state, delta.files);
        }
    }
}

// ---------------------------------------------------------------- merge

const AGENTS: &[&str] = &["agent-a", "agent-b", "agent-c"];
const TODO_TEXTS: &[&str] = &["a", "b", "work", "yes"];

/// A random valid state: a few todos (some claimed), runs and agents.
fn random_state(rng: &mut Rng) -> State {
    let mut state = State::with_goal(Goal::new("main", "o", t(0)), t(0));
    if rng.chance(3) {
        state.goals.insert(
            "other".into(),
            GoalState::new(Goal::new("other", "p", t(0))),
        );
    }
    for _ in 0..rng.below(4) {
        let name = *rng.pick(AGENTS);
        state.agents.insert(
            name.into(),
            Agent {
                id: name.into(),
                runtime: None,
                capabilities: Vec::new(),
                registered_at: t(0),
                updated_at: t(0),
                rev: 1,
                extra: Extra::new(),
            },
        );
    }
    for _ in 0..rng.below(6) {
        add_todo(rng, &mut state, 0);
    }
    for _ in 0..rng.below(4) {
        add_run(rng, &mut state, 0);
    }
    state
}

fn goal_ids(state: &State) -> Vec<String> {
    state.goals.keys().cloned().collect()
}

/// Ids come from a small pool so that both sides often add the same one.
fn add_todo(rng: &mut Rng, state: &mut State, at: i64) {
    let goals = goal_ids(state);
    let goal = rng.pick(&goals).clone();
    let id = format!("todo_{:012x}", rng.below(12));
    let user = rng.chance(5);
    let text = TODO_TEXTS[rng.below(TODO_TEXTS.len())];
    let mut todo = Todo::new(
        id.clone(),
        &goal,
        text,
        if user { Role::User } else { Role::Agent },
        if user {
            TodoClass::UserGate
        } else {
            TodoClass::AdvancementTask
        },
        *rng.pick(&[Priority::P0, Priority::P1, Priority::P2]),
        None,
        t(at),
    );
    if !user && rng.chance(2) {
        claim(rng, &mut todo, at);
    }
    state.goals.get_mut(&goal).unwrap().todos.insert(id, todo);
}

fn add_run(rng: &mut Rng, state: &mut State, at: i64) {
    let goals = goal_ids(state);
    let goal = rng.pick(&goals).clone();
    let id = format!("run_{:012x}", rng.below(12));
    let mut run = Run::new(
        id.clone(),
        *rng.pick(&[RunKind::Writeback, RunKind::Spend, RunKind::Turn]),
        &goal,
        Some(*rng.pick(AGENTS)),
        t(at + rng.below(100) as i64),
    );
    run.summary = Some(format!("summary {}", rng.below(5)));
    state.goals.get_mut(&goal).unwrap().runs.insert(id, run);
}

fn claim(rng: &mut Rng, todo: &mut Todo, at: i64) {
    let epoch = todo.epoch().saturating_add(1).max(todo.last_epoch);
    todo.claim = Some(Claim {
        agent: rng.pick(AGENTS).to_string(),
        epoch,
        acquired_at: t(at),
        expires_at: t(at + 600),
        extra: Extra::new(),
    });
}

/// One side's edits on the common base.
fn edit(rng: &mut Rng, state: &mut State, at: i64) {
    for _ in 0..rng.size(10) {
        let goals = goal_ids(state);
        let goal = rng.pick(&goals).clone();
        let gs = state.goals.get_mut(&goal).unwrap();
        let todo_ids: Vec<String> = gs.todos.keys().map(str::to_owned).collect();
        let what = rng.below(14);
        if what >= 10 || todo_ids.is_empty() {
            match what {
                10 => add_todo(rng, state, at),
                11 => add_run(rng, state, at),
                12 => {
                    gs.goal.objective = format!("objective {}", rng.below(4));
                    gs.goal.rev += 1;
                }
                _ => {
                    let name = *rng.pick(AGENTS);
                    let agent = state.agents.entry(name.into()).or_insert_with(|| Agent {
                        id: name.into(),
                        runtime: None,
                        capabilities: Vec::new(),
                        registered_at: t(at),
                        updated_at: t(at),
                        rev: 1,
                        extra: Extra::new(),
                    });
                    agent.capabilities.push(format!("cap{}", rng.below(3)));
                    agent.rev += 1;
                }
            }
            continue;
        }
        let id = rng.pick(&todo_ids).clone();
        if what == 9 {
            gs.todos.remove(&id);
            continue;
        }
        let todo = gs.todos.get_mut(&id).unwrap();
        match what {
            0 => todo.priority = *rng.pick(&[Priority::P0, Priority::P3, Priority::P4]),
            1 => todo.text = format!("text {}", rng.below(5)),
            2 => todo.notes.push(Note {
                at: t(at),
                agent: Some(rng.pick(AGENTS).to_string()),
                text: format!("note {}", rng.below(1000)),
                extra: Extra::new(),
            }),
            3 => {
                todo.extra
                    .insert(format!("zz_{}", rng.below(3)), Value::from(rng.below(4)));
            }
            4 if todo.role == Role::Agent => claim(rng, todo, at),
            5 => {
                if let Some(c) = todo.claim.take() {
                    todo.last_epoch = c.epoch;
                }
            }
            6 => {
                todo.status = TodoStatus::Done;
                if let Some(c) = todo.claim.take() {
                    todo.last_epoch = c.epoch;
                }
            }
            7 => todo.evidence = Some(format!("evidence {}", rng.below(3))),
            _ => {
                // Revisions near the top of the range.
                todo.rev = *rng.pick(&[u64::MAX - 1, u64::MAX, 1 << 63]);
            }
        }
        todo.rev = todo.rev.saturating_add(1);
        todo.updated_at = t(at);
    }
}

struct MergeCase {
    base: Option<State>,
    local: State,
    remote: State,
}

fn describe_merge(case: &MergeCase) -> String {
    let show_state = |s: &State| {
        let files = codec::encode_state(s);
        files
            .iter()
            .map(|(p, b)| format!("--- {p}\n{}", String::from_utf8_lossy(b)))
            .collect::<String>()
    };
    format!(
        "base:\n{}\nlocal:\n{}\nremote:\n{}",
        case.base.as_ref().map_or("(none)".into(), show_state),
        show_state(&case.local),
        show_state(&case.remote)
    )
}

fn gen_merge(rng: &mut Rng) -> MergeCase {
    if rng.chance(8) {
        // Unrelated histories: no base at all.
        return MergeCase {
            base: None,
            local: random_state(rng),
            remote: random_state(rng),
        };
    }
    let base = random_state(rng);
    let mut local = base.clone();
    let mut remote = base.clone();
    edit(rng, &mut local, 10);
    edit(rng, &mut remote, 20);
    for s in [&mut local, &mut remote] {
        s.clean();
    }
    MergeCase {
        base: Some(base),
        local,
        remote,
    }
}

fn run_ids(state: &State) -> Vec<(String, String)> {
    state
        .goals
        .iter()
        .flat_map(|(g, gs)| gs.runs.keys().map(move |r| (g.clone(), r.to_owned())))
        .collect()
}

fn check_merge(case: &MergeCase) {
    let (b, x, y) = (case.base.as_ref(), &case.local, &case.remote);
    let xy = merge(b, x, y);
    assert_eq!(merge(b, x, y), xy, "deterministic");
    let yx = merge(b, y, x);
    match (&xy, &yx) {
        (Ok(xy), Ok(yx)) => {
            // Leases are not merged: when both sides changed one, the
            // remote's wins, so only then may the order matter.
            if xy.lost_claims.is_empty() && yx.lost_claims.is_empty() {
                assert_eq!(xy.state, yx.state, "order independent");
            }
            xy.state.check().expect("a merged state is valid");
            // Every run record of either side survives.
            for side in [x, y] {
                for (g, r) in run_ids(side) {
                    let survives = xy
                        .state
                        .goals
                        .get(&g)
                        .is_some_and(|gs| gs.runs.contains_key(&r));
                    assert!(survives, "run {r} of goal {g} was lost");
                }
            }
            // Merging the result again with either side changes nothing.
            let again = merge(Some(x), &xy.state, x).expect("re-merge");
            assert_eq!(
                again.state, xy.state,
                "re-merging with a side changes nothing"
            );
        }
        (Err(_), Err(_)) => {}
        _ => panic!("one order merges and the other does not: {xy:?} / {yx:?}"),
    }
    for side in [x, y] {
        let same = merge(b, side, side).expect("a state merges with itself");
        assert_eq!(&same.state, side, "idempotent");
        assert!(same.conflicts.is_empty());
    }
    if let Some(b) = b {
        assert_eq!(&merge(Some(b), x, b).unwrap().state, x);
        assert_eq!(&merge(Some(b), b, y).unwrap().state, y);
    }
}

// ---------------------------------------------------------------- targets

#[test]
fn fuzz_codec() {
    let corpus = Arc::new(codec_corpus());
    let c = corpus.clone();
    let cases = drive(
        "codec",
        move |rng| gen_codec(rng, &c),
        move |case| check_codec(case, &corpus),
        describe_codec,
    );
    assert!(cases > 0);
}

#[test]
fn fuzz_binary() {
    let snapshots = Arc::new(snapshot_corpus());
    let deltas = Arc::new(delta_corpus());
    let cases = drive(
        "binary",
        move |rng| gen_binary(rng, &snapshots, &deltas),
        check_binary,
        describe_binary,
    );
    println!(
        "fuzz binary: {} entries of checksummed snapshots held no whole entity",
        UNREADABLE.load(Ordering::Relaxed)
    );
    assert!(cases > 0);
}

#[test]
fn fuzz_merge() {
    let cases = drive("merge", gen_merge, check_merge, describe_merge);
    assert!(cases > 0);
}

/// The corpus itself round-trips through every decoder (so the mutations
/// start from inputs the decoders accept).
#[test]
fn the_corpus_decodes() {
    let corpus = codec_corpus();
    for (path, bytes) in &corpus.files {
        assert!(codec::is_layout_path(path), "{path}");
        check_codec(&CodecCase::File(path.clone(), bytes.clone()), &corpus);
    }
    for tree in &corpus.trees {
        let state = codec::decode_state(tree.iter().map(|(p, b)| (p.as_str(), b.as_slice())));
        assert!(state.is_ok(), "{state:?}");
    }
    for (name, bytes) in snapshot_corpus() {
        let state = binary::decode(bytes).unwrap_or_else(|| panic!("{name} decodes"));
        read_all(&state);
    }
    for (name, bytes) in delta_corpus() {
        assert!(binary::decode_delta(&bytes).is_some(), "{name} decodes");
        check_binary(&BinaryCase::Delta(bytes));
    }
}

/// The known hostile files (issue 13, point 7): 100,000 nested `[` in a
/// 200 KB file, closed or not, must be refused in bounded time. Parse time
/// grew with the square of the depth (~50 s for this file).
#[test]
fn deep_nesting_is_refused_quickly() {
    let closed = format!("text: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let unclosed = format!("text: {}\n", "[".repeat(261_000));
    for (name, file) in [("closed", closed), ("unclosed", unclosed)] {
        assert!(
            file.len() <= codec::MAX_FILE_BYTES,
            "{name} is not refused for its size"
        );
        // A hang detector, not a timing test: the check is linear (micro-
        // seconds), the old parse took ~50 s.
        let outcome = within(Duration::from_secs(10), move || {
            codec::decode::<Todo>(
                "goals/main/todos/00/todo_000000000000.yaml",
                file.as_bytes(),
            )
            .map(drop)
        });
        let outcome = outcome.unwrap_or_else(|| panic!("the {name} file took more than 10 s"));
        assert!(outcome.is_err(), "the {name} file decoded");
    }
}
