//! The fleet benchmark: many clones of one repository, each with its own
//! agents, claiming and draining todos through one remote.
//!
//! ```text
//! cargo run --release --example fleet -- --clones 16 --todos 200 --mode both
//! cargo run --release --example fleet -- --bin NEW --compare OLD --latency-ms 50
//! ```
//!
//! Everything runs in a scratch directory under `$TMPDIR`: a bare remote, a
//! seed clone that runs `init`, adds the todos one `todo add` at a time and
//! `sync`s, and N clones (`git clone`, a local `user.name`/`user.email`, one
//! `git loopx sync`). Every process gets a hermetic environment (`HOME`,
//! `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM=1`, `TZ=UTC`, fixed
//! author and committer names) but the real clock: `LOOPX_NOW` is removed.
//!
//! The `git-loopx` processes find a `git` wrapper first on their `PATH`. It
//! sleeps `--latency-ms` before each `fetch`, `push` and `ls-remote` (one
//! sleep per network command), and appends one line per push to a log: the
//! exit code and the push's `--porcelain` result lines. A push counts as
//! rejected when one of its lines has the `!` flag and says `[rejected]`,
//! `stale info`, `fetch first` or `atomic push failed`: a lost
//! compare-and-swap (a server hook's `[remote rejected]` is not one).
//!
//! `--mode claims`: one claimer, then N×M claimers (agent
//! `a<clone>-<agent>`, the M agents of a clone share it), each on its own
//! setup with the same number of todos (`--todos`, raised to N×M×`--claims-each`).
//! Every claimer claims its own disjoint share of the todos, one
//! `todo claim ID --sync` after another (each followed by a `sync` with
//! `--sync-after-claim`, its time counted in the claim's latency), for
//! `--seconds` or until its share ends. With `--rounds R` the two sides
//! take turns R times on their setups, each going on down its share, so a
//! slow stretch of the machine falls on both alike. A claim that exits non-zero gave up (the binary's own retries are
//! spent); it is tried again up to twice. Printed: claims/s for one and for
//! N×M claimers and their ratio (over all rounds, and each round's), claims per claimer against the fair share,
//! latency percentiles over every attempt, and four verdicts: the fleet
//! claims at least as fast as one claimer, every claimer gets at least a
//! third of the fair share, none gives up, p95 ≤ 2 s.
//!
//! `--mode drain`: every agent loops `todo next --claim --sync`, `todo done
//! ID --evidence …` and `sync` (`--no-sync-after-done` drops the last) until
//! nothing is ready on the remote; then every clone syncs, twice round.
//! Printed: the wall time to drain `--todos`, todos/s, claims/s, todos per
//! agent, rejected pushes, merge commits per todo, remote operations per
//! todo (fetches, pushes, ls-remotes: each a network round) and commits
//! on the remote (over all its refs), whether every todo was done exactly once (the final
//! `todo list --all`, each id completed once, no id claimed by two agents),
//! and whether every clone and the remote hold the same `loopx-state` tree;
//! then the lease refs left on the remote and in the fullest clone (after
//! converging, and again after waiting out four `--lease-grace`s and one
//! more sync round), and a fresh clone's first `sync` before and after the drain
//! (median of 3).
//!
//! `--transport http|ssh` serves the remote through
//! `examples/support/serve-remote.sh` (installing its Debian packages when
//! missing): `git http-backend` behind lighttpd, or a private `sshd`, on
//! 127.0.0.1. The clones are set up over the file system, then pointed at
//! the served URL; `--latency-ms` then delays every byte on the wire, one
//! way, through the script's delay line.
//!
//! `--mode merge`: what one `sync` costs for each peer head it merges.
//! Clones 1..N each change one todo (`todo update --note`) and publish
//! their branch on a peer ref with a plain `git push`, merging nothing.
//! Then, for K = 0, 1, 2, 4, … N-1 peer heads, on fresh copies of the
//! remote (keeping K of those refs) and of clone 0: `git fetch` of what
//! `sync` fetches, then `git loopx sync` timed (median of 7), so the figure
//! is the merge and the push, not the transfer. Printed: each K's time and
//! the cost per extra peer head, the slope of the least-squares line
//! through the times from K = 2 on: one head is a fast-forward, two are
//! the first merge.
//!
//! `--bin PATH` measures another build (default: this checkout's, built
//! first under cargo); `--compare OTHER` also runs everything with OTHER, each
//! on its own fresh setup, and prints both side by side with B/A ratios.
//! Only commands today's binary has are used, so old and new builds compare.
//! Every child process is killed after `--timeout-s` (default 300) and
//! counted. Other options: `--agents M` (1), `--seed S`.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/served.rs"]
mod served;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use served::Served;

const USAGE: &str = "\
usage: cargo run --release --example fleet -- [options]

  --clones N             clones of the repository (default 16)
  --agents M             agents per clone (default 1)
  --todos T              todos to drain; claims uses at least N*M*K (default 200)
  --mode claims|drain|both|merge   what to measure (default both)
  --seconds S            how long the claimers claim (default 20), per round
  --rounds R             claims: one claimer and N×M claimers take turns, R rounds
                         each, on setups kept between rounds (default 1)
  --claims-each K        todos per claimer at least, in claims mode (default 20)
  --latency-ms L         sleep before every fetch, push, ls-remote (default 0)
  --no-sync-after-done   drain: no `sync` after each `todo done`
  --sync-after-claim     claims: a `sync` after each claim (timed with it)
  --transport T          file (default), http (git http-backend behind lighttpd) or ssh
                         (a private sshd), both on 127.0.0.1 through
                         examples/support/serve-remote.sh; --latency-ms is then a
                         one-way delay on every byte (a round trip gains 2L)
  --lease-grace S        git config loopx.leaseRefGrace in every clone (default: unset, 10m);
                         drain: after converging, wait out four and sync once more
  --bin PATH             the git-loopx to measure (default: this checkout's)
  --compare PATH         also measure this one, side by side (B/A ratios)
  --timeout-s S          kill any child after S seconds (default 300)
  --seed S               seed of the todo shuffle (default: from the clock)
  --keep                 leave the scratch directories behind (their paths are printed)

Scratch directories go to $TMPDIR.";

/// How the clones reach the remote.
#[derive(Clone, Copy, PartialEq)]
enum Transport {
    File,
    Http,
    Ssh,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Claims,
    Drain,
    Both,
    Merge,
}

struct Opts {
    clones: usize,
    agents: usize,
    todos: usize,
    mode: Mode,
    seconds: u64,
    claims_each: usize,
    rounds: usize,
    latency_ms: u64,
    sync_after_done: bool,
    sync_after_claim: bool,
    lease_grace: Option<u64>,
    transport: Transport,
    bin: Option<PathBuf>,
    compare: Option<PathBuf>,
    timeout: Duration,
    seed: u64,
    keep: bool,
}

fn opts() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        clones: 16,
        agents: 1,
        todos: 200,
        mode: Mode::Both,
        seconds: 20,
        claims_each: 20,
        rounds: 1,
        latency_ms: 0,
        sync_after_done: true,
        sync_after_claim: false,
        lease_grace: None,
        transport: Transport::File,
        bin: None,
        compare: None,
        timeout: Duration::from_secs(300),
        seed: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
        keep: false,
    };
    let fail = |message: String| -> ! {
        eprintln!("fleet: {message}\n\n{USAGE}");
        std::process::exit(2);
    };
    let mut i = 0;
    while i < args.len() {
        let value = || match args.get(i + 1) {
            Some(v) => v.clone(),
            None => fail(format!("{} needs a value", args[i])),
        };
        let number = || {
            value()
                .parse::<u64>()
                .unwrap_or_else(|_| fail(format!("{} needs a number", args[i])))
        };
        match args[i].as_str() {
            "--clones" => o.clones = number().max(1) as usize,
            "--agents" => o.agents = number().max(1) as usize,
            "--todos" => o.todos = number().max(1) as usize,
            "--seconds" => o.seconds = number(),
            "--claims-each" => o.claims_each = number().max(1) as usize,
            "--rounds" => o.rounds = number().max(1) as usize,
            "--latency-ms" => o.latency_ms = number(),
            "--timeout-s" => o.timeout = Duration::from_secs(number().max(1)),
            "--seed" => o.seed = number(),
            // Absolute: the binary runs in the clones.
            "--bin" | "--compare" => {
                let given = value();
                let bin = std::fs::canonicalize(&given)
                    .unwrap_or_else(|e| fail(format!("{} {given}: {e}", args[i])));
                if args[i] == "--bin" {
                    o.bin = Some(bin);
                } else {
                    o.compare = Some(bin);
                }
            }
            "--mode" => {
                o.mode = match value().as_str() {
                    "claims" => Mode::Claims,
                    "drain" => Mode::Drain,
                    "both" => Mode::Both,
                    "merge" => Mode::Merge,
                    other => fail(format!("--mode {other}: claims, drain, both or merge")),
                }
            }
            "--lease-grace" => o.lease_grace = Some(number()),
            "--transport" => {
                o.transport = match value().as_str() {
                    "file" => Transport::File,
                    "http" => Transport::Http,
                    "ssh" => Transport::Ssh,
                    other => fail(format!("--transport {other}: file, http or ssh")),
                };
            }
            "--sync-after-claim" => {
                o.sync_after_claim = true;
                i += 1;
                continue;
            }
            "--no-sync-after-done" => {
                o.sync_after_done = false;
                i += 1;
                continue;
            }
            "--keep" => {
                o.keep = true;
                i += 1;
                continue;
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => fail(format!("unknown option {other}")),
        }
        i += 2;
    }
    o
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

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, (self.next() % (i as u64 + 1)) as usize);
        }
    }
}

/// What one child process did.
struct Ran {
    /// `None`: killed (by the time box, or a signal).
    code: Option<i32>,
    json: Value,
    elapsed: Duration,
    timed_out: bool,
}

impl Ran {
    fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// `exit 1 claim_conflict`, `timeout`, …
    fn failure(&self) -> String {
        if self.timed_out {
            return "timeout".to_owned();
        }
        let code = self.json["error"]["code"].as_str().unwrap_or("no-json");
        match self.code {
            Some(n) => format!("exit {n} {code}"),
            None => format!("killed {code}"),
        }
    }
}

/// Runs `cmd` to its end or for at most `limit`, then kills it.
fn run(cmd: &mut Command, limit: Duration) -> (Ran, Vec<u8>) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("a child process starts");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waitpid") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            timed_out = true;
            break child.wait().expect("waitpid");
        }
        let pause = if started.elapsed() < Duration::from_millis(200) {
            1
        } else {
            5
        };
        std::thread::sleep(Duration::from_millis(pause));
    };
    let elapsed = started.elapsed();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let json = serde_json::from_slice(&stdout).unwrap_or(Value::Null);
    let ran = Ran {
        code: status.code(),
        json,
        elapsed,
        timed_out,
    };
    (ran, if stdout.is_empty() { stderr } else { stdout })
}

/// The first `git` on `PATH`: the one the wrapper runs.
fn real_git() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|git| {
            std::fs::metadata(git).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| {
            eprintln!("fleet: no git on PATH");
            std::process::exit(2);
        })
}

/// The `git` the loopx processes run: `sleep` before network commands, one
/// log line per push: `rc=<code>\t<porcelain lines joined by |>`, and one
/// line per fetch or ls-remote in `ops.log` beside it.
fn wrapper_script(real_git: &Path, log: &Path, latency_ms: u64) -> String {
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let sleep = if latency_ms == 0 {
        String::new()
    } else {
        format!(
            "case $sub in fetch|push|ls-remote) sleep {}.{:03} ;; esac\n",
            latency_ms / 1000,
            latency_ms % 1000
        )
    };
    format!(
        r#"#!/bin/sh
# git for the fleet benchmark: latency on network commands, pushes logged.
real={git}
sub=
skip=
for a in "$@"; do
  if [ -n "$skip" ]; then skip=; continue; fi
  case $a in
    -C|-c|--git-dir|--work-tree|--namespace|--config-env) skip=1 ;;
    -*) ;;
    *) sub=$a; break ;;
  esac
done
case $sub in fetch|ls-remote) printf '%s\n' "$sub" >>{ops} ;; esac
{sleep}if [ "$sub" = push ]; then
  out=$("$real" "$@")
  rc=$?
  if [ -n "$out" ]; then printf '%s\n' "$out"; fi
  printf 'rc=%s\t%s\n' "$rc" "$(printf '%s' "$out" | tr '\n' '|')" >>{log}
  exit "$rc"
fi
exec "$real" "$@"
"#,
        git = quote(real_git),
        log = quote(log),
        ops = quote(&log.with_file_name("ops.log")),
    )
}

/// What the wrapper logged about the pushes of a phase.
struct Pushes {
    all: u64,
    /// Lost a compare-and-swap: the lease (`stale info`), the ref moved
    /// (`fetch first`, `[rejected]`, `atomic push failed`), or the remote's
    /// own ref update lost a race (`[remote rejected] (failed to update
    /// ref)`, `cannot lock ref`).
    rejected: u64,
    /// Failed without a lost compare-and-swap.
    failed: u64,
    /// Every `!` line's status, as `[rejected] (stale info)`.
    reasons: BTreeMap<String, u64>,
}

const CAS_LOST: [&str; 7] = [
    "[rejected]",
    "stale info",
    "fetch first",
    "atomic push failed",
    "failed to update ref",
    "cannot lock ref",
    "incorrect old value",
];

fn count_pushes(lines: &[String]) -> Pushes {
    let mut p = Pushes {
        all: lines.len() as u64,
        rejected: 0,
        failed: 0,
        reasons: BTreeMap::new(),
    };
    for line in lines {
        let (rc, rest) = line.split_once('\t').unwrap_or((line, ""));
        let refused: Vec<&str> = rest.split('|').filter(|l| l.starts_with('!')).collect();
        for l in &refused {
            let status = l.rsplit('\t').next().unwrap_or(l);
            *p.reasons.entry(status.to_owned()).or_default() += 1;
        }
        if refused
            .iter()
            .any(|l| CAS_LOST.iter().any(|s| l.contains(s)))
        {
            p.rejected += 1;
        } else if rc != "rc=0" {
            p.failed += 1;
        }
    }
    p
}

impl Pushes {
    fn row(&self) -> Row {
        row(
            "rejected pushes / pushes",
            format!(
                "{} / {} ({} failed otherwise)",
                self.rejected, self.all, self.failed
            ),
            Some(self.rejected as f64),
        )
    }

    fn reasons_row(&self) -> Row {
        row("  refused ref updates", tally(&self.reasons), None)
    }
}

/// One setup: a bare remote, a seed clone, N clones, the wrapper.
struct Fleet {
    bin: PathBuf,
    root: tempfile::TempDir,
    home: PathBuf,
    path: OsString,
    real_git: PathBuf,
    push_log: PathBuf,
    remote: PathBuf,
    clones: Vec<PathBuf>,
    todos: Vec<String>,
    limit: Duration,
    timeouts: AtomicU64,
    /// Failures already shown on stderr, by command and code.
    seen: Mutex<BTreeSet<String>>,
    /// The served remote (stopped on drop), the URL a clone reaches it at
    /// and `core.sshCommand` for ssh.
    served: Option<(Served, String, Option<String>)>,
}

/// How a clone reaches a served remote: the URL, and `core.sshCommand`
/// for ssh.
fn reach(served: &Served, transport: Transport) -> (String, Option<String>) {
    match transport {
        Transport::Http => (served.http.clone(), None),
        Transport::Ssh => (served.ssh.clone(), Some(served.ssh_command.clone())),
        Transport::File => unreachable!("the file transport is not served"),
    }
}

/// Serves `remote` over HTTP and ssh on 127.0.0.1, installing the
/// servers' Debian packages first when they are missing.
fn serve(remote: &Path, dir: &Path, latency_ms: u64) -> Served {
    let installed = Command::new("bash")
        .arg(served::script())
        .arg("install")
        .status();
    assert!(
        installed.is_ok_and(|s| s.success()),
        "serve-remote.sh install failed"
    );
    Served::start(remote, dir, latency_ms)
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // Stop the servers while their files (under `root`) are still there.
        self.served.take();
    }
}

fn hermetic<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    cmd.env("HOME", home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "fleet")
        .env("GIT_AUTHOR_EMAIL", "fleet@example.com")
        .env("GIT_COMMITTER_NAME", "fleet")
        .env("GIT_COMMITTER_EMAIL", "fleet@example.com")
        .env("TZ", "UTC")
        .env("LANG", "C")
        .env_remove("LOOPX_NOW")
        .env_remove("LOOPX_AGENT")
        .env_remove("LOOPX_GOAL")
        .env_remove("LOOPX_LOG")
        .env_remove("RUST_LOG")
}

/// Waits (up to two minutes) until no process works in an earlier phase's
/// scratch directory: the background repacks git-loopx starts, and the
/// remote's `gc --auto`, outlive the commands that started them and would
/// slow whichever phase runs next.
fn settle() {
    let scratch = std::env::temp_dir().join("fleet-");
    let scratch = scratch.to_string_lossy().into_owned();
    let me = std::process::id().to_string();
    let started = Instant::now();
    loop {
        let busy = std::fs::read_dir("/proc")
            .map(|entries| {
                entries.flatten().any(|e| {
                    let name = e.file_name();
                    let pid = name.to_string_lossy();
                    pid.bytes().all(|b| b.is_ascii_digit())
                        && pid != me
                        && std::fs::read_link(e.path().join("cwd"))
                            .is_ok_and(|cwd| cwd.to_string_lossy().starts_with(&scratch))
                })
            })
            .unwrap_or(false);
        if !busy || started.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if started.elapsed() > Duration::from_secs(1) {
        eprintln!(
            "fleet: waited {:.1} s for the previous phase's background git to end",
            started.elapsed().as_secs_f64()
        );
    }
}

impl Fleet {
    /// Builds the remote, seeds it with `todos` todos and clones it `clones` times.
    fn new(bin: &Path, real_git: &Path, o: &Opts, clones: usize, todos: usize) -> Fleet {
        settle();
        let mut root = tempfile::Builder::new()
            .prefix("fleet-")
            .tempdir()
            .expect("a scratch directory");
        root.disable_cleanup(o.keep);
        let home = root.path().join("home");
        let wrapper = root.path().join("wrapper");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&wrapper).unwrap();
        let push_log = root.path().join("pushes.log");
        let script = wrapper.join("git");
        // Over a served transport the delay is on the wire instead.
        let wrapper_latency = if o.transport == Transport::File {
            o.latency_ms
        } else {
            0
        };
        std::fs::write(
            &script,
            wrapper_script(real_git, &push_log, wrapper_latency),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut path = vec![wrapper];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let mut fleet = Fleet {
            bin: bin.to_owned(),
            home,
            path: std::env::join_paths(path).expect("PATH joins"),
            real_git: real_git.to_owned(),
            push_log,
            remote: root.path().join("remote.git"),
            clones: Vec::new(),
            todos: Vec::new(),
            limit: o.timeout,
            timeouts: AtomicU64::new(0),
            seen: Mutex::default(),
            served: None,
            root,
        };
        let started = Instant::now();
        let top = fleet.root.path().to_owned();
        fleet.git(&top, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
        fleet.git(&top, &["clone", "-q", "remote.git", "seed"]);
        let seed = top.join("seed");
        fleet.git(&seed, &["commit", "-q", "--allow-empty", "-m", "base"]);
        fleet.git(&seed, &["push", "-q", "origin", "HEAD:main"]);
        fleet.must(&seed, &["init", "--objective", "fleet benchmark"]);
        for i in 0..todos {
            let added = fleet.must(&seed, &["todo", "add", &format!("fleet todo {i}")]);
            let id = added["todo"]["id"]
                .as_str()
                .expect("todo add prints the id");
            fleet.todos.push(id.to_owned());
        }
        fleet.must(&seed, &["sync"]);
        for c in 0..clones {
            let name = format!("c{c:02}");
            fleet.git(&top, &["clone", "-q", "remote.git", &name]);
            let dir = top.join(name);
            fleet.git(&dir, &["config", "user.name", &format!("clone {c}")]);
            fleet.git(
                &dir,
                &["config", "user.email", &format!("c{c}@example.com")],
            );
            if let Some(grace) = o.lease_grace {
                fleet.git(&dir, &["config", "loopx.leaseRefGrace", &grace.to_string()]);
            }
            fleet.must(&dir, &["sync"]);
            fleet.clones.push(dir);
        }
        if o.transport != Transport::File {
            let dir = fleet.root.path().join("served");
            let latency = o.latency_ms;
            let served = serve(&fleet.remote, &dir, latency);
            let (url, ssh) = reach(&served, o.transport);
            fleet.served = Some((served, url, ssh));
            for dir in &fleet.clones {
                fleet.reach_remote(dir);
            }
        }
        eprintln!(
            "fleet: set up {clones} clones, {todos} todos in {:.1} s in {} ({})",
            started.elapsed().as_secs_f64(),
            fleet.root.path().display(),
            bin.display()
        );
        fleet
    }

    /// The real git, without latency, for setup and inspection.
    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new(&self.real_git);
        hermetic(cmd.current_dir(dir), &self.home).args(args);
        let (ran, out) = run(&mut cmd, self.limit);
        assert!(
            ran.ok(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out).trim()
        );
        String::from_utf8_lossy(&out).trim().to_owned()
    }

    /// `git-loopx --json [--agent A] ARGS…` in `dir`, through the wrapper.
    fn loopx(&self, dir: &Path, agent: Option<&str>, args: &[&str]) -> Ran {
        let mut cmd = Command::new(&self.bin);
        hermetic(cmd.current_dir(dir), &self.home)
            .env("PATH", &self.path)
            .arg("--json");
        if let Some(agent) = agent {
            cmd.args(["--agent", agent]);
        }
        let (ran, out) = run(cmd.args(args), self.limit);
        if ran.timed_out {
            self.timeouts.fetch_add(1, Ordering::Relaxed);
        }
        let ignored = ran.json["error"]["code"] == "nothing_ready";
        let what = format!("{} {}", args[..2.min(args.len())].join(" "), ran.failure());
        if !ran.ok() && !ignored && self.seen.lock().unwrap().insert(what.clone()) {
            let message = ran.json["error"]["message"]
                .as_str()
                .map_or_else(|| String::from_utf8_lossy(&out).into_owned(), str::to_owned);
            let message: String = message.trim().chars().take(300).collect();
            eprintln!("fleet: first `{what}`: {message}");
        }
        ran
    }

    /// A setup step that must succeed; its JSON.
    fn must(&self, dir: &Path, args: &[&str]) -> Value {
        let ran = self.loopx(dir, None, args);
        assert!(
            ran.ok(),
            "git loopx {args:?}: {} {}",
            ran.failure(),
            ran.json
        );
        ran.json
    }

    fn pushes(&self) -> Vec<String> {
        std::fs::read_to_string(&self.push_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The fetches and ls-remotes run so far, one name a line.
    fn fetches(&self) -> Vec<String> {
        std::fs::read_to_string(self.push_log.with_file_name("ops.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Points a clone's `origin` at the served remote (no-op over files).
    fn reach_remote(&self, dir: &Path) {
        let Some((_, url, ssh)) = &self.served else {
            return;
        };
        self.git(dir, &["remote", "set-url", "origin", url]);
        if let Some(ssh) = ssh {
            self.git(dir, &["config", "core.sshCommand", ssh]);
        }
    }

    /// Seconds a fresh clone of the remote takes for its first `sync`
    /// (the median of three; the clone itself is not timed).
    fn fresh_first_sync(&self) -> f64 {
        let mut times = Vec::new();
        for i in 0..3 {
            let name = format!("fresh-{i}");
            let top = self.root.path();
            self.git(top, &["clone", "-q", "remote.git", &name]);
            let dir = top.join(&name);
            self.git(&dir, &["config", "user.name", "fresh clone"]);
            self.git(&dir, &["config", "user.email", "fresh@example.com"]);
            self.reach_remote(&dir);
            let ran = self.loopx(&dir, None, &["sync"]);
            assert!(ran.ok(), "a fresh clone's sync: {}", ran.failure());
            times.push(ran.elapsed.as_secs_f64());
            let _ = std::fs::remove_dir_all(&dir);
        }
        spread(times).1
    }

    /// How many lease refs the remote holds, and the most any clone holds
    /// copies of.
    fn lease_refs(&self) -> (usize, usize) {
        let count = |text: String| text.lines().filter(|l| !l.is_empty()).count();
        let remote =
            count(self.remote_git(&["for-each-ref", "--format=%(refname)", "refs/loopx/leases/"]));
        let clones = self
            .clones
            .iter()
            .map(|d| {
                count(self.git(
                    d,
                    &[
                        "for-each-ref",
                        "--format=%(refname)",
                        "refs/loopx/remotes/origin/leases/",
                    ],
                ))
            })
            .max()
            .unwrap_or(0);
        (remote, clones)
    }

    fn remote_git(&self, args: &[&str]) -> String {
        let git_dir = format!("--git-dir={}", self.remote.display());
        let mut all = vec![git_dir.as_str()];
        all.extend_from_slice(args);
        self.git(self.root.path(), &all)
    }
}

/// A table's line: a name, the text shown, the number ratios are taken of.
struct Row {
    name: String,
    text: String,
    value: Option<f64>,
}

fn row(name: &str, text: impl Into<String>, value: Option<f64>) -> Row {
    Row {
        name: name.to_owned(),
        text: text.into(),
        value,
    }
}

fn num(name: &str, value: f64, decimals: usize) -> Row {
    row(name, format!("{value:.decimals$}"), Some(value))
}

fn verdict(name: &str, pass: bool, detail: String) -> Row {
    let word = if pass { "PASS" } else { "FAIL" };
    row(name, format!("{word} ({detail})"), None)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// (min, median, max).
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return (0.0, 0.0, 0.0);
    }
    let median = (values[(n - 1) / 2] + values[n / 2]) / 2.0;
    (values[0], median, values[n - 1])
}

fn tally(counts: &BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{n}× {k}")).collect();
    parts.join(", ")
}

/// Agent names: `a<clone>-<agent>`, with the clone it runs in.
fn agents(clones: usize, per_clone: usize) -> Vec<(usize, String)> {
    (0..clones)
        .flat_map(|c| (0..per_clone).map(move |a| (c, format!("a{c}-{a}"))))
        .collect()
}

#[derive(Default)]
struct Claimer {
    /// How far down its list it got (claimed, given up or failed).
    tried: usize,
    claimed: u64,
    /// Seconds of every attempt, successful or not.
    latencies: Vec<f64>,
    retries: u64,
    gave_up: BTreeMap<String, u64>,
    ran_out: bool,
}

/// Every claimer claims its own list for `seconds`: (claimers, wall seconds).
fn claim_phase(
    fleet: &Fleet,
    claimers: &[(usize, String)],
    lists: &[Vec<String>],
    seconds: u64,
    sync_after: bool,
) -> (Vec<Claimer>, f64) {
    let started = Instant::now();
    let deadline = Duration::from_secs(seconds);
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = claimers
            .iter()
            .zip(lists)
            .map(|((clone, agent), list)| {
                s.spawn(move || {
                    let dir = &fleet.clones[*clone];
                    let mut me = Claimer {
                        ran_out: true,
                        ..Claimer::default()
                    };
                    for id in list {
                        if started.elapsed() >= deadline {
                            me.ran_out = false;
                            break;
                        }
                        me.tried += 1;
                        for attempt in 0..3 {
                            let ran =
                                fleet.loopx(dir, Some(agent), &["todo", "claim", id, "--sync"]);
                            let mut elapsed = ran.elapsed.as_secs_f64();
                            if ran.ok() {
                                me.claimed += 1;
                                if sync_after {
                                    let synced = fleet.loopx(dir, Some(agent), &["sync"]);
                                    elapsed += synced.elapsed.as_secs_f64();
                                    if !synced.ok() {
                                        let why = format!("sync: {}", synced.failure());
                                        *me.gave_up.entry(why).or_default() += 1;
                                    }
                                }
                                me.latencies.push(elapsed);
                                break;
                            }
                            me.latencies.push(elapsed);
                            *me.gave_up.entry(ran.failure()).or_default() += 1;
                            if attempt < 2 {
                                me.retries += 1;
                            }
                        }
                    }
                    me
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a claimer thread"))
            .collect()
    });
    (results, started.elapsed().as_secs_f64())
}

/// Adds one round's results to the claimers' totals, and drops what each
/// got through from the front of its list.
fn fold_claimers(totals: &mut [Claimer], round: Vec<Claimer>, lists: &mut [Vec<String>]) {
    for ((total, got), list) in totals.iter_mut().zip(round).zip(lists.iter_mut()) {
        list.drain(..got.tried.min(list.len()));
        total.tried += got.tried;
        total.claimed += got.claimed;
        total.latencies.extend(got.latencies);
        total.retries += got.retries;
        for (why, n) in got.gave_up {
            *total.gave_up.entry(why).or_default() += n;
        }
        total.ran_out = got.ran_out;
    }
}

fn claims_bench(o: &Opts, bin: &Path, real_git: &Path) -> Vec<Row> {
    let claimers = agents(o.clones, o.agents);
    let todos = o.todos.max(claimers.len() * o.claims_each);
    let mut rng = Rng(o.seed);

    // Both setups first, then the two take turns: a slow stretch of this
    // shared machine falls on both sides alike, not on one phase.
    let single = Fleet::new(bin, real_git, o, 1, todos);
    let fleet = Fleet::new(bin, real_git, o, o.clones, todos);
    let one = vec![(0, "a0-0".to_owned())];
    let mut solo_lists = vec![single.todos.clone()];
    rng.shuffle(&mut solo_lists[0]);
    let mut ids = fleet.todos.clone();
    rng.shuffle(&mut ids);
    let mut lists = vec![Vec::new(); claimers.len()];
    for (i, id) in ids.into_iter().enumerate() {
        lists[i % claimers.len()].push(id);
    }
    let (solo_mark, mark) = (single.pushes().len(), fleet.pushes().len());
    let mut solo = vec![Claimer::default()];
    let mut all: Vec<Claimer> = claimers.iter().map(|_| Claimer::default()).collect();
    let (mut solo_wall, mut wall) = (0.0, 0.0);
    let mut round_ratios = Vec::new();
    for round in 1..=o.rounds {
        settle();
        eprintln!(
            "fleet: claims, round {round}: 1 claimer for {} s",
            o.seconds
        );
        let (got, took) = claim_phase(&single, &one, &solo_lists, o.seconds, o.sync_after_claim);
        let solo_round = got[0].claimed as f64 / took;
        fold_claimers(&mut solo, got, &mut solo_lists);
        solo_wall += took;
        settle();
        eprintln!(
            "fleet: claims, round {round}: {} claimers for {} s",
            claimers.len(),
            o.seconds
        );
        let (got, took) = claim_phase(&fleet, &claimers, &lists, o.seconds, o.sync_after_claim);
        let round_rate = got.iter().map(|c| c.claimed).sum::<u64>() as f64 / took;
        fold_claimers(&mut all, got, &mut lists);
        wall += took;
        round_ratios.push(round_rate / solo_round.max(1e-9));
    }
    let solo_rate = solo[0].claimed as f64 / solo_wall;
    let mut solo_lat = solo[0].latencies.clone();
    solo_lat.sort_by(f64::total_cmp);
    let solo_rejected = count_pushes(&single.pushes()[solo_mark..]).rejected;
    let solo_timeouts = single.timeouts.load(Ordering::Relaxed);
    drop(single);
    let pushed = count_pushes(&fleet.pushes()[mark..]);

    let total: u64 = all.iter().map(|c| c.claimed).sum();
    let rate = total as f64 / wall;
    let fair = total as f64 / claimers.len() as f64;
    let (min, median, max) = spread(all.iter().map(|c| c.claimed as f64).collect());
    let mut lat: Vec<f64> = all.iter().flat_map(|c| c.latencies.clone()).collect();
    lat.sort_by(f64::total_cmp);
    let p95 = percentile(&lat, 0.95);
    let mut gave_up = BTreeMap::new();
    for c in &all {
        for (k, n) in &c.gave_up {
            *gave_up.entry(k.clone()).or_default() += n;
        }
    }
    let gave_up_n: u64 = gave_up.values().sum();
    let n = claimers.len();
    vec![
        row("== claims", format!("{n} claimers, {todos} todos"), None),
        num("1 claimer: claims/s", solo_rate, 2),
        row(
            "1 claimer: claims, p50/p95 s",
            format!(
                "{} in {solo_wall:.1} s, {:.3}/{:.3}",
                solo[0].claimed,
                percentile(&solo_lat, 0.5),
                percentile(&solo_lat, 0.95)
            ),
            None,
        ),
        row(
            "1 claimer: gave up, rejected",
            format!(
                "{}, {solo_rejected} rejected pushes, {solo_timeouts} timeouts",
                tally(&solo[0].gave_up)
            ),
            None,
        ),
        num(&format!("{n} claimers: claims/s"), rate, 2),
        num(&format!("{n} claimers: claims"), total as f64, 0),
        num("wall s", wall, 1),
        num(
            &format!("ratio {n} vs 1 claims/s"),
            rate / solo_rate.max(1e-9),
            2,
        ),
        row(
            "ratio in each round",
            round_ratios
                .iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(" "),
            None,
        ),
        row(
            "per claimer min/median/max",
            format!("{min}/{median}/{max}"),
            Some(median),
        ),
        num("fair share", fair, 1),
        num("min / fair share", min / fair.max(1e-9), 2),
        num("latency p50 s", percentile(&lat, 0.5), 3),
        num("latency p95 s", p95, 3),
        num("latency max s", lat.last().copied().unwrap_or(0.0), 3),
        num(
            "retries",
            all.iter().map(|c| c.retries).sum::<u64>() as f64,
            0,
        ),
        row(
            "gave up",
            format!("{gave_up_n}: {}", tally(&gave_up)),
            Some(gave_up_n as f64),
        ),
        pushed.row(),
        pushed.reasons_row(),
        num(
            "claimers whose list ran out",
            all.iter().filter(|c| c.ran_out).count() as f64,
            0,
        ),
        num("timeouts", fleet.timeouts.load(Ordering::Relaxed) as f64, 0),
        verdict(
            &format!("{n} claimers ≥ 1 claimer"),
            rate >= solo_rate,
            format!("{rate:.2} vs {solo_rate:.2}/s"),
        ),
        verdict(
            "every claimer ≥ 1/3 fair share",
            min >= fair / 3.0 && total > 0,
            format!("min {min} vs {:.1}", fair / 3.0),
        ),
        verdict(
            "none gives up",
            gave_up_n == 0,
            format!("{gave_up_n} gave up"),
        ),
        verdict("p95 ≤ 2 s", p95 <= 2.0, format!("{p95:.3} s")),
    ]
}

#[derive(Default)]
struct Drainer {
    /// Todos this agent was granted (`action: acquired`).
    claimed: Vec<String>,
    done: Vec<String>,
    failures: BTreeMap<String, u64>,
    stuck: bool,
}

impl Drainer {
    fn failed(&mut self, what: &str, ran: &Ran) {
        *self
            .failures
            .entry(format!("{what}: {}", ran.failure()))
            .or_default() += 1;
    }
}

/// One agent's loop: claim the next todo, complete it, sync; until nothing
/// is ready on the remote.
fn drain_agent(fleet: &Fleet, clone: usize, agent: &str, sync_after_done: bool) -> Drainer {
    let dir = &fleet.clones[clone];
    let mut me = Drainer::default();
    let (mut idle, mut failing) = (0, 0);
    let evidence = format!("drained by {agent}");
    while failing < 30 {
        let next = fleet.loopx(dir, Some(agent), &["todo", "next", "--claim", "--sync"]);
        if next.ok() {
            idle = 0;
            let id = next.json["todo"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if next.json["action"] == "acquired" {
                me.claimed.push(id.clone());
            }
            let done = fleet.loopx(
                dir,
                Some(agent),
                &["todo", "done", &id, "--evidence", &evidence],
            );
            if done.ok() {
                me.done.push(id);
                failing = 0;
            } else {
                me.failed("todo done", &done);
                failing += 1;
            }
            if sync_after_done {
                let sync = fleet.loopx(dir, Some(agent), &["sync"]);
                if !sync.ok() {
                    me.failed("sync", &sync);
                }
            }
        } else if next.json["error"]["code"] == "nothing_ready" {
            // Held by others or all done: stop once a fresh look agrees.
            idle += 1;
            let sync = fleet.loopx(dir, Some(agent), &["sync"]);
            if !sync.ok() {
                me.failed("sync", &sync);
            }
            let status = fleet.loopx(dir, Some(agent), &["status"]);
            if idle >= 3 || (status.ok() && status.json["counts"]["ready"] == 0) {
                return me;
            }
        } else {
            me.failed("todo next", &next);
            failing += 1;
        }
    }
    me.stuck = true;
    me
}

fn drain_bench(o: &Opts, bin: &Path, real_git: &Path) -> Vec<Row> {
    let fleet = Fleet::new(bin, real_git, o, o.clones, o.todos);
    let agents = agents(o.clones, o.agents);
    let fresh_before = fleet.fresh_first_sync();
    eprintln!("fleet: drain, {} agents, {} todos", agents.len(), o.todos);
    let mark = fleet.pushes().len();
    let fetch_mark = fleet.fetches().len();
    let started = Instant::now();
    let drainers: Vec<Drainer> = std::thread::scope(|s| {
        let handles: Vec<_> = agents
            .iter()
            .map(|(clone, agent)| {
                let fleet = &fleet;
                s.spawn(move || drain_agent(fleet, *clone, agent, o.sync_after_done))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an agent thread"))
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let drained = fleet.pushes().len();
    let pushed = count_pushes(&fleet.pushes()[mark..drained]);
    let ops = fleet.fetches();
    let ops = &ops[fetch_mark..];
    let fetches = ops.iter().filter(|o| o.as_str() == "fetch").count() as f64;
    let ls_remotes = ops.iter().filter(|o| o.as_str() == "ls-remote").count() as f64;

    eprintln!("fleet: drained in {wall:.1} s; every clone syncs, twice round");
    let converge_started = Instant::now();
    let mut converge_failures = BTreeMap::new();
    for _ in 0..2 {
        for dir in &fleet.clones {
            let sync = fleet.loopx(dir, None, &["sync"]);
            if !sync.ok() {
                *converge_failures.entry(sync.failure()).or_default() += 1;
            }
        }
    }
    let converge_wall = converge_started.elapsed().as_secs_f64();
    let converge_rejected = count_pushes(&fleet.pushes()[drained..]).rejected;
    let leases_converged = fleet.lease_refs();
    // The last ends were published moments ago: past four graces (when a
    // ref whose deleter is a peer that stopped syncing, such as the seed
    // clone, is anyone's to delete), one more sync round deletes them.
    if let Some(grace) = o.lease_grace {
        eprintln!(
            "fleet: waiting out four lease graces ({} s), then every clone syncs once",
            grace * 4
        );
        std::thread::sleep(Duration::from_secs(grace * 4 + 1));
        for dir in &fleet.clones {
            let sync = fleet.loopx(dir, None, &["sync"]);
            if !sync.ok() {
                *converge_failures.entry(sync.failure()).or_default() += 1;
            }
        }
    }
    let leases_left = fleet.lease_refs();
    let fresh_after = fleet.fresh_first_sync();

    // Convergence: one tree everywhere.
    let tip = |dir: &Path| fleet.git(dir, &["rev-parse", "loopx-state", "loopx-state^{tree}"]);
    let mut tips: Vec<String> = fleet.clones.iter().map(|d| tip(d)).collect();
    let remote_tip = fleet.remote_git(&["rev-parse", "loopx-state", "loopx-state^{tree}"]);
    tips.push(remote_tip.clone());
    let split = |t: &str| {
        let mut l = t.lines();
        (
            l.next().unwrap_or("").to_owned(),
            l.next().unwrap_or("").to_owned(),
        )
    };
    let trees: BTreeSet<String> = tips.iter().map(|t| split(t).1).collect();
    let commits: BTreeSet<String> = tips.iter().map(|t| split(t).0).collect();
    let (remote_commit, remote_tree) = split(&remote_tip);
    let converged = trees.len() == 1;

    // Exactly once: the final state, and what the agents were told.
    let listed = fleet.loopx(&fleet.clones[0], None, &["todo", "list", "--all"]);
    let status_of: BTreeMap<String, String> = listed.json["todos"]
        .as_array()
        .map(|todos| {
            todos
                .iter()
                .map(|t| {
                    let field = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
                    (field("id"), field("status"))
                })
                .collect()
        })
        .unwrap_or_default();
    let done_in_state = fleet
        .todos
        .iter()
        .filter(|id| status_of.get(*id).is_some_and(|s| s == "done"))
        .count();
    let mut completions: BTreeMap<&str, u64> = BTreeMap::new();
    let mut claimants: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (d, (_, agent)) in drainers.iter().zip(&agents) {
        for id in &d.done {
            *completions.entry(id).or_default() += 1;
        }
        for id in &d.claimed {
            claimants.entry(id).or_default().insert(agent);
        }
    }
    let twice_done = completions.values().filter(|n| **n > 1).count();
    let twice_claimed = claimants.values().filter(|a| a.len() > 1).count();
    let never_done = fleet
        .todos
        .iter()
        .filter(|id| !completions.contains_key(id.as_str()))
        .count();
    let exactly_once = listed.ok()
        && done_in_state == o.todos
        && never_done == 0
        && twice_done == 0
        && twice_claimed == 0;

    let merges: f64 = fleet
        .remote_git(&["rev-list", "--merges", "--count", "--all"])
        .parse()
        .unwrap_or(0.0);
    let total_commits: f64 = fleet
        .remote_git(&["rev-list", "--count", "--all"])
        .parse()
        .unwrap_or(0.0);
    let completed: usize = drainers.iter().map(|d| d.done.len()).sum();
    let claims: usize = drainers.iter().map(|d| d.claimed.len()).sum();
    let (min, median, max) = spread(drainers.iter().map(|d| d.done.len() as f64).collect());
    let mut failures = BTreeMap::new();
    for d in &drainers {
        for (k, n) in &d.failures {
            *failures.entry(k.clone()).or_default() += n;
        }
    }
    let short = |s: &str| s.chars().take(12).collect::<String>();
    vec![
        row(
            "== drain",
            format!("{} agents, {} todos", agents.len(), o.todos),
            None,
        ),
        num("wall s", wall, 1),
        num("todos/s", completed as f64 / wall, 3),
        num("claims/s", claims as f64 / wall, 3),
        row(
            "todos done, claims granted",
            format!("{completed}, {claims}"),
            Some(completed as f64),
        ),
        row(
            "per agent min/median/max",
            format!("{min}/{median}/{max}"),
            Some(median),
        ),
        row(
            "failures",
            tally(&failures),
            Some(failures.values().sum::<u64>() as f64),
        ),
        num(
            "agents stuck (30 failures in a row)",
            drainers.iter().filter(|d| d.stuck).count() as f64,
            0,
        ),
        pushed.row(),
        pushed.reasons_row(),
        num("merge commits on remote", merges, 0),
        num("merge commits per todo", merges / o.todos as f64, 2),
        {
            let per = |n: f64| n / o.todos as f64;
            let all = fetches + pushed.all as f64 + ls_remotes;
            row(
                "remote ops per todo (fetch/push/ls-remote)",
                format!(
                    "{:.2} ({:.2}/{:.2}/{:.2})",
                    per(all),
                    per(fetches),
                    per(pushed.all as f64),
                    per(ls_remotes)
                ),
                Some(per(all)),
            )
        },
        num("commits on remote", total_commits, 0),
        num("timeouts", fleet.timeouts.load(Ordering::Relaxed) as f64, 0),
        verdict(
            "exactly once",
            exactly_once,
            format!(
                "{done_in_state}/{} done in state, {never_done} never completed, \
                 {twice_done} completed twice, {twice_claimed} claimed by two agents",
                o.todos
            ),
        ),
        num("converge: 2 sync rounds s", converge_wall, 1),
        row(
            "lease refs: remote, most in a clone",
            format!(
                "{}, {} after converging; {}, {} at the end",
                leases_converged.0, leases_converged.1, leases_left.0, leases_left.1
            ),
            Some(leases_left.0 as f64),
        ),
        row(
            "fresh clone's first sync s",
            format!(
                "{fresh_before:.3} before the drain, {fresh_after:.3} after ({:.2}x)",
                fresh_after / fresh_before
            ),
            Some(fresh_after),
        ),
        row(
            "converge: failures, rejected",
            format!(
                "{}, {converge_rejected} rejected pushes",
                tally(&converge_failures)
            ),
            None,
        ),
        verdict(
            "converged (same tree)",
            converged && trees.contains(&remote_tree),
            format!(
                "{} trees, {} commits over {} clones + remote; remote {} tree {}",
                trees.len(),
                commits.len(),
                fleet.clones.len(),
                short(&remote_commit),
                short(&remote_tree)
            ),
        ),
    ]
}

/// `--mode merge` (see the top of this file).
/// Timed syncs per number of heads in `--mode merge` (their median counts).
const MERGE_REPS: usize = 7;

fn merge_bench(o: &Opts, bin: &Path, real_git: &Path) -> Vec<Row> {
    let peers = o.clones.saturating_sub(1).max(3);
    let fleet = Fleet::new(bin, real_git, o, peers + 1, o.todos.max(peers));
    for p in 1..=peers {
        let dir = &fleet.clones[p];
        let agent = format!("peer-{p}");
        let ran = fleet.loopx(
            dir,
            Some(&agent),
            &[
                "todo",
                "update",
                &fleet.todos[p - 1],
                "--note",
                "merge bench",
            ],
        );
        assert!(ran.ok(), "todo update: {} {}", ran.failure(), ran.json);
        let dst = format!("loopx-state:refs/loopx/peers/merge-bench-{p:03}");
        fleet.git(dir, &["push", "-q", "origin", &dst]);
    }
    let top = fleet.root.path().to_owned();
    let mut ks = vec![0, 1];
    while ks[ks.len() - 1] * 2 < peers {
        ks.push(ks[ks.len() - 1] * 2);
    }
    ks.push(peers);
    // The numbers of heads take turns, sample by sample, so that whatever
    // else the machine does meanwhile falls on all of them alike; each
    // timed sync waits for the previous one's background git to end.
    let mut samples: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for rep in 0..MERGE_REPS {
        for &k in &ks {
            let remote = top.join(format!("merge-remote-{k}-{rep}.git"));
            let clone = top.join(format!("merge-clone-{k}-{rep}"));
            for (from, to) in [(&fleet.remote, &remote), (&fleet.clones[0], &clone)] {
                let copied = Command::new("cp").arg("-a").arg(from).arg(to).status();
                assert!(
                    copied.is_ok_and(|s| s.success()),
                    "cp -a {}",
                    from.display()
                );
            }
            let git_dir = format!("--git-dir={}", remote.display());
            for p in k + 1..=peers {
                let name = format!("refs/loopx/peers/merge-bench-{p:03}");
                fleet.git(&top, &[&git_dir, "update-ref", "-d", &name]);
            }
            let url = remote.to_string_lossy().into_owned();
            fleet.git(&clone, &["remote", "set-url", "origin", &url]);
            fleet.git(
                &clone,
                &[
                    "fetch",
                    "-q",
                    "origin",
                    "+refs/heads/loopx-state:refs/remotes/origin/loopx-state",
                    "+refs/loopx/peers/*:refs/loopx/remotes/origin/peers/*",
                    "+refs/loopx/leases/*:refs/loopx/remotes/origin/leases/*",
                ],
            );
            settle();
            let started = Instant::now();
            let ran = fleet.loopx(&clone, None, &["sync"]);
            let took = started.elapsed().as_secs_f64() * 1000.0;
            assert!(ran.ok(), "sync: {} {}", ran.failure(), ran.json);
            samples.entry(k).or_default().push(took);
        }
    }
    let mut rows = Vec::new();
    let mut times = BTreeMap::new();
    for (k, mut samples) in samples {
        samples.sort_by(f64::total_cmp);
        let median = samples[MERGE_REPS / 2];
        times.insert(k, median);
        rows.push(row(
            &format!("sync merging {k} peer heads"),
            format!("{median:.1} ms"),
            Some(median),
        ));
    }
    // The slope of the least-squares line through the medians from two
    // heads on (the first head's merge reads the base and pays for what
    // every merge shares).
    let points: Vec<(f64, f64)> = times
        .iter()
        .filter(|(k, _)| **k >= 2)
        .map(|(k, t)| (*k as f64, *t))
        .collect();
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let per_peer = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
        / points
            .iter()
            .map(|p| (p.0 - mx).powi(2))
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
    rows.push(row(
        "merge cost per extra peer head",
        format!("{per_peer:.2} ms ({} todos)", o.todos.max(peers)),
        Some(per_peer),
    ));
    rows
}

fn bench(o: &Opts, bin: &Path, real_git: &Path) -> Vec<Row> {
    if o.mode == Mode::Merge {
        return merge_bench(o, bin, real_git);
    }
    let mut rows = Vec::new();
    if o.mode != Mode::Drain {
        rows.extend(claims_bench(o, bin, real_git));
    }
    if o.mode != Mode::Claims {
        rows.extend(drain_bench(o, bin, real_git));
    }
    rows
}

fn print_one(rows: &[Row]) {
    let width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    for r in rows {
        println!("  {:<width$}  {}", r.name, r.text);
    }
}

fn print_two(a: &[Row], b: &[Row]) {
    let width = a.iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
    let col = a
        .iter()
        .chain(b)
        .map(|r| r.text.chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    println!("  {:<width$}  {:<col$}  {:<col$}  B/A", "", "A", "B");
    for (ra, rb) in a.iter().zip(b) {
        let ratio = match (ra.value, rb.value) {
            (Some(x), Some(y)) if x != 0.0 => format!("{:.2}", y / x),
            _ => String::new(),
        };
        println!(
            "  {:<width$}  {:<col$}  {:<col$}  {ratio}",
            ra.name, ra.text, rb.text
        );
    }
}

fn main() {
    let o = opts();
    let bin = o.bin.clone().unwrap_or_else(|| binary::git_loopx("fleet"));
    let real_git = real_git();
    let sync = if o.sync_after_done {
        ""
    } else {
        ", no sync after done"
    };
    println!(
        "fleet: {} clones × {} agents, {} todos, {} ms latency{sync}, seed {}",
        o.clones, o.agents, o.todos, o.latency_ms, o.seed
    );
    println!("  A = {}", bin.display());
    let a = bench(&o, &bin, &real_git);
    match &o.compare {
        None => print_one(&a),
        Some(other) => {
            println!("  B = {}", other.display());
            let b = bench(&o, other, &real_git);
            print_two(&a, &b);
        }
    }
    // Speed is for people to judge; a broken guarantee of the binary
    // measured is an error (CI runs this at a small size).
    let broken: Vec<&str> = a
        .iter()
        .filter(|r| ["exactly once", "converged (same tree)"].contains(&r.name.as_str()))
        .filter(|r| r.text.starts_with("FAIL"))
        .map(|r| r.name.as_str())
        .collect();
    if !broken.is_empty() {
        eprintln!("fleet: {} failed", broken.join(" and "));
        std::process::exit(1);
    }
}
