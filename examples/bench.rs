//! The side-by-side benchmark: `cargo run --release --example bench`.
//!
//! Builds states of 100, 1,000 and 10,000 todos in scratch repositories and
//! measures, as median and p95 over repeated runs: a writeback in-process and
//! as a `git loopx` process against a git-plumbing baseline doing the same
//! writeback, `status` and `should-run` as processes, 8 processes × 100
//! contended claims, the merge of two clones with 500 divergent writebacks
//! each, and the bytes each writeback adds. With the Python reference
//! installed (`scripts/install-reference.sh`; set LOOPX_REF_BIN and
//! LOOPX_REF_PATH), it also times the same governed turn in both.
//!
//! Options: `--sizes 100,1000` `--reps 25` `--quick` (small sizes, few reps);
//! `--only sizes|contention|merge|runs|turn` runs one part (`runs`: a
//! writeback on an empty day against one after 20,000 runs that day);
//! `--setup DIR N` only builds a repository of N todos under DIR and prints its path.
//! `--against OLD` compares the per-process figures with another build's
//! binary: both run the same commands in turn on copies of one repository,
//! so load that comes and goes falls on both alike.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/state.rs"]
mod state;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use loopx::model::{ids, Extra, Outcome, Run, RunKind, State, Timestamp};
use loopx::store::{transact, GixStore, Message, Policy, Write};

const NOW: &str = "2026-12-02T10:00:00Z";

const USAGE: &str = "\
usage: cargo run --release --example bench -- [options]

  --sizes 100,1000,10000   state sizes to measure (todos)
  --reps N                 repetitions per figure (default 25)
  --quick                  small sizes, few repetitions
  --only PART              one part: sizes | contention | merge | runs | turn
  --setup DIR N            only build a repository of N todos under DIR, print its path
  --against OLD            claim, writeback, status and should-run as processes,
                           this build and the git-loopx binary OLD in turn, on
                           copies of one repository per size: p50 of each, new/old

With LOOPX_REF_BIN and LOOPX_REF_PATH set (scripts/install-reference.sh),
the governed turn is also timed against the Python reference.";

struct Opts {
    sizes: Vec<usize>,
    reps: usize,
    contention: (usize, usize),
    divergent: usize,
    /// Runs in one day for the `runs` part.
    runs_in_a_day: usize,
    /// Run only this part: `sizes`, `contention`, `merge`, `runs` or `turn`.
    only: Option<String>,
    /// `--against OLD`: only the interleaved comparison with that binary.
    against: Option<PathBuf>,
}

fn opts() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        sizes: vec![100, 1_000, 10_000],
        reps: 25,
        contention: (8, 100),
        divergent: 500,
        runs_in_a_day: 20_000,
        only: None,
        against: None,
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--sizes" => {
                o.sizes = args[i + 1]
                    .split(',')
                    .map(|s| s.parse().expect("--sizes 100,1000"))
                    .collect();
                i += 1;
            }
            "--reps" => {
                o.reps = args[i + 1].parse().expect("--reps N");
                i += 1;
            }
            "--only" => {
                o.only = Some(args[i + 1].clone());
                i += 1;
            }
            "--against" => {
                o.against = Some(PathBuf::from(&args[i + 1]));
                i += 1;
            }
            "--quick" => {
                o.sizes = vec![100, 1_000];
                o.reps = 7;
                o.contention = (4, 10);
                o.divergent = 50;
                o.runs_in_a_day = 2_000;
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => {
                eprintln!("bench: unknown option {other}\n\n{USAGE}");
                std::process::exit(2);
            }
        }
        i += 1;
    }
    o
}

fn bin() -> PathBuf {
    binary::git_loopx("bench")
}

fn hermetic<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    cmd.env("HOME", home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .env("TZ", "UTC")
        .env("LOOPX_NOW", NOW)
        .env_remove("LOOPX_AGENT")
        .env_remove("LOOPX_GOAL")
}

struct Env {
    root: tempfile::TempDir,
    bin: PathBuf,
}

impl Env {
    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = hermetic(Command::new("git").current_dir(dir), &self.home())
            .args(args)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn git_in(&self, dir: &Path, args: &[&str], stdin: &str) -> String {
        use std::io::Write as _;
        let mut child = hermetic(Command::new("git").current_dir(dir), &self.home())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn loopx(&self, dir: &Path, args: &[&str]) -> std::process::Output {
        hermetic(Command::new(&self.bin).current_dir(dir), &self.home())
            .args(args)
            .output()
            .expect("git-loopx")
    }

    fn loopx_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.loopx(dir, args);
        assert!(
            out.status.success(),
            "git-loopx {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

fn todo_id(i: usize) -> String {
    state::todo_id("bench", i)
}

/// A repository whose state has `n` open todos, packed (see `support/state.rs`).
fn build(env: &Env, name: &str, n: usize) -> PathBuf {
    build_with_runs(env, name, n, 0, now())
}

/// [`build`], with `runs` writeback records made `at` (one per todo in
/// turn) in the same `git fast-import` commit.
fn build_with_runs(env: &Env, name: &str, n: usize, runs: usize, at: Timestamp) -> PathBuf {
    let dir = env.root.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    env.git(&dir, &["init", "-q", "-b", "main"]);
    env.git(&dir, &["commit", "-q", "--allow-empty", "-m", "base"]);
    env.loopx_ok(&dir, &["init", "--objective", "bench"]);
    let stream = state::stream("bench", n, runs, at);
    state::import(
        hermetic(Command::new("git").current_dir(&dir), &env.home()),
        &stream,
    );
    env.loopx_ok(&dir, &["status"]);
    dir
}

#[derive(Clone, Copy)]
struct Stats {
    p50: Duration,
    p95: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        p50: at(0.5),
        p95: at(0.95),
    }
}

fn time<F: FnMut(usize)>(reps: usize, mut f: F) -> Stats {
    f(usize::MAX); // warm-up
    stats(
        (0..reps)
            .map(|i| {
                let t = Instant::now();
                f(i);
                t.elapsed()
            })
            .collect(),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

struct Table {
    rows: Vec<[String; 5]>,
}

impl Table {
    fn row(&mut self, size: &str, what: &str, s: Stats, note: String) {
        println!(
            "  {size:>6}  {what:<44} p50 {:>10}  p95 {:>10}  {note}",
            ms(s.p50),
            ms(s.p95)
        );
        self.rows
            .push([size.into(), what.into(), ms(s.p50), ms(s.p95), note]);
    }

    fn line(&mut self, size: &str, what: &str, value: String) {
        println!("  {size:>6}  {what:<44} {value}");
        self.rows.push([
            size.into(),
            what.into(),
            value,
            String::new(),
            String::new(),
        ]);
    }
}

/// The same one-todo writeback with git plumbing, as a script would do it:
/// new blob, a new tree for each directory on the path, commit-tree,
/// update-ref with the old value.
fn plumbing_writeback(env: &Env, dir: &Path, id: &str, rep: usize) {
    let old = env.git(dir, &["rev-parse", "refs/heads/loopx-state"]);
    let shard = &id[5..7];
    let path = ["goals", "main", "todos", shard];
    let file = format!("{id}.yaml");
    let content = env.git(
        dir,
        &["show", &format!("{old}:goals/main/todos/{shard}/{file}")],
    );
    let changed: Vec<String> = content
        .lines()
        .map(|l| {
            if l.starts_with("text: ") {
                format!("text: plumbing {rep}")
            } else {
                l.to_owned()
            }
        })
        .collect();
    let blob = env.git_in(
        dir,
        &["hash-object", "-w", "--stdin"],
        &(changed.join("\n") + "\n"),
    );
    // Rebuild the trees bottom-up: shard, todos, main, goals, root.
    let mut child = (format!("100644 blob {blob}\t{file}"), file.clone());
    for depth in (0..=path.len()).rev() {
        let prefix = path[..depth].join("/");
        let spec = if prefix.is_empty() {
            old.clone()
        } else {
            format!("{old}:{prefix}")
        };
        let listing = env.git(dir, &["ls-tree", &spec]);
        let mut lines: Vec<String> = listing
            .lines()
            .filter(|l| !l.ends_with(&format!("\t{}", child.1)))
            .map(str::to_owned)
            .collect();
        lines.push(child.0.clone());
        let tree = env.git_in(dir, &["mktree"], &(lines.join("\n") + "\n"));
        if depth == 0 {
            let commit = env.git(
                dir,
                &["commit-tree", &tree, "-p", &old, "-m", "plumbing writeback"],
            );
            env.git(
                dir,
                &["update-ref", "refs/heads/loopx-state", &commit, &old],
            );
            return;
        }
        let name = path[depth - 1].to_owned();
        child = (format!("040000 tree {tree}\t{name}"), name);
    }
}

fn dir_bytes(path: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            let m = e.metadata().unwrap();
            total += if m.is_dir() {
                dir_bytes(&e.path())
            } else {
                m.len()
            };
        }
    }
    total
}

fn bench_size(env: &Env, o: &Opts, n: usize, t: &mut Table) {
    let size = n.to_string();
    let dir = build(env, &format!("s{n}"), n);
    let objects = dir.join(".git/objects");
    let packed_before = dir_bytes(&objects);
    let first = env.git(&dir, &["rev-parse", "loopx-state"]);
    let store = GixStore::discover(&dir).unwrap();

    // 1a. In-process writeback: one todo changed per commit.
    let inproc = time(o.reps, |i| {
        let id = todo_id(i.min(n - 1) % n);
        transact::<_, loopx::Error, _>(
            &store,
            &Policy::default(),
            now(),
            |s: &mut Option<State>, _| {
                let todo = s
                    .as_mut()
                    .unwrap()
                    .goals
                    .get_mut("main")
                    .unwrap()
                    .todos
                    .get_mut(&id)
                    .unwrap();
                todo.notes.push(loopx::model::Note {
                    at: now(),
                    agent: None,
                    text: format!("in-process {i}"),
                    extra: Extra::new(),
                });
                todo.rev += 1;
                Ok(Write::commit(
                    (),
                    Message::new("bench", format!("bench writeback {i}")),
                ))
            },
        )
        .unwrap();
    });
    t.row(&size, "writeback, in-process", inproc, String::new());
    let loose_after = dir_bytes(&objects);
    let wrote = o.reps + 1;

    // 1b. The same as processes: a claim, and a note, each one commit.
    let claim = time(o.reps, |i| {
        let id = todo_id((i.wrapping_add(1)) % n);
        env.loopx_ok(&dir, &["--agent", "bench", "todo", "claim", &id]);
    });
    let note = time(o.reps, |i| {
        let id = todo_id(i % n);
        env.loopx_ok(
            &dir,
            &[
                "--agent", "bench", "todo", "update", &id, "--note", "process",
            ],
        );
    });
    let plumbing = time(o.reps, |i| {
        plumbing_writeback(env, &dir, &todo_id((i.wrapping_add(7)) % n), i)
    });
    let ratio = |base: Stats, ours: Stats| {
        format!(
            "{:.1}x faster than plumbing",
            base.p50.as_secs_f64() / ours.p50.as_secs_f64()
        )
    };
    t.row(
        &size,
        "claim, git loopx process",
        claim,
        ratio(plumbing, claim),
    );
    t.row(
        &size,
        "writeback (todo update), git loopx process",
        note,
        ratio(plumbing, note),
    );
    t.row(
        &size,
        "writeback, git plumbing baseline (13 procs)",
        plumbing,
        String::new(),
    );

    // 2. Reads as processes.
    let status = time(o.reps, |_| {
        env.loopx_ok(&dir, &["status"]);
    });
    let should = time(o.reps, |_| {
        env.loopx_ok(&dir, &["--agent", "bench", "should-run"]);
    });
    t.row(&size, "status, process", status, String::new());
    t.row(&size, "should-run, process", should, String::new());

    // 5. Bytes per writeback: loose (the objects directory's growth over the
    // in-process writebacks), and packed: a pack of every object the
    // writebacks of this section added, deltified among themselves only (so
    // an upper bound on what they cost once `git gc` has run).
    t.line(
        &size,
        "bytes per writeback, loose",
        format!("{} B", (loose_after - packed_before) / wrote as u64),
    );
    let range = format!("{first}..loopx-state");
    let commits: u64 = env
        .git(&dir, &["rev-list", "--count", &range])
        .parse()
        .unwrap();
    let objects_list = env.git(&dir, &["rev-list", "--objects", &range]);
    let packed = {
        use std::io::Write as _;
        let mut child = hermetic(Command::new("git").current_dir(&dir), &env.home())
            .args(["pack-objects", "--stdout", "-q"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(objects_list.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        drop(stdin);
        child.wait_with_output().unwrap().stdout.len() as u64
    };
    t.line(
        &size,
        "bytes per writeback, packed",
        format!("{} B ({commits} writebacks in one pack)", packed / commits),
    );
}

/// How the contended claims are made.
#[derive(Clone, Copy)]
enum Claimer {
    /// Each of the processes is long-lived and makes its claims through the
    /// library (as an agent host linking git-loopx would): this bench binary
    /// re-run as `--claim-worker`.
    Library,
    /// Each claim is its own `git loopx todo claim` process.
    Cli,
}

/// `--claim-worker DIR AGENT ID...`: claims each id in turn, in this process.
fn claim_worker(args: &[String]) {
    let (dir, agent, ids) = (Path::new(&args[0]), &args[1], &args[2..]);
    let ctx = loopx::session::Context::open(dir, now(), Some(agent.clone()), None).unwrap();
    for id in ids {
        let args = loopx::ops::lease::ClaimArgs {
            todo: id.clone(),
            ttl: None,
            sync: false,
            remote: None,
        };
        loopx::ops::lease::claim(&ctx, &args).unwrap();
    }
}

/// `procs` processes, each claiming its own `each` todos, all racing on the
/// same ref: every claim must land exactly once (one commit each, none lost,
/// the right holder).
fn contention(env: &Env, o: &Opts, t: &mut Table, how: Claimer) {
    let (procs, each) = o.contention;
    let name = match how {
        Claimer::Library => "contention-lib",
        Claimer::Cli => "contention-cli",
    };
    let dir = build(env, name, procs * each);
    let before: usize = env
        .git(&dir, &["rev-list", "--count", "loopx-state"])
        .parse()
        .unwrap();
    let start = Instant::now();
    std::thread::scope(|s| {
        for p in 0..procs {
            let dir = &dir;
            let agent = format!("agent-{p}");
            let ids: Vec<String> = (0..each).map(|k| todo_id(p * each + k)).collect();
            s.spawn(move || match how {
                Claimer::Library => {
                    let exe = std::env::current_exe().unwrap();
                    let out = hermetic(&mut Command::new(exe), &env.home())
                        .arg("--claim-worker")
                        .arg(dir)
                        .arg(&agent)
                        .args(&ids)
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                Claimer::Cli => {
                    for id in &ids {
                        env.loopx_ok(dir, &["--agent", &agent, "todo", "claim", id]);
                    }
                }
            });
        }
    });
    let wall = start.elapsed();
    let after: usize = env
        .git(&dir, &["rev-list", "--count", "loopx-state"])
        .parse()
        .unwrap();
    let out = env.loopx_ok(&dir, &["--json", "status"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let claims = v["claims"].as_array().unwrap();
    let right_holder = claims.iter().all(|c| {
        let id = c["todo"].as_str().unwrap();
        let owner = (0..procs * each)
            .find(|&i| todo_id(i) == id)
            .map(|i| format!("agent-{}", i / each));
        owner.as_deref() == c["agent"].as_str()
    });
    let total = procs * each;
    let exactly_once = after - before == total && claims.len() == total && right_holder;
    let what = match how {
        Claimer::Library => format!("{procs} procs x {each} contended claims (library)"),
        Claimer::Cli => format!("{total} claim processes, {procs} at a time"),
    };
    t.line(
        "",
        &what,
        format!(
            "{total} claims in {:.2} s = {:.0} claims/s; exactly once: {}",
            wall.as_secs_f64(),
            total as f64 / wall.as_secs_f64(),
            if exactly_once { "yes" } else { "NO" }
        ),
    );
}

fn divergent_merge(env: &Env, o: &Opts, t: &mut Table) {
    let k = o.divergent;
    let remote = env.root.path().join("remote.git");
    std::fs::create_dir_all(&remote).unwrap();
    env.git(&remote, &["init", "-q", "--bare"]);
    let a = build(env, "merge-a", 1_000);
    env.git(&a, &["remote", "add", "origin", remote.to_str().unwrap()]);
    env.loopx_ok(&a, &["sync"]);
    let b = env.root.path().join("merge-b");
    env.git(
        env.root.path(),
        &["clone", "-q", remote.to_str().unwrap(), b.to_str().unwrap()],
    );
    env.loopx_ok(&b, &["sync"]);
    // Each side writes through the library's use-case layer (as `git loopx
    // writeback` does), so its background upkeep runs as it would.
    for (side, dir) in [("a", &a), ("b", &b)] {
        let ctx =
            loopx::session::Context::open(dir, now(), Some(format!("agent-{side}")), None).unwrap();
        for i in 0..k {
            let id = todo_id(if side == "a" { i } else { 500 + i } % 1_000);
            loopx::session::mutate(&ctx, |s: &mut State, goal: &str| {
                let gs = s.goals.get_mut(goal).unwrap();
                let run_id = ids::derive_id("run_", &[side, &i.to_string()]);
                let mut run = loopx::model::Run::new(
                    run_id.clone(),
                    loopx::model::RunKind::Writeback,
                    goal,
                    Some(side),
                    now(),
                );
                run.todo = Some(id.clone());
                run.outcome = Some(loopx::model::Outcome::OutcomeProgress);
                run.summary = Some(format!("{side} {i}"));
                gs.runs.insert(run_id, run);
                let todo = gs.todos.get_mut(&id).unwrap();
                todo.evidence = Some(format!("{side} {i}"));
                todo.rev += 1;
                Ok((
                    (),
                    Message::new("writeback", format!("{side} writeback {i}")),
                ))
            })
            .unwrap();
        }
    }
    env.loopx_ok(&a, &["sync"]);
    let start = Instant::now();
    let out = env.loopx_ok(&b, &["--json", "sync"]);
    let wall = start.elapsed();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["action"], "merged", "{v}");
    t.line(
        "",
        &format!("sync merge, 2 clones x {k} divergent writebacks"),
        format!("{} (fetch + merge + push, one process)", ms(wall)),
    );
}

/// A writeback on a day with no runs yet against one after `runs` runs the
/// same day: both states hold as many runs (the empty day's are the day
/// before), so only the day's own count differs; in-process and as a `git
/// loopx writeback` process, 1,000 todos each. Also, for scale: the same
/// writeback with no runs at all (what the state's size costs, whatever the
/// day).
fn runs_in_a_day(env: &Env, o: &Opts, t: &mut Table) {
    const TODOS: usize = 1_000;
    let runs = o.runs_in_a_day;
    let yesterday = Timestamp::from_unix(now().unix() - 86_400);
    let cases = [
        (
            "runs-empty",
            runs,
            yesterday,
            format!("empty day ({runs} runs the day before)"),
        ),
        (
            "runs-full",
            runs,
            now(),
            format!("after {runs} runs that day"),
        ),
        ("runs-none", 0, now(), "no runs at all".to_owned()),
    ];
    let mut figures = Vec::new();
    for (name, n_runs, at, label) in cases {
        let dir = build_with_runs(env, name, TODOS, n_runs, at);
        let ctx = loopx::session::Context::open(&dir, now(), Some("bench".into()), None).unwrap();
        let inproc = time(o.reps, |i| {
            loopx::session::mutate(&ctx, |s: &mut State, goal: &str| {
                let mut run = Run::new(
                    ids::derive_id("run_", &[name, "in-process", &i.to_string()]),
                    RunKind::Writeback,
                    goal,
                    Some("bench"),
                    now(),
                );
                run.todo = Some(todo_id(i % TODOS));
                run.outcome = Some(Outcome::OutcomeProgress);
                run.summary = Some(format!("in-process {i}"));
                loopx::ops::append_run(s, goal, &mut run);
                Ok((
                    (),
                    Message::new("writeback", format!("bench writeback {i}")),
                ))
            })
            .unwrap();
        });
        let process = time(o.reps, |i| {
            let todo = todo_id(i % TODOS);
            env.loopx_ok(
                &dir,
                &[
                    "--agent",
                    "bench",
                    "writeback",
                    "--todo",
                    &todo,
                    "--outcome",
                    "outcome_progress",
                    "--summary",
                    "bench",
                ],
            );
        });
        figures.push((label, inproc, process));
    }
    let base = figures[0].clone();
    let vs = |s: Stats, b: Stats| {
        format!(
            "{:.2}x the empty day",
            s.p50.as_secs_f64() / b.p50.as_secs_f64()
        )
    };
    for (label, inproc, _) in &figures {
        t.row(
            "",
            &format!("writeback in-process, {label}"),
            *inproc,
            vs(*inproc, base.1),
        );
    }
    for (label, _, process) in &figures {
        t.row(
            "",
            &format!("writeback process, {label}"),
            *process,
            vs(*process, base.2),
        );
    }
}

fn reference_turn(env: &Env, o: &Opts, t: &mut Table) {
    let (Ok(ref_bin), Ok(ref_path)) = (
        std::env::var("LOOPX_REF_BIN"),
        std::env::var("LOOPX_REF_PATH"),
    ) else {
        t.line(
            "",
            "Python reference turn",
            "skipped: run scripts/install-reference.sh and set LOOPX_REF_BIN, LOOPX_REF_PATH"
                .into(),
        );
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/reference-turn.sh");
    let scratch = env.root.path().join("reference");
    let path = format!("{ref_path}:{}", std::env::var("PATH").unwrap_or_default());
    // The script prints `step=NAME rc=RC seconds=S` per CLI process; the turn
    // is the sum of its steps (adding the next todo is set-up, not the turn).
    let run_ref = |args: &[&str]| -> Duration {
        let out = Command::new("bash")
            .arg(&script)
            .args(args)
            .env("LOOPX_REF_BIN", &ref_bin)
            .env("LOOPX_REF_PATH", &ref_path)
            .env("PATH", &path)
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "reference turn failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("step=") && !l.starts_with("step=add "))
            .filter_map(|l| {
                l.rsplit_once("seconds=")
                    .and_then(|(_, s)| s.trim().parse::<f64>().ok())
            })
            .map(Duration::from_secs_f64)
            .sum()
    };
    run_ref(&["setup", scratch.to_str().unwrap()]);
    let reps = o.reps.clamp(3, 7);
    run_ref(&["turn", scratch.to_str().unwrap(), "1"]);
    let theirs = stats(
        (0..reps)
            .map(|i| run_ref(&["turn", scratch.to_str().unwrap(), &(i + 2).to_string()]))
            .collect(),
    );
    let dir = build(env, "turn", 100);
    let ours = stats(
        (0..reps)
            .map(|i| {
                let a = ["--agent", "bench"];
                let turn = format!("t{i}");
                let text = format!("turn {i}");
                let out = env.loopx_ok(&dir, &[&a[..], &["--json", "todo", "add", &text]].concat());
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                let id = v["todo"]["id"].as_str().unwrap().to_owned();
                let start = Instant::now();
                env.loopx_ok(&dir, &[&a[..], &["should-run", "--turn", &turn]].concat());
                env.loopx_ok(&dir, &[&a[..], &["todo", "claim", &id]].concat());
                env.loopx_ok(
                    &dir,
                    &[
                        &a[..],
                        &[
                            "writeback",
                            "--todo",
                            &id,
                            "--turn",
                            &turn,
                            "--outcome",
                            "outcome_progress",
                            "--summary",
                            "s",
                        ],
                    ]
                    .concat(),
                );
                env.loopx_ok(
                    &dir,
                    &[&a[..], &["todo", "done", &id, "--evidence", "e"]].concat(),
                );
                env.loopx_ok(
                    &dir,
                    &[&a[..], &["quota", "spend", "--turn", &turn]].concat(),
                );
                start.elapsed()
            })
            .collect(),
    );
    t.row("", "governed turn, Python reference", theirs, String::new());
    t.row(
        "",
        "governed turn, git loopx (5 processes)",
        ours,
        format!(
            "{:.0}x faster",
            theirs.p50.as_secs_f64() / ours.p50.as_secs_f64()
        ),
    );
}

fn main() {
    // `--setup DIR N`: only build a repository of N todos at DIR/sN and keep
    // it (for profiling one command by hand), then stop.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--claim-worker") {
        return claim_worker(&args[2..]);
    }
    if args.get(1).map(String::as_str) == Some("--setup") {
        let (Some(dir), Some(n)) = (args.get(2), args.get(3).and_then(|n| n.parse().ok())) else {
            panic!("usage: bench --setup DIR N");
        };
        let env = Env {
            root: tempfile::TempDir::new_in(dir).unwrap(),
            bin: bin(),
        };
        std::fs::create_dir_all(env.home()).unwrap();
        let repo = build(&env, &format!("s{n}"), n);
        println!("{}", repo.display());
        let _ = env.root.keep();
        return;
    }
    let o = opts();
    let env = Env {
        root: tempfile::tempdir().unwrap(),
        bin: bin(),
    };
    std::fs::create_dir_all(env.home()).unwrap();
    let started = Instant::now();
    let mut t = Table { rows: Vec::new() };
    println!(
        "git-loopx benchmark: {} reps per figure, sizes {:?}",
        o.reps, o.sizes
    );
    if let Some(old) = &o.against {
        for &n in &o.sizes {
            against(&env, &o, n, old);
        }
        return;
    }
    let run = |part: &str| o.only.as_deref().is_none_or(|only| only == part);
    if run("sizes") {
        for &n in &o.sizes {
            bench_size(&env, &o, n, &mut t);
        }
    }
    if run("contention") {
        contention(&env, &o, &mut t, Claimer::Library);
        contention(&env, &o, &mut t, Claimer::Cli);
    }
    if run("merge") {
        divergent_merge(&env, &o, &mut t);
    }
    if run("runs") {
        runs_in_a_day(&env, &o, &mut t);
    }
    if run("turn") {
        reference_turn(&env, &o, &mut t);
    }
    println!("\n| todos | measure | p50 | p95 | note |\n|---:|---|---:|---:|---|");
    for r in &t.rows {
        println!("| {} | {} | {} | {} | {} |", r[0], r[1], r[2], r[3], r[4]);
    }
    println!(
        "\ntotal benchmark time: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// `--against OLD`: the per-process figures of this build and of the binary
/// `old`, run in turn (the order swapped each round) on two copies of one
/// repository of `n` todos, so both see the same disk and the same load.
fn against(env: &Env, o: &Opts, n: usize, old: &Path) {
    let seed = build(env, &format!("against{n}"), n);
    let copy = |name: &str| {
        let dir = env.root.path().join(name);
        let status = Command::new("cp")
            .arg("-a")
            .arg(&seed)
            .arg(&dir)
            .status()
            .expect("cp");
        assert!(status.success());
        dir
    };
    // Both binaries run from copies made now, side by side: how long an
    // executable takes to start depends on how its file sits in the page
    // cache (one the linker just wrote starts slower than a fresh copy of
    // the same bytes, by ~10 % of a 2.5 ms `--version` here), which would
    // otherwise be measured as a difference between the builds.
    let bins = tempfile::tempdir().unwrap();
    let fresh = |from: &Path, name: &str| {
        let to = bins.path().join(name);
        std::fs::copy(from, &to).expect("copy a binary to measure");
        to
    };
    let new_env = Env {
        root: tempfile::tempdir().unwrap(),
        bin: fresh(&env.bin, "new"),
    };
    let old_env = Env {
        root: tempfile::tempdir().unwrap(),
        bin: fresh(old, "old"),
    };
    for e in [&new_env, &old_env] {
        std::fs::create_dir_all(e.home()).unwrap();
    }
    // Named by size: `cp -a` into an existing directory would copy the
    // seed inside the previous size's copy, and measure that one again.
    let sides = [
        (&new_env, copy(&format!("new{n}"))),
        (&old_env, copy(&format!("old{n}"))),
    ];
    for (e, dir) in &sides {
        e.loopx_ok(dir, &["status"]);
    }
    type Args = fn(usize) -> Vec<String>;
    let commands: [(&str, Args); 4] = [
        ("claim", |i| {
            vec![
                "--agent".into(),
                "bench".into(),
                "todo".into(),
                "claim".into(),
                todo_id(i),
            ]
        }),
        ("writeback (todo update)", |i| {
            vec![
                "--agent".into(),
                "bench".into(),
                "todo".into(),
                "update".into(),
                todo_id(i),
                "--note".into(),
                "process".into(),
            ]
        }),
        ("status", |_| vec!["status".into()]),
        ("should-run", |_| {
            vec!["--agent".into(), "bench".into(), "should-run".into()]
        }),
    ];
    println!(
        "\n{n} todos: this build against {}, {} rounds, p50",
        old.display(),
        o.reps
    );
    for (what, args) in commands {
        let mut times = [Vec::new(), Vec::new()];
        for i in 0..o.reps {
            let args = args(i % n);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            for k in [i % 2, 1 - i % 2] {
                let (e, dir) = &sides[k];
                let t = Instant::now();
                e.loopx_ok(dir, &args);
                times[k].push(t.elapsed());
            }
        }
        let [new, old] = times.map(|t| stats(t).p50);
        println!(
            "  {n:>6}  {what:<28} new {:>10}  old {:>10}  {:.2}x",
            ms(new),
            ms(old),
            new.as_secs_f64() / old.as_secs_f64()
        );
    }
}
