//! `serve`: the dashboard over HTTP, on loopback, and the person's answers.
//!
//! The routes answer from the same reports as the CLI: `/status.json` is
//! `status --json`, `/diff/<commit>.json` is `diff <commit> --json` (with
//! its text), `/dashboard.json` is [`ops::dashboard`], and `/` is one
//! self-contained page (`page.html`) that draws them. One route writes:
//! `POST /answer`, the person's answer to a gate or a reminder, through
//! the same operations as `gate resolve` and `todo done` (see
//! [`Answering`]). `listen` accepts connections, `wire` speaks HTTP/1.1 on
//! each within fixed bounds, `http` answers.
//!
//! Invariants:
//! - only `GET` and `HEAD`, and `POST /answer`; any other method is 405,
//!   any other path 404;
//! - `POST /answer` is refused (403, nothing written) unless the server
//!   was started by the person (the positive check `gate resolve` makes),
//!   on loopback, without `--read-only`; and then unless it carries the
//!   launch's key (`X-Loopx-Key`) and comes from the server's own origin
//!   (`Origin`), so another page in the person's browser cannot answer;
//! - bound to loopback, a request whose `Host` is not a loopback name (or
//!   the address it is bound to) is refused (403), so a web page elsewhere
//!   cannot read the state through DNS rebinding;
//! - every answer for a state commit carries an `ETag` of that commit and
//!   the report's time; `If-None-Match` with it is a 304, so the page's
//!   once-a-second poll costs one ref read while nothing moves;
//! - state text is never spliced into HTML: the page builds text nodes, and
//!   its Content-Security-Policy allows only its own nonce-marked script;
//! - no client can stop it: requests are bounded in size and time, and
//!   connections in number (see `wire` and `listen`); at most `workers`
//!   answers are built at once, each worker with its own open repository.

mod http;
mod listen;
mod wire;

use std::net::{IpAddr, SocketAddr};
use std::sync::{mpsc, Arc, Mutex};

use crate::model::Timestamp;
use crate::ops::{self};
use crate::session::Context;
use crate::{Error, Result};

pub use http::{content_security_policy, page};

/// How `serve` listens.
#[derive(Clone, Debug)]
pub struct Options {
    pub bind: IpAddr,
    /// Whether the page may answer gates and reminders (see [`Answering`]).
    pub answering: Answering,
    pub port: u16,
    /// Whether `bind` was given explicitly (then `Host` is not checked,
    /// unless it is a loopback address).
    pub bind_given: bool,
    pub stale_after_seconds: i64,
    /// Threads building answers, each with its own open repository.
    pub workers: usize,
}

/// Whether a page may answer, decided once at launch: only a `serve` a
/// person started (the same check as `gate resolve`), on loopback, not
/// `--read-only`; and then only a request carrying the launch's key, from
/// the server's own origin.
#[derive(Clone, Debug)]
pub enum Answering {
    /// Why not, for the page and for a refused request.
    Off(String),
    /// The per-launch key, printed in the URL `serve` opens; the person's
    /// git identity, who the answers are from.
    On { key: String, person: String },
}

/// Answers that are the same for one (route, state commit, time), shared by
/// the workers: a burst of requests builds each report once.
#[derive(Default)]
struct Cache {
    entries: Mutex<Vec<(String, Arc<Vec<u8>>)>>,
}

/// How many answers [`Cache`] keeps.
const CACHED: usize = 32;

impl Cache {
    fn get(&self, key: &str) -> Option<Arc<Vec<u8>>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn put(&self, key: String, value: Arc<Vec<u8>>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CACHED {
            entries.remove(0);
        }
        entries.push((key, value));
    }
}

/// A JSON route to answer, for a worker; the answer comes back on `reply`.
struct Job {
    route: Route,
    if_none_match: Option<String>,
    reply: mpsc::SyncSender<Answer>,
}

/// A worker: answers jobs from `queue` with a [`Context`] of its own (a
/// store is not shared between threads) until the queue closes.
fn work(
    open: Option<&(dyn Fn() -> Result<Context> + Sync)>,
    clock: &(dyn Fn() -> Result<Timestamp> + Sync),
    cache: &Cache,
    options: &Options,
    queue: &Mutex<mpsc::Receiver<Job>>,
) {
    let mut ctx = match open.map(|open| open()).transpose() {
        Ok(ctx) => ctx,
        Err(e) => {
            tracing::error!("serve: cannot open the repository: {e}");
            return;
        }
    };
    loop {
        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(job) = job else { return };
        let tag = job.if_none_match.as_deref();
        let answer = match ctx.as_mut() {
            Some(ctx) => respond(ctx, clock, cache, options, &job.route, tag),
            None => respond_all_repos(clock, &job.route, tag),
        };
        // The connection may have gone meanwhile.
        let _ = job.reply.send(answer);
    }
}

/// Has a worker answer `route`, and waits for the answer.
fn ask(jobs: &mpsc::Sender<Job>, route: &Route, if_none_match: Option<&str>) -> Answer {
    let (reply, answer) = mpsc::sync_channel(1);
    let job = Job {
        route: route.clone(),
        if_none_match: if_none_match.map(str::to_owned),
        reply,
    };
    let answered = jobs.send(job).ok().and_then(|()| answer.recv().ok());
    answered.unwrap_or_else(|| {
        Answer::Failed(Error::invalid_input(
            "the worker building this answer stopped: see the server's standard error",
        ))
    })
}

/// How many connections may wait to be accepted. std binds with 128; a
/// burst of more connections than that loses SYNs, and each lost one costs
/// its client a one-second retransmit (seen as a bimodal p95 in
/// `examples/serve_bench.rs`). The kernel caps it at `net.core.somaxconn`.
const BACKLOG: i32 = 1024;

fn listen(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Serves until the process is stopped. `open` makes one [`Context`] per
/// worker (a store is not shared between threads); without it, the server
/// shows every repository in the person's list (`ops::repos`); `clock` is
/// read before each request; `ready` is told the address once the socket
/// is bound.
pub fn serve(
    open: Option<&(dyn Fn() -> Result<Context> + Sync)>,
    clock: &(dyn Fn() -> Result<Timestamp> + Sync),
    options: &Options,
    ready: impl FnOnce(SocketAddr),
) -> Result<()> {
    let addr = SocketAddr::new(options.bind, options.port);
    let listener = listen(addr).map_err(|e| {
        crate::model::Refusal::invalid_input(format!("cannot listen on {addr}: {e}")).with_hint(
            "another program may listen there: pick another --port, or --port 0 for a free one",
        )
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::invalid_input(format!("the server has no address: {e}")))?;
    // Refuse a broken repository, or an unreadable list, before saying we
    // listen.
    match open {
        Some(open) => drop(ops::dashboard::tip(&open()?)?),
        None => drop(ops::repos::read()?),
    }
    ready(bound);
    let cache = Cache::default();
    let check_host = (!options.bind_given || options.bind.is_loopback()).then_some(bound);
    let (jobs, queue) = mpsc::channel();
    let queue = Mutex::new(queue);
    std::thread::scope(|scope| {
        for _ in 0..options.workers.max(1) {
            scope.spawn(|| work(open, clock, &cache, options, &queue));
        }
        let answer = |request: &wire::Request| {
            http::answer(
                request,
                &mut |route, tag| ask(&jobs, route, tag),
                check_host,
                open.is_none(),
                &options.answering,
            )
        };
        listen::run(&listener, &wire::Limits::default(), &answer, &http::refusal);
    });
    Ok(())
}

/// A route the server knows, parsed from the request line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Page,
    /// `status --all-repos --json` (a server of every repository).
    Repos,
    Status {
        goal: Option<String>,
    },
    Dashboard,
    Diff {
        commit: String,
    },
    Health,
    /// `POST /answer`: the person answers a gate or a reminder. Parsed only
    /// from a request that passed the answering checks (`http::answer`).
    Answer(ops::answer::Ask),
    /// `report --since <since> --html`.
    Report {
        since: String,
    },
}

/// What a JSON route answers.
pub enum Answer {
    /// The body under this ETag is what the client already has.
    NotModified(String),
    /// An HTML page of its own (the report), never cached.
    Page(Arc<Vec<u8>>),
    Json {
        etag: String,
        body: Arc<Vec<u8>>,
    },
    Failed(Error),
}

fn respond(
    ctx: &mut Context,
    clock: &(dyn Fn() -> Result<Timestamp> + Sync),
    cache: &Cache,
    options: &Options,
    route: &Route,
    if_none_match: Option<&str>,
) -> Answer {
    if let Route::Report { since } = route {
        let page = clock().and_then(|now| {
            ctx.now = now;
            ctx.set_goal(None);
            ops::report::report(ctx, since)
        });
        return match page {
            // The style's nonce is set per answer (`http::answer`): the
            // head comes before any state text, so the first mark is it.
            Ok(r) => Answer::Page(Arc::new(
                crate::render::report::html(&r, 20, Some(http::NONCE_MARK)).into_bytes(),
            )),
            Err(e) => Answer::Failed(e),
        };
    }
    if let Route::Answer(args) = route {
        let answered = clock().and_then(|now| {
            ctx.now = now;
            ops::answer::answer(ctx, args).map(|r| crate::render::ok_json(to_value(&r), None))
        });
        return match answered {
            Ok(value) => Answer::Json {
                etag: String::new(),
                body: Arc::new(value.to_string().into_bytes()),
            },
            Err(e) => Answer::Failed(e),
        };
    }
    let found = (|| {
        ctx.now = clock()?;
        let tip = ops::dashboard::tip(ctx)?;
        Ok::<_, Error>((tip.to_string(), format!("\"{}-{}\"", tip, ctx.now.unix())))
    })();
    let (tip, etag) = match found {
        Ok(found) => found,
        Err(e) => return Answer::Failed(e),
    };
    if if_none_match.is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag)) {
        return Answer::NotModified(etag);
    }
    let key = format!("{route:?} {etag}");
    if let Some(body) = cache.get(&key) {
        return Answer::Json { etag, body };
    }
    let value = match route {
        Route::Health => Ok(serde_json::json!({ "ok": true, "commit": tip })),
        Route::Status { goal } => {
            ctx.set_goal(goal.clone());
            ops::status::status(ctx).map(|r| crate::render::ok_json(to_value(&r), None))
        }
        Route::Dashboard => {
            ctx.set_goal(None);
            ops::dashboard::dashboard(ctx, options.stale_after_seconds).and_then(|r| {
                let mut value = crate::render::ok_json(to_value(&r), None);
                value["answering"] = answering_json(ctx, &options.answering)?;
                Ok(value)
            })
        }
        Route::Diff { commit } => {
            ctx.set_goal(None);
            ops::diff::diff(ctx, Some(commit), false).map(|r| {
                let text = crate::render::diff::text(&r);
                let mut value = crate::render::ok_json(to_value(&r), None);
                value["text"] = serde_json::Value::String(text);
                value
            })
        }
        Route::Page | Route::Repos | Route::Answer(_) | Route::Report { .. } => {
            unreachable!("not a JSON route of one repository")
        }
    };
    match value {
        Ok(value) => {
            let body = Arc::new(value.to_string().into_bytes());
            cache.put(key, body.clone());
            Answer::Json { etag, body }
        }
        Err(e) => Answer::Failed(e),
    }
}

/// What the page may do: answer (`enabled`), or why not (`reason`); under
/// a `gate_signers` policy answers must be signed, so the page offers the
/// command instead (`signed_only`).
fn answering_json(ctx: &Context, answering: &Answering) -> Result<serde_json::Value> {
    let signed_only = ops::answer::signed_only(ctx)?;
    Ok(match answering {
        Answering::Off(reason) => serde_json::json!({ "enabled": false, "reason": reason }),
        Answering::On { person, .. } if signed_only => serde_json::json!({
            "enabled": false,
            "signed_only": true,
            "person": person,
            "reason": "gate_signers is set: an answer counts only in a signed commit, which the command line makes",
        }),
        Answering::On { person, .. } => serde_json::json!({ "enabled": true, "person": person }),
    })
}

/// Answers a route of the server of every repository. Each repository is
/// read again for each answer (a page polls every two seconds); the ETag
/// is the answer's own hash.
fn respond_all_repos(
    clock: &(dyn Fn() -> Result<Timestamp> + Sync),
    route: &Route,
    if_none_match: Option<&str>,
) -> Answer {
    let value = clock().and_then(|now| match route {
        Route::Repos => {
            ops::repos::status_all_repos(now).map(|r| crate::render::ok_json(to_value(&r), None))
        }
        _ => Ok(serde_json::json!({ "ok": true, "now": now })),
    });
    let body = match value {
        Ok(value) => value.to_string().into_bytes(),
        Err(e) => return Answer::Failed(e),
    };
    let etag = format!("\"{}\"", sha1_smol::Sha1::from(&body).digest());
    if if_none_match.is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag)) {
        return Answer::NotModified(etag);
    }
    Answer::Json {
        etag,
        body: Arc::new(body),
    }
}

fn to_value(report: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(report).expect("reports serialize")
}
