//! The soak: `cargo run --release --example soak`.
//!
//! One repository with 4 linked worktrees (`git worktree add`) and 16 writer
//! threads spread over them, each looping real `git-loopx` processes as its
//! own agent: `todo next --claim` (adding a todo when nothing is ready),
//! `todo update --note` with a unique token, `writeback`, `todo done`, and
//! more `todo add`s. A share of the commands is SIGKILLed at a random moment
//! mid-command, and a `git gc` (the default, not `--prune=now`) runs in a
//! loop the whole time. `LOOPX_NOW` runs 10× faster than the wall clock, so
//! the 2-minute leases of killed writers expire and are taken over.
//!
//! Every acknowledged write (the command exited 0 and printed its JSON) is
//! recorded: the note's token, the added todo's id, the writeback's run id,
//! the completed todo, the granted (todo, epoch, agent). At the end the soak
//! checks that `git fsck --strict` is clean, that the state branch decodes,
//! that every acknowledged write is in it (0 lost), and that no lease was
//! granted twice: never two agents with the same (todo, epoch), never a new
//! epoch while an acknowledged earlier lease was still live at the new
//! grant's `LOOPX_NOW`. It prints the figures and exits 1 if anything failed.
//!
//! A writer killed inside its ref update leaves a lock file behind; the next
//! writer removes it once it is older than a live one can be (5 s), so the
//! soak counts every command that still failed with `state_locked` and
//! fails if there is one.
//!
//! `--maintenance chaos` replaces the `git gc` loop by the harshest
//! maintenance git has, in turn: a bare `git prune --expire=now` (it takes no
//! `gc.pid` and spares nothing by date), `git gc --prune=now`, `git repack
//! -a -d`, `git pack-refs --all` and `git maintenance run`. At the end one
//! more write runs (it writes back what a prune took from older commits)
//! before `git fsck`.
//!
//! Options: `--seconds N` (default 300), `--writers N` (16), `--worktrees N`
//! (4), `--kill-percent P` (share of commands killed, default 10),
//! `--maintenance gc|chaos` (gc), `--seed N`.

#[path = "support/binary.rs"]
mod binary;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use loopx::model::{State, Timestamp, TodoStatus};

const START: &str = "2026-12-02T10:00:00Z";
/// Simulated seconds per wall-clock second.
const SPEED: f64 = 10.0;
const TTL: &str = "2m";

const USAGE: &str = "\
usage: cargo run --release --example soak -- [options]

  --seconds N        how long to run (default 300)
  --writers N        writer threads, each its own agent (default 16)
  --worktrees N      linked worktrees the writers are spread over (default 4)
  --kill-percent P   share of commands SIGKILLed mid-command (default 10)
  --maintenance M    gc: `git gc` in a loop (default); chaos: bare `git prune
                     --expire=now`, `gc --prune=now`, `repack -a -d`,
                     `pack-refs --all` and `maintenance run` in turn
  --seed N           seed of the random choices (default: from the clock)

Run under cargo, which builds the git-loopx binary first (else: cargo build --release).";

struct Opts {
    seconds: u64,
    writers: usize,
    worktrees: usize,
    kill_percent: u64,
    chaos: bool,
    seed: u64,
}

fn opts() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        seconds: 300,
        writers: 16,
        worktrees: 4,
        kill_percent: 10,
        chaos: false,
        seed: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    };
    let mut i = 0;
    let number = |i: usize, name: &str| -> u64 {
        match args.get(i + 1).map(|v| v.parse::<u64>()) {
            Some(Ok(n)) => n,
            _ => {
                eprintln!("soak: {name} needs a number\n\n{USAGE}");
                std::process::exit(2);
            }
        }
    };
    while i < args.len() {
        match args[i].as_str() {
            "--seconds" => o.seconds = number(i, "--seconds"),
            "--writers" => o.writers = number(i, "--writers").max(1) as usize,
            "--worktrees" => o.worktrees = number(i, "--worktrees").max(1) as usize,
            "--kill-percent" => o.kill_percent = number(i, "--kill-percent").min(100),
            "--maintenance" => {
                o.chaos = match args.get(i + 1).map(String::as_str) {
                    Some("gc") => false,
                    Some("chaos") => true,
                    _ => {
                        eprintln!("--maintenance takes gc or chaos\n\n{USAGE}");
                        std::process::exit(2);
                    }
                };
            }
            "--seed" => o.seed = number(i, "--seed"),
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => {
                eprintln!("soak: unknown option {other}\n\n{USAGE}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    o
}

fn bin() -> PathBuf {
    binary::git_loopx("soak")
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

struct Soak {
    bin: PathBuf,
    home: PathBuf,
    started: Instant,
    start: Timestamp,
    kill_percent: u64,
    ledger: Mutex<Ledger>,
    stop: AtomicBool,
    iterations: AtomicU64,
    commands: AtomicU64,
    kills: AtomicU64,
    refusals: AtomicU64,
}

#[derive(Default)]
struct Ledger {
    added: Vec<String>,
    notes: Vec<(String, String)>,
    runs: Vec<String>,
    done: Vec<String>,
    grants: Vec<Grant>,
    /// Exits other than 0 and 1 of commands that were not killed.
    errors: BTreeMap<String, u64>,
}

#[derive(Clone, Debug)]
struct Grant {
    todo: String,
    epoch: u64,
    agent: String,
    acquired_at: Timestamp,
    expires_at: Timestamp,
}

enum Outcome {
    /// Exited 0; its JSON.
    Acked(serde_json::Value),
    /// Exited 1: refused by a rule (nothing ready, a lost lease).
    Refused,
    Killed,
    Failed,
}

fn hermetic<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    cmd.env("HOME", home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "soak")
        .env("GIT_AUTHOR_EMAIL", "soak@example.com")
        .env("GIT_COMMITTER_NAME", "soak")
        .env("GIT_COMMITTER_EMAIL", "soak@example.com")
        .env("TZ", "UTC")
        .env("LANG", "C")
        .env_remove("LOOPX_AGENT")
        .env_remove("LOOPX_GOAL")
}

impl Soak {
    fn now(&self) -> Timestamp {
        let simulated = self.started.elapsed().as_secs_f64() * SPEED;
        self.start.plus_seconds(simulated as i64)
    }

    fn git(&self, dir: &Path, args: &[&str]) -> std::process::Output {
        hermetic(Command::new("git").current_dir(dir), &self.home)
            .args(args)
            .output()
            .expect("git runs")
    }

    fn git_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git(dir, args);
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// One `git-loopx --json --agent AGENT ARGS…` in `dir`, killed at a
    /// random moment with probability `kill_percent`.
    fn loopx(&self, rng: &mut Rng, dir: &Path, agent: &str, args: &[&str]) -> Outcome {
        self.commands.fetch_add(1, Ordering::Relaxed);
        let mut child = hermetic(Command::new(&self.bin).current_dir(dir), &self.home)
            .env("LOOPX_NOW", self.now().to_string())
            .args(["--json", "--agent", agent])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("git-loopx starts");
        if rng.below(100) < self.kill_percent {
            std::thread::sleep(Duration::from_micros(rng.below(40_000)));
            let _ = child.kill();
        }
        let out = child.wait_with_output().expect("git-loopx is waited for");
        let json = || serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        match out.status.code() {
            Some(0) => Outcome::Acked(json()),
            Some(1) => {
                self.refusals.fetch_add(1, Ordering::Relaxed);
                Outcome::Refused
            }
            None => {
                self.kills.fetch_add(1, Ordering::Relaxed);
                Outcome::Killed
            }
            Some(code) => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let stdout = String::from_utf8_lossy(&out.stdout);
                let what = serde_json::from_slice::<serde_json::Value>(&out.stdout)
                    .ok()
                    .and_then(|v| {
                        let code = v["error"]["code"].as_str()?;
                        let message = v["error"]["message"].as_str().unwrap_or_default();
                        Some(format!("{code}: {}", normalize(message)))
                    })
                    .unwrap_or_else(|| normalize(&format!("{} {}", stdout.trim(), stderr.trim())));
                let key = format!(
                    "exit {code} {} ({what})",
                    args[..2.min(args.len())].join(" ")
                );
                *self.ledger.lock().unwrap().errors.entry(key).or_default() += 1;
                Outcome::Failed
            }
        }
    }

    fn writer(&self, w: usize, dir: &Path, seed: u64) {
        let agent = format!("w{w:02}");
        let mut rng = Rng(seed);
        let mut n = 0u64;
        while !self.stop.load(Ordering::Relaxed) {
            self.iterations.fetch_add(1, Ordering::Relaxed);
            n += 1;
            if rng.below(3) == 0 {
                self.add(&mut rng, dir, &agent, n);
            }
            let todo = match self.loopx(
                &mut rng,
                dir,
                &agent,
                &["todo", "next", "--claim", "--ttl", TTL],
            ) {
                Outcome::Acked(v) => {
                    let grant = Grant {
                        todo: v["todo"]["id"].as_str().unwrap_or_default().to_owned(),
                        epoch: v["claim"]["epoch"].as_u64().unwrap_or(0),
                        agent: v["claim"]["agent"].as_str().unwrap_or_default().to_owned(),
                        acquired_at: time(&v["claim"]["acquired_at"]),
                        expires_at: time(&v["claim"]["expires_at"]),
                    };
                    let todo = grant.todo.clone();
                    self.ledger.lock().unwrap().grants.push(grant);
                    todo
                }
                Outcome::Refused => {
                    self.add(&mut rng, dir, &agent, n);
                    continue;
                }
                Outcome::Killed | Outcome::Failed => continue,
            };
            let token = format!("tok-{agent}-{n}-{:x}", rng.next());
            if let Outcome::Acked(_) = self.loopx(
                &mut rng,
                dir,
                &agent,
                &["todo", "update", &todo, "--note", &token],
            ) {
                self.ledger
                    .lock()
                    .unwrap()
                    .notes
                    .push((todo.clone(), token));
            }
            let summary = format!("soak {agent} {n}");
            if let Outcome::Acked(v) = self.loopx(
                &mut rng,
                dir,
                &agent,
                &[
                    "writeback",
                    "--todo",
                    &todo,
                    "--outcome",
                    "outcome_progress",
                    "--summary",
                    &summary,
                ],
            ) {
                let run = v["run"]["id"].as_str().unwrap_or_default().to_owned();
                self.ledger.lock().unwrap().runs.push(run);
            }
            if rng.below(2) == 0 {
                if let Outcome::Acked(_) = self.loopx(
                    &mut rng,
                    dir,
                    &agent,
                    &["todo", "done", &todo, "--evidence", "soak"],
                ) {
                    self.ledger.lock().unwrap().done.push(todo);
                }
            }
        }
    }

    fn add(&self, rng: &mut Rng, dir: &Path, agent: &str, n: u64) {
        let text = format!("soak task {agent} {n} {:x}", rng.next());
        if let Outcome::Acked(v) = self.loopx(rng, dir, agent, &["todo", "add", &text]) {
            let id = v["todo"]["id"].as_str().unwrap_or_default().to_owned();
            self.ledger.lock().unwrap().added.push(id);
        }
    }

    /// `git gc` (the default prune grace) in a loop, or with `chaos` git's
    /// harshest maintenance in turn (see the module docs): (runs, failures
    /// by the first line git printed).
    fn gc_loop(&self, repo: &Path, chaos: bool) -> (u64, BTreeMap<String, u64>) {
        let steps: &[&[&str]] = if chaos {
            &[
                &["prune", "--expire=now"],
                &["gc", "--prune=now", "--quiet"],
                &["prune", "--expire=now"],
                &["repack", "-a", "-d", "-q"],
                &["prune", "--expire=now"],
                &["pack-refs", "--all"],
                &["prune", "--expire=now"],
                &["maintenance", "run", "--quiet"],
            ]
        } else {
            &[&["gc", "--quiet"]]
        };
        let (mut runs, mut failed) = (0, BTreeMap::new());
        while !self.stop.load(Ordering::Relaxed) {
            let step = steps[runs as usize % steps.len()];
            runs += 1;
            let out = self.git(repo, step);
            if !out.status.success() {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let first = normalize(stderr.lines().next().unwrap_or(""));
                *failed.entry(format!("{}: {first}", step[0])).or_default() += 1;
            }
            std::thread::sleep(Duration::from_millis(if chaos { 50 } else { 200 }));
        }
        (runs, failed)
    }
}

/// A message with its object ids, pack names, numbers and scratch paths
/// blanked, so that the same failure is counted once.
fn normalize(message: &str) -> String {
    message
        .split(' ')
        .map(|word| {
            if word.contains('/') && word.len() > 24 {
                return "<path>".to_owned();
            }
            let chars: Vec<char> = word.chars().collect();
            let mut out = String::new();
            let mut i = 0;
            while i < chars.len() {
                let hex = chars[i..]
                    .iter()
                    .take_while(|c| matches!(c, '0'..='9' | 'a'..='f'))
                    .count();
                let digits = chars[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                if hex >= 7 {
                    out.push_str("<id>");
                    i += hex;
                } else if digits > 0 {
                    out.push('#');
                    i += digits;
                } else {
                    out.push(chars[i]);
                    i += 1;
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn time(v: &serde_json::Value) -> Timestamp {
    v.as_str()
        .and_then(Timestamp::parse)
        .unwrap_or(Timestamp::from_unix(0))
}

/// The state on the branch, read blob by blob with git and decoded.
fn final_state(soak: &Soak, repo: &Path) -> Result<State, String> {
    let listing = soak.git_ok(repo, &["ls-tree", "-r", "-z", "loopx-state"]);
    let entries: Vec<(String, String)> = listing
        .split('\0')
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let (meta, path) = l.split_once('\t')?;
            let oid = meta.split_whitespace().nth(2)?;
            Some((path.to_owned(), oid.to_owned()))
        })
        .collect();
    let mut child = hermetic(Command::new("git").current_dir(repo), &soak.home)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().expect("stdin");
    let ids: String = entries.iter().map(|(_, oid)| format!("{oid}\n")).collect();
    let feeder = std::thread::spawn(move || stdin.write_all(ids.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = feeder.join();
    let mut rest = &out.stdout[..];
    let mut files = Vec::new();
    for (path, _) in &entries {
        let header_end = rest.iter().position(|&b| b == b'\n').ok_or("short batch")?;
        let header = String::from_utf8_lossy(&rest[..header_end]).into_owned();
        let size: usize = header
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("{path}: {header}"))?;
        let body = rest[header_end + 1..header_end + 1 + size].to_vec();
        rest = &rest[header_end + 2 + size..];
        files.push((path.clone(), body));
    }
    loopx::codec::decode_state(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))
        .map_err(|e| e.to_string())
}

/// Acknowledged writes missing from `state`, described.
fn lost_writes(ledger: &Ledger, state: &State) -> Vec<String> {
    let todos = |id: &str| state.goals.values().find_map(|gs| gs.todos.get(id));
    let mut lost = Vec::new();
    for id in &ledger.added {
        if todos(id).is_none() {
            lost.push(format!("added todo {id}"));
        }
    }
    for (id, token) in &ledger.notes {
        if !todos(id).is_some_and(|t| t.notes.iter().any(|n| n.text == *token)) {
            lost.push(format!("note {token} on {id}"));
        }
    }
    for id in &ledger.runs {
        if !state.goals.values().any(|gs| gs.runs.contains_key(id)) {
            lost.push(format!("writeback {id}"));
        }
    }
    for id in &ledger.done {
        if todos(id).is_none_or(|t| t.status != TodoStatus::Done) {
            lost.push(format!("completion of {id}"));
        }
    }
    for g in &ledger.grants {
        if todos(&g.todo).is_none_or(|t| t.epoch() < g.epoch) {
            lost.push(format!(
                "grant of {} epoch {} to {}",
                g.todo, g.epoch, g.agent
            ));
        }
    }
    lost
}

/// Grants that break exactly-once: two agents with one (todo, epoch), or a
/// new epoch granted while an acknowledged earlier lease was still live.
/// (The soak never releases a lease but by `todo done`, after which the
/// todo cannot be claimed again.)
fn double_grants(grants: &[Grant]) -> Vec<String> {
    let mut by_todo: BTreeMap<&str, BTreeMap<u64, Vec<&Grant>>> = BTreeMap::new();
    for g in grants {
        by_todo
            .entry(&g.todo)
            .or_default()
            .entry(g.epoch)
            .or_default()
            .push(g);
    }
    let mut bad = Vec::new();
    for (todo, epochs) in by_todo {
        let mut live_until: Option<(u64, Timestamp)> = None;
        for (epoch, gs) in epochs {
            let first = &gs[0].agent;
            if let Some(other) = gs.iter().find(|g| g.agent != *first) {
                bad.push(format!(
                    "{todo} epoch {epoch} granted to {first} and {}",
                    other.agent
                ));
            }
            let acquired = gs.iter().map(|g| g.acquired_at).min().expect("a grant");
            if let Some((before, until)) = live_until {
                if acquired < until {
                    bad.push(format!(
                        "{todo} epoch {epoch} granted at {acquired} while epoch {before} was live until {until}"
                    ));
                }
            }
            let expires = gs.iter().map(|g| g.expires_at).max().expect("a grant");
            live_until = Some((epoch, expires));
        }
    }
    bad
}

fn main() {
    let o = opts();
    let root = tempfile::tempdir().expect("a scratch directory");
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let soak = Soak {
        bin: bin(),
        home,
        started: Instant::now(),
        start: Timestamp::parse(START).expect("START parses"),
        kill_percent: o.kill_percent,
        ledger: Mutex::default(),
        stop: AtomicBool::new(false),
        iterations: AtomicU64::new(0),
        commands: AtomicU64::new(0),
        kills: AtomicU64::new(0),
        refusals: AtomicU64::new(0),
    };
    let repo = root.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    soak.git_ok(&repo, &["init", "-q", "-b", "main"]);
    soak.git_ok(&repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    let init = hermetic(Command::new(&soak.bin).current_dir(&repo), &soak.home)
        .env("LOOPX_NOW", START)
        .args(["init", "--objective", "soak"])
        .output()
        .expect("git-loopx init");
    assert!(init.status.success(), "git loopx init failed");
    let worktrees: Vec<PathBuf> = (0..o.worktrees)
        .map(|i| {
            let dir = root.path().join(format!("wt{i}"));
            soak.git_ok(
                &repo,
                &["worktree", "add", "-q", "--detach", dir.to_str().unwrap()],
            );
            dir
        })
        .collect();
    let maintenance = if o.chaos {
        "bare prune, gc --prune=now, repack -a -d, pack-refs and maintenance run"
    } else {
        "gc"
    };
    println!(
        "soak: {} writers over {} worktrees for {} s, {}% of commands killed, {maintenance} looping (seed {})",
        o.writers, o.worktrees, o.seconds, o.kill_percent, o.seed
    );
    let soak = &soak;
    let (gc_runs, gc_failed) = std::thread::scope(|s| {
        let gc = s.spawn(|| soak.gc_loop(&repo, o.chaos));
        let mut seeds = Rng(o.seed);
        for w in 0..o.writers {
            let dir = &worktrees[w % worktrees.len()];
            let seed = seeds.next();
            s.spawn(move || soak.writer(w, dir, seed));
        }
        let deadline = Duration::from_secs(o.seconds);
        while soak.started.elapsed() < deadline {
            std::thread::sleep(Duration::from_millis(250));
        }
        soak.stop.store(true, Ordering::Relaxed);
        gc.join().unwrap()
    });
    let seconds = soak.started.elapsed().as_secs_f64();
    // One more write: it writes back what the last prunes took from the
    // commits before the tip (see `GixStore::heal_after_prune`).
    let last = hermetic(Command::new(&soak.bin).current_dir(&repo), &soak.home)
        .env("LOOPX_NOW", soak.now().to_string())
        .args(["--json", "todo", "add", "after the soak"])
        .output()
        .expect("git-loopx runs");
    if !last.status.success() {
        println!(
            "  the write after the soak failed: {}",
            String::from_utf8_lossy(&last.stdout)
        );
    }

    // Background roll-ups the writers started may still be running.
    let mut fsck = soak.git(&repo, &["fsck", "--strict", "--no-progress"]);
    for _ in 0..3 {
        if fsck.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_secs(3));
        fsck = soak.git(&repo, &["fsck", "--strict", "--no-progress"]);
    }
    let fsck_clean = fsck.status.success();

    let ledger = soak.ledger.lock().unwrap();
    let state = final_state(soak, &repo);
    let lost = match &state {
        Ok(state) => lost_writes(&ledger, state),
        Err(e) => vec![format!("the final state does not decode: {e}")],
    };
    let doubles = double_grants(&ledger.grants);
    let acked = ledger.added.len()
        + ledger.notes.len()
        + ledger.runs.len()
        + ledger.done.len()
        + ledger.grants.len();

    println!("  seconds              {seconds:.1}");
    println!(
        "  iterations           {} ({} commands)",
        soak.iterations.load(Ordering::Relaxed),
        soak.commands.load(Ordering::Relaxed)
    );
    println!(
        "  kills                {}",
        soak.kills.load(Ordering::Relaxed)
    );
    println!(
        "  writes acknowledged  {acked} (todos added {}, notes {}, writebacks {}, completions {}, grants {})",
        ledger.added.len(),
        ledger.notes.len(),
        ledger.runs.len(),
        ledger.done.len(),
        ledger.grants.len()
    );
    println!("  writes lost          {}", lost.len());
    println!("  double grants        {}", doubles.len());
    println!(
        "  gc runs              {gc_runs} ({} failed)",
        gc_failed.values().sum::<u64>()
    );
    for (what, n) in gc_failed.iter().take(5) {
        println!(
            "    {n:>6} × {}",
            what.chars().take(200).collect::<String>()
        );
    }
    let stale: u64 = ledger
        .errors
        .iter()
        .filter(|(what, _)| what.contains("state_locked"))
        .map(|(_, n)| n)
        .sum();
    println!("  failed by a lock     {stale}");
    println!(
        "  refusals (exit 1)    {}",
        soak.refusals.load(Ordering::Relaxed)
    );
    let errors: u64 = ledger.errors.values().sum();
    println!("  errors (other exits) {errors}");
    for (what, n) in ledger.errors.iter().take(8) {
        println!(
            "    {n:>6} × {}",
            what.chars().take(200).collect::<String>()
        );
    }
    println!(
        "  fsck                 {}",
        if fsck_clean { "clean" } else { "FAILED" }
    );
    if !fsck_clean {
        println!("{}", String::from_utf8_lossy(&fsck.stderr));
    }
    for line in lost.iter().chain(&doubles).take(20) {
        println!("  ! {line}");
    }
    if !lost.is_empty() || !doubles.is_empty() || !fsck_clean || stale > 0 || !last.status.success()
    {
        std::process::exit(1);
    }
}
