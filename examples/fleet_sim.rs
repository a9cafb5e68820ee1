//! A fleet of machines claiming todos through one remote, simulated:
//! `cargo run --release --example fleet_sim -- [options]` (`--help` lists them).
//!
//! A deterministic discrete-event simulation (one seeded splitmix64, events
//! ordered by time then by creation) of `--machines` clones, each with
//! `--agents` agents, draining `--todos` ready todos through one remote, under
//! two protocols:
//!
//! - `single`, the single-branch protocol (`loopx.shareRefs false`): one ref
//!   `loopx-state`. A claim is `todo next --claim --sync`: a sync (fetch,
//!   fast-forward or merge, push the merged tip with a CAS on the fetched
//!   tip, up to 12 rounds with the code's jittered backoff) then the claim
//!   commit on the synced tip, pushed with a CAS; a refused claim push starts
//!   a new round at once (as `ops::lease::claim_synced`), and after 12 the
//!   agent gives up and tries again after a pause. After the work: `todo
//!   done` (a local commit) and `sync`.
//! - `leases`, as built (`replicate::shared`, `ops::lease::claim_shared`):
//!   `loopx-state`, one `peers/<machine>` ref written only by that machine,
//!   one `leases/<todo>` ref per claimed todo. A claim (`todo next --claim
//!   --sync`) fetches the goal's lease refs only (protocol v2's ref-prefix:
//!   the advertisement lists lease refs alone, no peer head is fetched and
//!   nothing is merged), decides on the clone's local branch with those
//!   leases laid over it, picking by rendezvous hashing among the first W
//!   ready todos (W = the machines the clone saw at its last full fetch),
//!   then pushes the todo's lease ref alone, created with a CAS on "absent"
//!   (one small root commit), and records the claim as a local commit. A lost
//!   lease refetches the lease refs and picks again, at once, with no backoff
//!   and no give-up. Only when nothing is ready on that view does a claim
//!   fetch everything and merge first (here: once, at the very end). `todo
//!   done` is a local commit; the `sync` after it fetches everything
//!   (`loopx-state`, every peer ref, every lease ref), merges the new peer
//!   heads into one merge commit, and pushes in one non-atomic push the
//!   clone's peer ref, a `done` update of each lease whose end the merged
//!   state knows (CAS on the fetched value) and, when an advance is due,
//!   `loopx-state` (CAS on the fetched value). An advance is due at every
//!   sync up to `--advance-always-up-to` peers (8), past that only once the
//!   remote's `loopx-state` commit is `--advance-spacing-ms` (100) × peers
//!   old. A refused advance is tried once more (a new fetch, merge and push
//!   after a full-jitter wait below 40 ms) up to 8 peers, never past that.
//!   By default every machine has synced once before the run (its peer ref
//!   exists and it knows every peer); `--cold-start` starts with none.
//! - `single-fair` (`--design all` shows it): `single` with full-jitter
//!   exponential backoff, `rand(0 .. min(2 s, 10 ms × 2^round))`, on every
//!   refused push, and no give-up.
//!
//! The remote serialises updates per ref: each takes `--push-ms` of service,
//! updates of one ref queue first-come first-served, different refs proceed
//! in parallel, and a CAS is decided at service time (an update refused there
//! costs its service time too). A push whose expected value the remote's
//! advertisement already contradicts is refused before anything is queued, as
//! git's `--force-with-lease` does on the client (`--no-stale-check` queues
//! it anyway; `--one-queue` serialises every ref of the repository on one
//! queue, as some hosted forges do).
//! Every fetch or push costs one `--rtt-ms` round trip plus `--ref-ms` per
//! ref advertised (a push advertises every ref: receive-pack has no
//! protocol-v2 filter). On a machine, a merge costs `--merge-ms` (plus
//! `--merge-head-ms` for each peer head past the first), a local commit 2 ms,
//! and every fetch-to-last-push sequence holds the clone's sync lock
//! (`.git/loopx/sync.lock`), backoff waits included, as the code does.
//!
//! Limits: updates of one ref wait in line however long unless
//! `--lock-timeout-ms` is given (git's own ref lock gives up after
//! `core.filesRefLockTimeout`, 100 ms), a push is one round trip (git's is
//! nearer two), todos have no dependencies, priorities are their order, work
//! takes exactly `--work-ms`, nothing fails or expires, the network has no
//! bandwidth limit and no variance, the remote has no CPU limit beyond the
//! per-ref queues, pack sizes and history length cost nothing, and lease refs
//! are never pruned unless `--lease-grace-s` says when. Of the built lease protocol the model leaves out: lease
//! expiry, renewal and release (every lease ends `done`), `todo claim ID`
//! (one lease ref fetched) since agents only take `todo next`, failed fetches
//! and their retries, a peer ref moved by another clone, fast-forwards (any
//! new peer head costs a merge commit), the leak check, and what a clone
//! learns second-hand (it knows a peer's `done` from that peer's own head
//! only); the age of `loopx-state` is measured from the start of the command
//! that advanced it, as its commit time is. The figures compare protocols;
//! they do not predict a particular server.
//!
//! Checks: no todo granted to two agents, every todo worked on once and its
//! `done` on the remote; the verdict is printed and a violation exits 1.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo run --release --example fleet_sim -- [options]

  --machines N        clones (default 100)
  --agents N          agents per clone (default 10)
  --todos N           ready todos to drain (default 5000)
  --rtt-ms MS         round trip of one fetch or push (default 40)
  --push-ms MS        service time of one ref update on the remote (default 15)
  --ref-ms MS         cost of each ref a fetch or push advertises (default 0.01)
  --merge-ms MS       a merge commit on a clone (default 5)
  --merge-head-ms MS  each peer head merged past the first (default 0.5)
  --work-ms MS        the work between claim and done (default 1000)
  --advance-always-up-to N  leases: every sync advances loopx-state up to
                      this many peers (default 8)
  --advance-spacing-ms MS  leases: past that, a sync advances it only when
                      its commit is this × peers old (default 100)
  --lease-grace-s S   leases: a done lease's ref is deleted S seconds after its
                      end lands (as `loopx.leaseRefGrace`; default: never), so
                      it is no longer advertised; the deletion's own push is
                      not modelled (it rides on a sync's push)
  --cold-start        leases: no machine has synced before the run (no peer
                      refs; a claim's window is 1 until the clone's first sync)
  --seed N            seed of the random choices (default 1)
  --design D          single, single-fair, leases, both (single and leases)
                      or all (default both)
  --no-stale-check    queue every push, even one the advertisement shows is
                      stale (git refuses those before sending anything)
  --lock-timeout-ms MS  a push waiting longer than this for a ref's lock is
                      refused without service (git: core.filesRefLockTimeout,
                      100 ms); default: updates wait in line however long
  --one-queue         the remote serialises all ref updates of the repository
                      on one queue (as some hosted forges do), not per ref
  --sweep             the leases design at 1, 10, 50, 100, 200, 500 clones";

/// A local commit (claim or done) on a clone.
const LOCAL_COMMIT_US: u64 = 2_000;
/// `replicate::MAX_ROUNDS`: rounds of a sync, and of a claim, before giving up.
const MAX_ROUNDS: u32 = 12;
/// How long an agent that gave up on a claim waits before its next attempt.
const GIVE_UP_PAUSE_US: u64 = 1_000_000;
/// Agents start at a random moment in the first this-many microseconds.
const START_SPREAD_US: u64 = 100_000;
/// `store::transaction::Jitter::backoff`: `cap/2 + rand % cap`,
/// `cap = min(500 µs << min(attempt, 6), 40 ms)`; a sync's round r waits
/// `backoff(r + 2)`.
const BACKOFF_BASE_US: u64 = 500;
const BACKOFF_MAX_SHIFT: u32 = 6;
const BACKOFF_CAP_US: u64 = 40_000;
const SYNC_BACKOFF_OFFSET: u32 = 2;
/// single-fair's full-jitter backoff: `rand(0 .. min(cap, base × 2^round))`.
const FAIR_BASE_US: u64 = 10_000;
const FAIR_CAP_US: u64 = 2_000_000;
const FAIR_MAX_SHIFT: u32 = 20;
/// A resource busier than this share of the wall time is saturated.
const SATURATED: f64 = 0.9;
const SWEEP_MACHINES: [usize; 6] = [1, 10, 50, 100, 200, 500];
/// The sweep drains this many todos per agent, as the default run does.
const SWEEP_TODOS_PER_AGENT: usize = 5;
/// Index of `loopx-state` among the refs; peers follow, then leases.
const STATE_REF: usize = 0;
/// A lease ref's values: absent, held, done.
const LEASE_ABSENT: u64 = 0;
const LEASE_HELD: u64 = 1;
const LEASE_DONE: u64 = 2;
/// `replicate::shared::ADVANCE_ROUNDS`: rounds a sync among a few peers
/// tries to advance `loopx-state`, waiting `Jitter::full(round, 20 ms, 1 s)`.
const ADVANCE_ROUNDS: u32 = 2;
const ADVANCE_RETRY_BASE_US: u64 = 20_000;
const ADVANCE_RETRY_CAP_US: u64 = 1_000_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Design {
    Single,
    /// `single` with full-jitter exponential backoff and no give-up.
    SingleFair,
    Leases,
}

impl Design {
    fn name(self) -> &'static str {
        match self {
            Design::Single => "single",
            Design::SingleFair => "single-fair",
            Design::Leases => "leases",
        }
    }

    fn fair(self) -> bool {
        self == Design::SingleFair
    }
}

#[derive(Clone, Debug)]
struct Params {
    machines: usize,
    agents: usize,
    todos: usize,
    rtt_us: u64,
    push_us: u64,
    ref_ns: u64,
    merge_us: u64,
    merge_head_us: u64,
    work_us: u64,
    advance_always_up_to: usize,
    advance_spacing_us: u64,
    cold_start: bool,
    /// Lease refs deleted this long after their `done` lands (`None`:
    /// never, as before lease refs were pruned).
    lease_grace_us: Option<u64>,
    stale_check: bool,
    one_queue: bool,
    /// A push that would wait longer than this for a ref's lock is refused.
    lock_timeout_us: Option<u64>,
    seed: u64,
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The rendezvous score of `(agent, todo)`: each agent ranks todos its own way.
fn score(seed: u64, agent: usize, todo: usize) -> u64 {
    mix(seed ^ mix(agent as u64 + 1) ^ mix(!(todo as u64)))
}

/// What an agent does when its event fires.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Step {
    Claim,
    Sync,
    Fetch,
    FetchRead,
    FetchDone,
    PushArrive,
    PushReply,
    /// leases: the claim, confirmed, is committed on the local branch.
    Confirmed,
    WorkDone,
    DoneCommitted,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Ev {
    Agent(usize, Step),
    /// A ref update becomes visible to fetches.
    Apply(usize, u64),
    /// A done lease's ref is deleted (`--lease-grace-s` after its end).
    Prune,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Op {
    #[default]
    Claim,
    Sync,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Push {
    /// single: the merged local tip, CAS on `loopx-state`.
    #[default]
    SyncState,
    /// single: the claim commit, CAS on `loopx-state`.
    ClaimState,
    /// leases: the todo's lease ref alone, CAS on "absent".
    ClaimLease,
    /// leases: the peer ref, the lease ends the merged state knows (CAS on
    /// "held"), and `loopx-state` when an advance is due; not atomic.
    SyncPeer,
}

/// Where a clone's sync-lock time goes.
#[derive(Clone, Copy)]
enum Part {
    RoundTrip,
    Advertise,
    Merge,
    Commit,
    PushQueue,
    Backoff,
}
const PARTS: [&str; 6] = [
    "round trips",
    "ref advertisement",
    "merges",
    "local commits",
    "push queue + service",
    "backoff",
];

#[derive(Default, Clone)]
struct RefQueue {
    free_at: u64,
    busy: u64,
    /// The value once every queued update is applied (CAS decisions).
    tail: u64,
    /// The value fetches see.
    visible: u64,
}

#[derive(Default)]
struct Agent {
    machine: usize,
    op: Op,
    outer: u32,
    inner: u32,
    todo: usize,
    started: Option<u64>,
    push: Push,
    expected: u64,
    pushed_done: usize,
    view_time: u64,
    view_state: u64,
    new_heads: usize,
    /// The commit time of the `loopx-state` the fetch saw (`None`: long ago).
    view_stamp: Option<u64>,
    lease_only: bool,
    /// leases: nothing was ready on the leases alone; fetch everything.
    merge_first: bool,
    lost: Vec<usize>,
    /// When the agent's current command started (its commits' time).
    cmd_start: u64,
    /// leases: peer refs the sync's fetch saw, and the lease ends it knows of
    /// from other machines' heads.
    view_peers: usize,
    foreign_ends: Vec<usize>,
    /// leases: the lease ends the sync's push carries.
    lease_ends: Vec<usize>,
    advance: bool,
    advanced: bool,
    ok: bool,
    new_version: u64,
    /// leases: what the sync's push carries, and the peer-ref version it set.
    push_peer: bool,
    push_state: bool,
    peer_head: u64,
    land_at: u64,
    claims: u32,
    gave_up: u32,
}

#[derive(Default)]
struct Machine {
    holder: Option<usize>,
    waiters: VecDeque<usize>,
    since: u64,
    busy: u64,
    /// The `loopx-state` version the local branch is based on (single).
    base: u64,
    unpushed: bool,
    pending_done: Vec<usize>,
    /// The peer heads merged so far (leases).
    seen: Vec<u64>,
    /// leases: the machines this clone saw at its last full fetch (itself
    /// included): the window `todo next --claim` spreads over.
    window: usize,
    /// leases: the `loopx-state` version the local tip is, if any.
    state_at_tip: Option<u64>,
}

/// Smallest todo index not yet taken, as of each key (version or time).
struct Floor {
    at: Vec<(u64, usize)>,
    next: usize,
}

impl Floor {
    fn advance(&mut self, key: u64, taken: &[u64]) {
        let before = self.next;
        while self.next < taken.len() && taken[self.next] <= key {
            self.next += 1;
        }
        if self.next != before {
            self.at.push((key, self.next));
        }
    }

    fn at(&self, key: u64) -> usize {
        let i = self.at.partition_point(|&(k, _)| k <= key);
        self.at[i - 1].1
    }
}

#[derive(Default)]
struct Report {
    drained: usize,
    wall_us: u64,
    claims: usize,
    pushes: usize,
    rejected: usize,
    advances: usize,
    advance_rejected: usize,
    merges: usize,
    full_fetches: usize,
    lease_fetches: usize,
    merged_first: usize,
    lease_ends: usize,
    lease_ends_rejected: usize,
    per_agent: Vec<u32>,
    latencies: Vec<u64>,
    give_ups: usize,
    agents_gave_up: usize,
    sync_give_ups: usize,
    state_util: f64,
    lease_util: f64,
    lock_util_max: f64,
    lock_util_mean: f64,
    lock_parts: [u64; 6],
    refs_at_end: usize,
    one_queue: bool,
    violations: Vec<String>,
}

struct Sim {
    p: Params,
    design: Design,
    rng: Rng,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    refs: Vec<RefQueue>,
    agents: Vec<Agent>,
    machines: Vec<Machine>,
    /// single: the `loopx-state` version that claimed each todo; leases: when
    /// its lease ref became visible. `u64::MAX`: not yet.
    taken: Vec<u64>,
    floor: Floor,
    leases_visible: usize,
    peers_visible: usize,
    /// When each `loopx-state` version was committed (`None`: long ago).
    state_stamp: Vec<Option<u64>>,
    /// leases: the machine and peer-ref version whose push carried each
    /// todo's `done`, and the todos so carried whose lease may still say held.
    done_in: Vec<Option<(usize, u64)>>,
    unleased_done: Vec<usize>,
    holder: Vec<Option<usize>>,
    done_count: Vec<u32>,
    landed: Vec<bool>,
    r: Report,
}

impl Sim {
    fn new(p: &Params, design: Design) -> Sim {
        let agents = p.machines * p.agents;
        // Warm: every machine synced once before the run, so its peer ref
        // is on the remote and every clone has seen every peer.
        let warm = design == Design::Leases && !p.cold_start;
        let head = u64::from(warm);
        let mut refs = vec![RefQueue::default(); 1 + p.machines + p.todos];
        for q in &mut refs[1..=p.machines] {
            q.tail = head;
            q.visible = head;
        }
        let mut sim = Sim {
            p: p.clone(),
            design,
            seq: 0,
            heap: BinaryHeap::new(),
            refs,
            agents: (0..agents)
                .map(|a| Agent {
                    machine: a / p.agents,
                    ..Agent::default()
                })
                .collect(),
            machines: (0..p.machines)
                .map(|_| Machine {
                    seen: vec![head; p.machines],
                    window: if warm { p.machines } else { 1 },
                    ..Machine::default()
                })
                .collect(),
            taken: vec![u64::MAX; p.todos],
            floor: Floor {
                at: vec![(0, 0)],
                next: 0,
            },
            leases_visible: 0,
            peers_visible: if warm { p.machines } else { 0 },
            state_stamp: vec![None],
            done_in: vec![None; p.todos],
            unleased_done: Vec::new(),
            holder: vec![None; p.todos],
            done_count: vec![0; p.todos],
            landed: vec![false; p.todos],
            r: Report::default(),
            rng: Rng(p.seed),
        };
        for a in 0..agents {
            let t = sim.rng.below(START_SPREAD_US);
            sim.at(t, Ev::Agent(a, Step::Claim));
        }
        sim
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn wake(&mut self, t: u64, a: usize, step: Step) {
        self.at(t, Ev::Agent(a, step));
    }

    /// Time `a` spends holding its clone's lock, by kind.
    fn held(&mut self, part: Part, us: u64) {
        self.r.lock_parts[part as usize] += us;
    }

    fn run(mut self) -> Report {
        let mut now = 0;
        while let Some(Reverse((t, _, ev))) = self.heap.pop() {
            if let Ev::Prune = ev {
                // Deletions left when the work ends do not lengthen the run.
                self.leases_visible -= 1;
                continue;
            }
            now = t;
            match ev {
                Ev::Apply(r, v) => self.apply(t, r, v),
                Ev::Prune => unreachable!("handled above"),
                Ev::Agent(a, step) => self.step(t, a, step),
            }
        }
        self.finish(now)
    }

    fn apply(&mut self, t: u64, r: usize, v: u64) {
        self.refs[r].visible = v;
        let lease_base = 1 + self.p.machines;
        if r >= lease_base {
            if v == LEASE_HELD {
                self.leases_visible += 1;
                self.taken[r - lease_base] = t;
                self.floor.advance(t, &self.taken);
            } else if let (LEASE_DONE, Some(grace)) = (v, self.p.lease_grace_us) {
                self.at(t + grace, Ev::Prune);
            }
        } else if r != STATE_REF && v == 1 {
            self.peers_visible += 1;
        }
    }

    fn step(&mut self, now: u64, a: usize, step: Step) {
        match step {
            Step::Claim => {
                let leases = self.design == Design::Leases;
                let ag = &mut self.agents[a];
                ag.op = Op::Claim;
                ag.outer = 1;
                ag.inner = 1;
                ag.lease_only = leases;
                ag.merge_first = false;
                ag.lost.clear();
                ag.cmd_start = now;
                ag.started.get_or_insert(now);
                self.acquire(now, a);
            }
            Step::Sync => {
                let ag = &mut self.agents[a];
                ag.op = Op::Sync;
                ag.inner = 1;
                ag.lease_only = false;
                ag.cmd_start = now;
                self.acquire(now, a);
            }
            Step::Fetch => {
                let half = self.p.rtt_us / 2;
                self.held(Part::RoundTrip, self.p.rtt_us);
                self.wake(now + half, a, Step::FetchRead);
            }
            Step::FetchRead => self.fetch_read(now, a),
            Step::FetchDone => self.fetch_done(now, a),
            Step::PushArrive => self.serve_push(now, a),
            Step::PushReply => self.push_reply(now, a),
            Step::Confirmed => {
                self.release(now, a);
                self.start_work(now, a);
            }
            Step::WorkDone => {
                let todo = self.agents[a].todo;
                self.done_count[todo] += 1;
                self.wake(now + LOCAL_COMMIT_US, a, Step::DoneCommitted);
            }
            Step::DoneCommitted => {
                let m = &mut self.machines[self.agents[a].machine];
                m.pending_done.push(self.agents[a].todo);
                m.unpushed = true;
                m.state_at_tip = None;
                self.wake(now, a, Step::Sync);
            }
        }
    }

    fn acquire(&mut self, now: u64, a: usize) {
        let m = &mut self.machines[self.agents[a].machine];
        if m.holder.is_none() {
            m.holder = Some(a);
            m.since = now;
            self.wake(now, a, Step::Fetch);
        } else {
            m.waiters.push_back(a);
        }
    }

    fn release(&mut self, now: u64, a: usize) {
        let m = &mut self.machines[self.agents[a].machine];
        debug_assert_eq!(m.holder, Some(a));
        m.busy += now - m.since;
        m.holder = m.waiters.pop_front();
        m.since = now;
        if let Some(next) = m.holder {
            self.wake(now, next, Step::Fetch);
        }
    }

    /// A confirmed claim: the agent works on its todo.
    fn start_work(&mut self, now: u64, a: usize) {
        let ag = &mut self.agents[a];
        ag.claims += 1;
        self.r.claims += 1;
        let started = ag.started.take().unwrap_or(now);
        self.r.latencies.push(now - started);
        self.wake(now + self.p.work_us, a, Step::WorkDone);
    }

    /// Refs a full fetch or a push advertises; `lease_only`: a fetch of the
    /// lease refs alone (protocol v2's ref-prefix).
    fn advertised(&self, lease_only: bool) -> usize {
        match (self.design, lease_only) {
            (Design::Single | Design::SingleFair, _) => 1,
            (Design::Leases, false) => 1 + self.peers_visible + self.leases_visible,
            (Design::Leases, true) => self.leases_visible,
        }
    }

    fn advertise_us(&mut self, lease_only: bool) -> u64 {
        let us = self.advertised(lease_only) as u64 * self.p.ref_ns / 1000;
        self.held(Part::Advertise, us);
        us
    }

    /// At the remote: what the fetch sees.
    fn fetch_read(&mut self, now: u64, a: usize) {
        let lease_only = self.agents[a].lease_only;
        if lease_only {
            self.r.lease_fetches += 1;
        } else {
            self.r.full_fetches += 1;
        }
        let ad = self.advertise_us(lease_only);
        let mut new_heads = 0;
        let mut foreign = Vec::new();
        let me = self.agents[a].machine;
        if self.design == Design::Leases && !lease_only {
            let mut others = 0;
            for peer in 0..self.p.machines {
                let head = self.refs[1 + peer].visible;
                if peer == me {
                    continue;
                }
                others += usize::from(head > 0);
                if head > self.machines[me].seen[peer] {
                    self.machines[me].seen[peer] = head;
                    new_heads += 1;
                }
            }
            self.machines[me].window = others + 1;
            // Dones this clone now knows from a peer's head whose lease
            // still says held: its sync publishes their end too.
            let lease_base = 1 + self.p.machines;
            let refs = &self.refs;
            self.unleased_done
                .retain(|&t| refs[lease_base + t].visible == LEASE_HELD);
            for &t in &self.unleased_done {
                if let Some((owner, version)) = self.done_in[t] {
                    if owner != me && self.machines[me].seen[owner] >= version {
                        foreign.push(t);
                    }
                }
            }
        }
        let state = self.refs[STATE_REF].visible;
        let ag = &mut self.agents[a];
        ag.view_time = now;
        ag.view_state = state;
        ag.view_stamp = self.state_stamp.get(state as usize).copied().flatten();
        ag.view_peers = self.peers_visible;
        ag.new_heads = new_heads;
        ag.foreign_ends = foreign;
        let back = self.p.rtt_us - self.p.rtt_us / 2;
        self.wake(now + back + ad, a, Step::FetchDone);
    }

    fn fetch_done(&mut self, now: u64, a: usize) {
        let me = self.agents[a].machine;
        let mut local = 0;
        match self.design {
            Design::Single | Design::SingleFair => {
                let fetched = self.agents[a].view_state;
                let m = &mut self.machines[me];
                if m.base != fetched {
                    if m.unpushed {
                        self.r.merges += 1;
                        local += self.p.merge_us;
                    }
                    m.base = fetched;
                }
                if m.unpushed {
                    self.held(Part::Merge, local);
                    return self.send_push(now + local, a, Push::SyncState, fetched);
                }
                if self.agents[a].op == Op::Sync {
                    return self.end_sync(now, a);
                }
                self.claim_step(now, a);
            }
            Design::Leases => {
                let heads = self.agents[a].new_heads;
                if !self.agents[a].lease_only && heads > 0 {
                    self.r.merges += 1;
                    local += self.p.merge_us + self.p.merge_head_us * (heads as u64 - 1);
                    let m = &mut self.machines[me];
                    m.unpushed = true;
                    m.state_at_tip = None;
                }
                self.held(Part::Merge, local);
                if self.agents[a].op == Op::Sync {
                    return self.sync_push(now + local, a);
                }
                self.claim_step(now + local, a);
            }
        }
    }

    /// Picks a todo on what `a` knows and pushes its claim, or ends the agent.
    fn claim_step(&mut self, now: u64, a: usize) {
        let pick = match self.design {
            Design::Single | Design::SingleFair => {
                let known = self.machines[self.agents[a].machine].base;
                (self.floor.at(known)..self.p.todos).find(|&t| self.taken[t] > known)
            }
            Design::Leases => self.rendezvous(a),
        };
        let Some(todo) = pick else {
            if self.design == Design::Leases && !self.agents[a].merge_first {
                // Nothing ready on the local branch with the leases laid
                // over it: fetch everything, merge, and decide again.
                let ag = &mut self.agents[a];
                ag.merge_first = true;
                ag.lease_only = false;
                self.r.merged_first += 1;
                return self.wake(now, a, Step::Fetch);
            }
            // Every todo is taken in the state it fetched: nothing left to do.
            return self.release(now, a);
        };
        self.agents[a].todo = todo;
        // single: the claim commit; leases: the lease's root commit.
        self.held(Part::Commit, LOCAL_COMMIT_US);
        let (kind, expected) = match self.design {
            Design::Single | Design::SingleFair => {
                (Push::ClaimState, self.machines[self.agents[a].machine].base)
            }
            Design::Leases => (Push::ClaimLease, LEASE_ABSENT),
        };
        self.send_push(now + LOCAL_COMMIT_US, a, kind, expected);
    }

    /// The best-scoring todo for `a` among the first W ready ones it saw,
    /// W being the machines its clone saw at its last full fetch.
    fn rendezvous(&self, a: usize) -> Option<usize> {
        let ag = &self.agents[a];
        let window = self.machines[ag.machine].window.max(1);
        (self.floor.at(ag.view_time)..self.p.todos)
            .filter(|&t| self.taken[t] > ag.view_time && !ag.lost.contains(&t))
            .take(window)
            .max_by_key(|&t| score(self.p.seed, a, t))
    }

    /// leases: what a sync pushes after its merge, if anything.
    fn sync_push(&mut self, now: u64, a: usize) {
        let me = self.agents[a].machine;
        let Agent {
            view_state,
            view_stamp,
            view_peers,
            cmd_start,
            ..
        } = self.agents[a];
        let due = view_peers <= self.p.advance_always_up_to
            || view_stamp.is_none_or(|t| {
                cmd_start.saturating_sub(t) >= self.p.advance_spacing_us * view_peers as u64
            });
        let m = &self.machines[me];
        let lease_base = 1 + self.p.machines;
        let mut ends: Vec<usize> = m
            .pending_done
            .iter()
            .copied()
            .filter(|&t| self.refs[lease_base + t].visible == LEASE_HELD)
            .collect();
        for &t in &self.agents[a].foreign_ends {
            if !ends.contains(&t) {
                ends.push(t);
            }
        }
        let push_state = due && m.state_at_tip != Some(view_state);
        let push_peer = m.unpushed;
        if !push_peer && !push_state && ends.is_empty() {
            return self.end_sync(now, a);
        }
        let ag = &mut self.agents[a];
        ag.advance = due;
        ag.push_state = push_state;
        ag.push_peer = push_peer;
        ag.lease_ends = ends;
        self.send_push(now, a, Push::SyncPeer, view_state);
    }

    fn send_push(&mut self, now: u64, a: usize, kind: Push, expected: u64) {
        // receive-pack advertises every ref: no protocol-v2 filter for a push.
        let ad = self.advertise_us(false);
        let m = self.agents[a].machine;
        let ag = &mut self.agents[a];
        ag.push = kind;
        ag.expected = expected;
        ag.pushed_done = self.machines[m].pending_done.len();
        self.r.pushes += 1;
        self.held(Part::RoundTrip, self.p.rtt_us);
        self.wake(now + self.p.rtt_us / 2 + ad, a, Step::PushArrive);
    }

    /// The queue that serialises updates of ref `r`.
    fn queue(&self, r: usize) -> usize {
        if self.p.one_queue {
            STATE_REF
        } else {
            r
        }
    }

    /// Queues one update of ref `r` from `now`; returns when its service ends.
    fn serve(&mut self, now: u64, r: usize, ok: bool, value: u64) -> u64 {
        let qi = self.queue(r);
        let q = &mut self.refs[qi];
        let finish = now.max(q.free_at) + self.p.push_us;
        q.free_at = finish;
        q.busy += self.p.push_us;
        self.update(finish, r, ok, value);
        finish
    }

    fn update(&mut self, at: u64, r: usize, ok: bool, value: u64) {
        if ok {
            self.refs[r].tail = value;
            self.at(at, Ev::Apply(r, value));
        }
    }

    /// git's `--force-with-lease` check on the advertisement: a ref already
    /// past the expected value is refused before anything is queued.
    fn stale(&self, r: usize, expected: u64) -> bool {
        self.p.stale_check && self.refs[r].visible != expected
    }

    /// Whether a push arriving `now` gives up waiting for ref `r`'s lock.
    fn lock_timed_out(&self, now: u64, r: usize) -> bool {
        self.p
            .lock_timeout_us
            .is_some_and(|limit| self.refs[self.queue(r)].free_at > now + limit)
    }

    /// One compare-and-swap of ref `r` from `expected` to `value`: whether it
    /// took, and when the pusher hears so.
    fn cas(&mut self, now: u64, r: usize, expected: u64, value: u64) -> (bool, u64) {
        if self.stale(r, expected) {
            return (false, now);
        }
        if self.lock_timed_out(now, r) {
            return (false, now + self.p.lock_timeout_us.unwrap_or(0));
        }
        let ok = self.refs[r].tail == expected;
        (ok, self.serve(now, r, ok, value))
    }

    fn serve_push(&mut self, now: u64, a: usize) {
        let Agent {
            push,
            expected,
            todo,
            machine,
            ..
        } = self.agents[a];
        let peer = 1 + machine;
        let lease_base = 1 + self.p.machines;
        let (ok, done_at) = match push {
            Push::SyncState | Push::ClaimState => {
                let v = self.refs[STATE_REF].tail + 1;
                let (ok, finish) = self.cas(now, STATE_REF, expected, v);
                if ok {
                    self.agents[a].new_version = v;
                    if push == Push::ClaimState {
                        self.grant(a, todo);
                        self.taken[todo] = v;
                        self.floor.advance(v, &self.taken);
                    }
                }
                (ok, finish)
            }
            Push::ClaimLease => {
                let (ok, finish) = self.cas(now, lease_base + todo, LEASE_ABSENT, LEASE_HELD);
                if ok {
                    self.grant(a, todo);
                }
                (ok, finish)
            }
            Push::SyncPeer => {
                // Not atomic: each ref is updated, or refused, on its own.
                let mut done_at = now;
                let ends = std::mem::take(&mut self.agents[a].lease_ends);
                for &t in &ends {
                    self.r.lease_ends += 1;
                    let (ok, finish) = self.cas(now, lease_base + t, LEASE_HELD, LEASE_DONE);
                    if !ok {
                        self.r.lease_ends_rejected += 1;
                    }
                    done_at = done_at.max(finish);
                }
                let mut peer_ok = true;
                if self.agents[a].push_peer {
                    if self.lock_timed_out(now, peer) {
                        peer_ok = false;
                        done_at = done_at.max(now + self.p.lock_timeout_us.unwrap_or(0));
                    } else {
                        let head = self.refs[peer].tail + 1;
                        self.agents[a].peer_head = head;
                        done_at = done_at.max(self.serve(now, peer, true, head));
                    }
                }
                let mut advanced = !self.agents[a].push_state;
                if self.agents[a].push_state {
                    self.r.advances += 1;
                    let v = self.refs[STATE_REF].tail + 1;
                    let (ok, finish) = self.cas(now, STATE_REF, expected, v);
                    if ok {
                        debug_assert_eq!(self.state_stamp.len() as u64, v);
                        self.state_stamp.push(Some(self.agents[a].cmd_start));
                        self.agents[a].new_version = v;
                    } else {
                        self.r.advance_rejected += 1;
                    }
                    advanced = ok;
                    done_at = done_at.max(finish);
                }
                self.agents[a].advanced = advanced;
                (peer_ok, done_at)
            }
        };
        self.reply(now, a, ok, done_at);
    }

    fn reply(&mut self, now: u64, a: usize, ok: bool, done_at: u64) {
        if !ok {
            self.r.rejected += 1;
        }
        let ag = &mut self.agents[a];
        ag.ok = ok;
        ag.land_at = done_at;
        self.held(Part::PushQueue, done_at - now);
        let back = self.p.rtt_us - self.p.rtt_us / 2;
        self.wake(done_at + back, a, Step::PushReply);
    }

    fn grant(&mut self, a: usize, todo: usize) {
        if let Some(other) = self.holder[todo] {
            self.r.violations.push(format!(
                "todo {todo} granted to agent {other} and agent {a}"
            ));
        }
        self.holder[todo] = Some(a);
    }

    /// The done commits the push carried are on the remote.
    fn landed(&mut self, a: usize) {
        let Agent {
            machine,
            pushed_done,
            land_at,
            peer_head,
            ..
        } = self.agents[a];
        let leases = self.design == Design::Leases;
        let lease_base = 1 + self.p.machines;
        let m = &mut self.machines[machine];
        for todo in m.pending_done.drain(..pushed_done) {
            if std::mem::replace(&mut self.landed[todo], true) {
                self.r.violations.push(format!("todo {todo} done twice"));
            }
            self.r.drained += 1;
            self.r.wall_us = self.r.wall_us.max(land_at);
            if leases {
                self.done_in[todo] = Some((machine, peer_head));
                if self.refs[lease_base + todo].tail != LEASE_DONE {
                    self.unleased_done.push(todo);
                }
            }
        }
        m.unpushed = !m.pending_done.is_empty();
    }

    fn push_reply(&mut self, now: u64, a: usize) {
        let ag = &self.agents[a];
        let (ok, push, machine) = (ag.ok, ag.push, ag.machine);
        match (push, ok) {
            (Push::SyncState, true) => {
                self.machines[machine].base = self.agents[a].new_version;
                self.landed(a);
                match self.agents[a].op {
                    Op::Sync => self.end_sync(now, a),
                    Op::Claim => self.claim_step(now, a),
                }
            }
            (Push::SyncState, false) => {
                let ag = &mut self.agents[a];
                let round = ag.inner;
                ag.inner += 1;
                if self.design.fair() {
                    return self.retry_fair(now, a, round);
                }
                if round >= MAX_ROUNDS {
                    self.r.sync_give_ups += 1;
                    return match self.agents[a].op {
                        Op::Sync => self.end_sync(now, a),
                        Op::Claim => self.give_up(now, a),
                    };
                }
                let wait = backoff(&mut self.rng, round + SYNC_BACKOFF_OFFSET);
                self.held(Part::Backoff, wait);
                self.wake(now + wait, a, Step::Fetch);
            }
            (Push::ClaimState, true) => {
                self.machines[machine].base = self.agents[a].new_version;
                self.landed(a);
                self.release(now, a);
                self.start_work(now, a);
            }
            (Push::ClaimLease, true) => {
                // Confirmed: now the local branch records the claim.
                let m = &mut self.machines[machine];
                m.unpushed = true;
                m.state_at_tip = None;
                self.held(Part::Commit, LOCAL_COMMIT_US);
                self.wake(now + LOCAL_COMMIT_US, a, Step::Confirmed);
            }
            (Push::ClaimState, false) => {
                let ag = &mut self.agents[a];
                ag.outer += 1;
                ag.inner = 1;
                if self.design.fair() {
                    let round = ag.outer - 1;
                    return self.retry_fair(now, a, round);
                }
                if ag.outer > MAX_ROUNDS {
                    return self.give_up(now, a);
                }
                self.wake(now, a, Step::Fetch);
            }
            (Push::ClaimLease, false) => {
                // Lost the lease: fetch the leases again and pick another.
                let ag = &mut self.agents[a];
                ag.lost.push(ag.todo);
                ag.lease_only = !ag.merge_first;
                self.wake(now, a, Step::Fetch);
            }
            (Push::SyncPeer, peer_ok) => self.synced(now, a, peer_ok),
        }
    }

    /// leases: a sync's push answered; another round, or the end.
    fn synced(&mut self, now: u64, a: usize, peer_ok: bool) {
        let Agent {
            machine,
            push_peer,
            push_state,
            advance,
            advanced,
            new_version,
            view_peers,
            inner,
            ..
        } = self.agents[a];
        if peer_ok && push_peer {
            self.landed(a);
        }
        let m = &mut self.machines[machine];
        if push_state && advanced && !m.unpushed {
            m.state_at_tip = Some(new_version);
        }
        if !peer_ok && inner < MAX_ROUNDS {
            // The peer ref was refused (its lock timed out): a new round.
            self.agents[a].inner += 1;
            return self.wake(now, a, Step::Fetch);
        }
        if advance
            && !advanced
            && view_peers <= self.p.advance_always_up_to
            && inner < ADVANCE_ROUNDS
        {
            // `Jitter::full(round, 20 ms, 1 s)`, then fetch, merge, push again.
            self.agents[a].inner += 1;
            let ceiling = (ADVANCE_RETRY_BASE_US << inner).min(ADVANCE_RETRY_CAP_US);
            let wait = self.rng.below(ceiling);
            self.held(Part::Backoff, wait);
            return self.wake(now + wait, a, Step::Fetch);
        }
        self.end_sync(now, a);
    }

    /// single-fair: `rand(0 .. min(cap, base × 2^round))`, never giving up.
    fn retry_fair(&mut self, now: u64, a: usize, round: u32) {
        let ceiling = (FAIR_BASE_US << round.min(FAIR_MAX_SHIFT)).min(FAIR_CAP_US);
        let wait = self.rng.below(ceiling);
        self.held(Part::Backoff, wait);
        self.wake(now + wait, a, Step::Fetch);
    }

    fn end_sync(&mut self, now: u64, a: usize) {
        self.release(now, a);
        self.wake(now, a, Step::Claim);
    }

    fn give_up(&mut self, now: u64, a: usize) {
        self.r.give_ups += 1;
        self.agents[a].gave_up += 1;
        self.release(now, a);
        self.wake(now + GIVE_UP_PAUSE_US, a, Step::Claim);
    }

    fn finish(mut self, now: u64) -> Report {
        let mut r = std::mem::take(&mut self.r);
        if r.drained < self.p.todos {
            r.wall_us = now;
            r.violations.push(format!(
                "{} of {} todos done on the remote",
                r.drained, self.p.todos
            ));
        }
        for (todo, &n) in self.done_count.iter().enumerate() {
            if n != 1 {
                r.violations
                    .push(format!("todo {todo} worked on {n} times"));
            }
        }
        // Utilisation over the whole run, the last syncs after the last landing included.
        let wall = now.max(1) as f64;
        let lease_base = 1 + self.p.machines;
        r.state_util = self.refs[STATE_REF].busy as f64 / wall;
        r.lease_util = self.refs[lease_base..]
            .iter()
            .map(|q| q.busy)
            .max()
            .unwrap_or(0) as f64
            / wall;
        let locks: Vec<f64> = self.machines.iter().map(|m| m.busy as f64 / wall).collect();
        r.lock_util_max = locks.iter().copied().fold(0.0, f64::max);
        r.lock_util_mean = locks.iter().sum::<f64>() / locks.len().max(1) as f64;
        r.per_agent = self.agents.iter().map(|a| a.claims).collect();
        r.agents_gave_up = self.agents.iter().filter(|a| a.gave_up > 0).count();
        r.refs_at_end = self.advertised(false);
        r.one_queue = self.p.one_queue;
        r.latencies.sort_unstable();
        r
    }
}

/// `store::transaction::Jitter::backoff(attempt)`, in microseconds.
fn backoff(rng: &mut Rng, attempt: u32) -> u64 {
    let cap = (BACKOFF_BASE_US << attempt.min(BACKOFF_MAX_SHIFT)).min(BACKOFF_CAP_US);
    cap / 2 + rng.below(cap)
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

type Figure = fn(&Report, &Params) -> f64;
type Format = fn(f64) -> String;

/// The table: label, figure, format, and whether a ratio means something.
#[rustfmt::skip]
const ROWS: &[(&str, Figure, Format, bool)] = &[
    ("todos drained", |r, _| r.drained as f64, int, false),
    ("simulated wall time (s)", |r, _| secs(r), one, true),
    ("todos/s", |r, _| r.drained as f64 / secs(r), one, true),
    ("claims/s", |r, _| r.claims as f64 / secs(r), one, true),
    ("pushes attempted", |r, _| r.pushes as f64, int, true),
    ("pushes rejected", |r, _| r.rejected as f64, int, true),
    ("  % rejected", |r, _| r.rejected as f64 / r.pushes.max(1) as f64, pct, false),
    ("fetches: everything", |r, _| r.full_fetches as f64, int, true),
    ("fetches: lease refs only", |r, _| r.lease_fetches as f64, int, false),
    ("claims that merged first", |r, _| r.merged_first as f64, int, false),
    ("lease ends pushed", |r, _| r.lease_ends as f64, int, false),
    ("lease ends rejected", |r, _| r.lease_ends_rejected as f64, int, false),
    ("loopx-state advances tried", |r, _| r.advances as f64, int, false),
    ("loopx-state advance rejected", |r, _| r.advance_rejected as f64, int, false),
    ("merge commits per todo", |r, _| r.merges as f64 / r.drained.max(1) as f64, two, true),
    ("claims per agent: min", |r, _| claims(r, 0.0), int, false),
    ("claims per agent: median", |r, _| claims(r, 0.5), int, false),
    ("claims per agent: max", |r, _| claims(r, 1.0), int, false),
    ("fairness (min / fair share)", |r, p| claims(r, 0.0) / fair_share(p), two, false),
    ("claim latency p50 (ms)", |r, _| ms(percentile(&r.latencies, 0.5)), int, true),
    ("claim latency p95 (ms)", |r, _| ms(percentile(&r.latencies, 0.95)), int, true),
    ("claim latency max (ms)", |r, _| ms(percentile(&r.latencies, 1.0)), int, true),
    ("claims given up", |r, _| r.give_ups as f64, int, false),
    ("agents that gave up", |r, _| r.agents_gave_up as f64, int, false),
    ("syncs given up", |r, _| r.sync_give_ups as f64, int, false),
    ("refs advertised at the end", |r, _| r.refs_at_end as f64, int, false),
    ("loopx-state queue busy", |r, _| r.state_util, pct, false),
    ("busiest lease ref busy", |r, _| r.lease_util, pct, false),
    ("busiest clone lock held", |r, _| r.lock_util_max, pct, false),
    ("mean clone lock held", |r, _| r.lock_util_mean, pct, false),
];

fn secs(r: &Report) -> f64 {
    r.wall_us as f64 / 1e6
}

fn ms(us: u64) -> f64 {
    us as f64 / 1e3
}

fn fair_share(p: &Params) -> f64 {
    p.todos as f64 / (p.machines * p.agents) as f64
}

/// The `q` quantile of the claims each agent got.
fn claims(r: &Report, q: f64) -> f64 {
    let mut v: Vec<u64> = r.per_agent.iter().map(|&c| u64::from(c)).collect();
    v.sort_unstable();
    percentile(&v, q) as f64
}

fn int(v: f64) -> String {
    format!("{v:.0}")
}

fn one(v: f64) -> String {
    format!("{v:.1}")
}

fn two(v: f64) -> String {
    format!("{v:.2}")
}

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn print_table(p: &Params, designs: &[Design], reports: &[Report]) {
    println!(
        "{} machines × {} agents, {} todos, rtt {} ms, push {} ms, {} ms/ref, merge {} ms (+{} ms/head), work {} ms, seed {}",
        p.machines,
        p.agents,
        p.todos,
        p.rtt_us as f64 / 1e3,
        p.push_us as f64 / 1e3,
        p.ref_ns as f64 / 1e6,
        p.merge_us as f64 / 1e3,
        p.merge_head_us as f64 / 1e3,
        p.work_us as f64 / 1e3,
        p.seed
    );
    println!("remote: {}", remote(p));
    if designs.contains(&Design::Leases) {
        println!("leases: {}", advance_rule(p));
    }
    let names: Vec<&str> = designs.iter().map(|d| d.name()).collect();
    let ratio = designs.len() > 1;
    print!("{:<30}", "");
    for n in &names {
        print!("{n:>12}");
    }
    if ratio {
        print!("{:>16}", format!("{}/{}", names[names.len() - 1], names[0]));
    }
    println!();
    for (label, figure, fmt, has_ratio) in ROWS {
        print!("{label:<30}");
        let values: Vec<f64> = reports.iter().map(|r| figure(r, p)).collect();
        for v in &values {
            print!("{:>12}", fmt(*v));
        }
        if ratio && *has_ratio && values[0] > 0.0 {
            print!("{:>15.2}×", values[values.len() - 1] / values[0]);
        }
        println!();
    }
    for (name, r) in names.iter().zip(reports) {
        println!("{name}: saturates first: {}", bottleneck(r));
    }
}

/// When a lease sync advances `loopx-state`, and how the fleet starts.
fn advance_rule(p: &Params) -> String {
    format!(
        "loopx-state advanced at every sync up to {} peers, past that once its commit is {} ms × peers old; {}",
        p.advance_always_up_to,
        p.advance_spacing_us as f64 / 1e3,
        if p.cold_start {
            "cold start (no machine has synced)"
        } else {
            "every machine synced once before"
        }
    )
}

fn remote(p: &Params) -> String {
    let timeout = match p.lock_timeout_us {
        Some(us) => format!("ref lock timeout {} ms", us as f64 / 1e3),
        None => "no ref lock timeout".to_owned(),
    };
    format!(
        "{}, {}, {timeout}",
        if p.one_queue {
            "one queue for every ref"
        } else {
            "a queue per ref"
        },
        if p.stale_check {
            "stale pushes refused on the advertisement"
        } else {
            "stale pushes queued"
        }
    )
}

/// The resource that runs out first, from the utilisation figures.
fn bottleneck(r: &Report) -> String {
    let total: u64 = r.lock_parts.iter().sum::<u64>().max(1);
    let mut parts: Vec<(u64, &str)> = r.lock_parts.iter().copied().zip(PARTS).collect();
    parts.sort_by_key(|&(us, _)| Reverse(us));
    let lock = parts
        .iter()
        .take(3)
        .map(|(us, name)| format!("{name} {:.0}%", *us as f64 * 100.0 / total as f64))
        .collect::<Vec<_>>()
        .join(", ");
    let lock_line = format!(
        "clone sync lock ({:.0}% held on the busiest clone; its time: {lock})",
        r.lock_util_max * 100.0
    );
    if r.state_util >= SATURATED {
        let queue = if r.one_queue {
            "repository's"
        } else {
            "loopx-state ref's"
        };
        format!(
            "the {queue} push queue ({:.0}% busy); then {lock_line}",
            r.state_util * 100.0
        )
    } else if r.lease_util >= SATURATED {
        format!(
            "one lease ref's push queue ({:.0}% busy)",
            r.lease_util * 100.0
        )
    } else if r.lock_util_max >= SATURATED {
        format!(
            "{lock_line}; loopx-state queue {:.0}% busy",
            r.state_util * 100.0
        )
    } else {
        format!(
            "nothing: the agents' work is the limit (loopx-state queue {:.0}%, {lock_line})",
            r.state_util * 100.0
        )
    }
}

fn sweep(base: &Params) -> bool {
    println!(
        "leases design, {} agents per machine, {SWEEP_TODOS_PER_AGENT} todos per agent",
        base.agents,
    );
    println!("remote: {}", remote(base));
    println!("leases: {}", advance_rule(base));
    println!(
        "{:>8} {:>7} {:>7} {:>9} {:>9} {:>10} {:>8} {:>8} {:>8}  saturates first",
        "machines", "agents", "todos", "wall s", "todos/s", "p95 ms", "refs", "state q", "lock"
    );
    let mut ok = true;
    for machines in SWEEP_MACHINES {
        let p = Params {
            machines,
            todos: SWEEP_TODOS_PER_AGENT * machines * base.agents,
            ..base.clone()
        };
        let r = Sim::new(&p, Design::Leases).run();
        ok &= r.violations.is_empty();
        let secs = r.wall_us as f64 / 1e6;
        println!(
            "{:>8} {:>7} {:>7} {:>9.1} {:>9.1} {:>10.0} {:>8} {:>7.0}% {:>7.0}%  {}",
            machines,
            machines * p.agents,
            p.todos,
            secs,
            r.drained as f64 / secs,
            percentile(&r.latencies, 0.95) as f64 / 1e3,
            r.refs_at_end,
            r.state_util * 100.0,
            r.lock_util_max * 100.0,
            bottleneck(&r)
        );
    }
    ok
}

fn verdict(name: &str, r: &Report) -> bool {
    if r.violations.is_empty() {
        println!(
            "{name}: exactly-once: ok ({} todos granted once, worked on once, done on the remote)",
            r.drained
        );
        return true;
    }
    println!(
        "{name}: exactly-once: VIOLATED ({} problems)",
        r.violations.len()
    );
    for v in r.violations.iter().take(10) {
        println!("  {v}");
    }
    false
}

fn parse() -> (Params, Vec<Design>, bool) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut p = Params {
        machines: 100,
        agents: 10,
        todos: 5000,
        rtt_us: 40_000,
        push_us: 15_000,
        ref_ns: 10_000,
        merge_us: 5_000,
        merge_head_us: 500,
        work_us: 1_000_000,
        advance_always_up_to: 8,
        advance_spacing_us: 100_000,
        cold_start: false,
        lease_grace_us: None,
        stale_check: true,
        one_queue: false,
        lock_timeout_us: None,
        seed: 1,
    };
    let mut designs = vec![Design::Single, Design::Leases];
    let mut sweep = false;
    let fail = |msg: String| -> ! {
        eprintln!("fleet_sim: {msg}\n\n{USAGE}");
        std::process::exit(2)
    };
    let mut i = 0;
    while i < args.len() {
        let name = args[i].as_str();
        let value = || args.get(i + 1).cloned().unwrap_or_default();
        let count = || match value().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => fail(format!("{name} needs a positive number")),
        };
        let ms = |scale: f64| match value().parse::<f64>() {
            Ok(v) if v >= 0.0 => (v * scale).round() as u64,
            _ => fail(format!("{name} needs a number of milliseconds")),
        };
        match name {
            "--machines" => p.machines = count(),
            "--agents" => p.agents = count(),
            "--todos" => p.todos = count(),
            "--rtt-ms" => p.rtt_us = ms(1e3),
            "--push-ms" => p.push_us = ms(1e3),
            "--ref-ms" => p.ref_ns = ms(1e6),
            "--merge-ms" => p.merge_us = ms(1e3),
            "--merge-head-ms" => p.merge_head_us = ms(1e3),
            "--work-ms" => p.work_us = ms(1e3),
            "--advance-always-up-to" => {
                p.advance_always_up_to = value()
                    .parse()
                    .unwrap_or_else(|_| fail(format!("{name} needs a number")))
            }
            "--advance-spacing-ms" => p.advance_spacing_us = ms(1e3),
            "--lease-grace-s" => p.lease_grace_us = Some(ms(1e6)),
            "--lock-timeout-ms" => p.lock_timeout_us = Some(ms(1e3)),
            "--seed" => {
                p.seed = value()
                    .parse()
                    .unwrap_or_else(|_| fail(format!("{name} needs a number")))
            }
            "--design" => {
                designs = match value().as_str() {
                    "single" => vec![Design::Single],
                    "single-fair" => vec![Design::SingleFair],
                    "all" => vec![Design::Single, Design::SingleFair, Design::Leases],
                    "leases" => vec![Design::Leases],
                    "both" => vec![Design::Single, Design::Leases],
                    other => fail(format!("--design {other:?} is not one of the designs")),
                }
            }
            "--sweep" | "--no-stale-check" | "--one-queue" | "--cold-start" => {
                match name {
                    "--sweep" => sweep = true,
                    "--no-stale-check" => p.stale_check = false,
                    "--cold-start" => p.cold_start = true,
                    _ => p.one_queue = true,
                }
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
    (p, designs, sweep)
}

fn main() -> ExitCode {
    let (p, designs, sweep_only) = parse();
    let ok = if sweep_only {
        sweep(&p)
    } else {
        let reports: Vec<Report> = designs.iter().map(|&d| Sim::new(&p, d).run()).collect();
        print_table(&p, &designs, &reports);
        let mut ok = true;
        for (d, r) in designs.iter().zip(&reports) {
            ok &= verdict(d.name(), r);
        }
        ok
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
