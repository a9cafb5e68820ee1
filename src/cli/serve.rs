//! `git loopx serve` (its server is built with the `serve` feature)

use std::net::IpAddr;

use crate::model::parse_duration;
#[cfg(feature = "serve")]
use {
    crate::cli::{GlobalArgs, Output},
    crate::model::Timestamp,
    crate::serve::{self, Answering, Options},
    crate::session::Context,
    crate::{Error, Result},
    std::io::Write as _,
};

/// Serve a dashboard of the state on http://127.0.0.1:<PORT>/.
///
/// What waits for you (open gates, with the command that answers each), a
/// board of every goal's todos, the agents and their claims, writebacks and
/// finished todos per hour, the quota, and recent writebacks with their
/// semantic diffs. The page follows `loopx-state` by itself, within about a
/// second of a change.
///
/// Started by you (not inside an agent runtime, no agent named), on
/// loopback and without --read-only, the page also answers gates and
/// reminders, as `gate resolve` and `todo done` do, in your name: only from
/// the address it prints, which carries this launch's key, and only from
/// its own origin. Otherwise it only shows. JSON: /status.json (`status
/// --json`, `?goal=ID`), /dashboard.json, /diff/<commit>.json, /healthz.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port to listen on; 0 picks a free one (the address is printed).
    #[arg(long, default_value_t = 8765, value_name = "PORT")]
    pub port: u16,
    /// Listen on this address instead of 127.0.0.1. Anyone who can reach
    /// it can read the whole state: a warning is printed for any address
    /// that is not loopback.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// Open the page in a browser (xdg-open, or open on macOS).
    #[arg(long)]
    pub open: bool,
    /// Flag an agent not seen for this long (a turn, a writeback, a claim)
    /// as stale: 30m, 2h, 1d.
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = duration)]
    pub stale_after: i64,
    /// Threads building answers, each with the repository open (the
    /// connections themselves are served on threads of their own).
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub workers: u16,
    /// Every repository in your list (`git loopx repos`) on one page: what
    /// needs you across all of them, then each one's goals; a missing or
    /// broken one is shown as such. The mode of a `serve` started outside
    /// any repository. JSON: /repos.json (`status --all-repos --json`).
    #[arg(long)]
    pub all_repos: bool,
    /// Never answer from the page, even when you started it: it only shows.
    #[arg(long)]
    pub read_only: bool,
}

/// A positive duration flag (`--stale-after`, `watch --interval`).
pub(super) fn duration(text: &str) -> std::result::Result<i64, String> {
    parse_duration(text)
        .filter(|s| *s > 0)
        .ok_or_else(|| format!("`{text}` is not a duration such as 30s, 30m, 2h or 1d"))
}

/// How far apart the times are that answers are built for, on the system
/// clock: a burst of requests in one step shares its answers.
#[cfg(feature = "serve")]
const CLOCK_STEP: i64 = 5;

#[cfg(feature = "serve")]
pub fn run(global: &GlobalArgs, args: &Args) -> Result<Output> {
    let dir = match &global.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| Error::invalid_input(format!("cannot read the current directory: {e}")))?,
    };
    let fixed = std::env::var("LOOPX_NOW").is_ok_and(|v| !v.is_empty());
    let clock = move || -> Result<Timestamp> {
        let now = super::now()?;
        Ok(if fixed {
            now
        } else {
            Timestamp::from_unix(now.unix() - now.unix().rem_euclid(CLOCK_STEP))
        })
    };
    let open = || {
        Context::open(
            &dir,
            super::now()?,
            global.agent.clone(),
            global.goal.clone(),
        )
    };
    // Outside any repository, every repository in the person's list.
    let all_repos =
        args.all_repos || matches!(open(), Err(e) if e.code() == crate::model::Code::NotARepo);
    let open: Option<&(dyn Fn() -> Result<Context> + Sync)> = match all_repos {
        false => Some(&open),
        true => None,
    };
    let bind = args.bind.unwrap_or(IpAddr::from([127, 0, 0, 1]));
    watch(
        (!all_repos).then(|| dir.clone()),
        global.agent.clone(),
        global.goal.clone(),
    );
    let answering = answering(args, open, bind);
    let key = match &answering {
        Answering::On { key, .. } => format!("?key={key}"),
        Answering::Off(_) => String::new(),
    };
    let mode = match &answering {
        Answering::On { person, .. } => format!("answers as {person}"),
        Answering::Off(why) => format!("read-only: {why}"),
    };
    let options = Options {
        answering,
        bind,
        port: args.port,
        bind_given: args.bind.is_some(),
        stale_after_seconds: args.stale_after,
        workers: usize::from(args.workers),
    };
    serve::serve(open, &clock, &options, |addr| {
        let url = format!("http://{addr}/{key}");
        if !bind.is_loopback() {
            let _ = writeln!(
                std::io::stderr(),
                "warning: listening on {bind}, not loopback: anyone who can reach {addr} can read this repository's loopx-state"
            );
        }
        let line = if global.json {
            serde_json::json!({ "ok": true, "url": url, "address": addr.to_string() }).to_string()
        } else {
            let what = if all_repos { "every repository, " } else { "" };
            format!("git loopx serve: {url} ({what}{mode}; Ctrl-C stops it)")
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        if args.open {
            open_browser(&url);
        }
    })?;
    Ok(Output::new(serde_json::json!({}), String::new()))
}

/// How often `serve` looks for events to tell the person (`git loopx watch`).
#[cfg(feature = "serve")]
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// `watch` beside the server, on a thread of its own, for as long as it
/// runs: at once, then every [`WATCH_EVERY`]; of its repository, or (no
/// `dir`) of every repository in the person's list, each within a time
/// limit (`ops::repos::read_listed`).
#[cfg(feature = "serve")]
fn watch(dir: Option<std::path::PathBuf>, agent: Option<String>, goal: Option<String>) {
    let all_repos = dir.is_none();
    std::thread::spawn(move || loop {
        let dirs = match &dir {
            Some(dir) => vec![dir.clone()],
            None => crate::ops::repos::read().unwrap_or_default(),
        };
        for dir in dirs {
            let look = super::now().and_then(|now| {
                let look = move |dir: &std::path::Path, agent, goal| {
                    crate::ops::notify::look(&Context::open(dir, now, agent, goal)?)
                };
                let (agent, goal) = (agent.clone(), goal.clone());
                match all_repos {
                    true => crate::ops::repos::read_listed(&dir, move |dir| look(dir, agent, goal)),
                    false => look(&dir, agent, goal),
                }
            });
            if let Err(e) = look {
                tracing::warn!("serve: telling the person about {}: {e}", dir.display());
            }
        }
        std::thread::sleep(WATCH_EVERY);
    });
}

/// Whether the page may answer (see `serve::Answering`): only a `serve`
/// the person started (the check `gate resolve` makes), on loopback, for
/// one repository, not `--read-only`.
#[cfg(feature = "serve")]
fn answering(
    args: &Args,
    open: Option<&(dyn Fn() -> Result<Context> + Sync)>,
    bind: IpAddr,
) -> Answering {
    let Some(open) = open else {
        return Answering::Off(
            "a page of every repository only shows: answer from a repository's own".into(),
        );
    };
    if args.read_only {
        return Answering::Off("it was started with --read-only".into());
    }
    if !bind.is_loopback() {
        return Answering::Off(format!("it listens on {bind}, not loopback"));
    }
    match open().and_then(|ctx| ctx.require_person("answer gates from the dashboard")) {
        Ok(person) => Answering::On {
            key: launch_key(),
            person,
        },
        Err(e) => Answering::Off(match e.hint() {
            Some(hint) => format!("{e} ({hint})"),
            None => e.to_string(),
        }),
    }
}

/// 128 random bits, hex: the key a page's answers carry.
#[cfg(feature = "serve")]
fn launch_key() -> String {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        // No /dev/urandom: a hash of what differs between launches.
        let seed = format!(
            "{:?}-{}-{:p}",
            std::time::SystemTime::now(),
            std::process::id(),
            &bytes
        );
        bytes.copy_from_slice(&sha1_smol::Sha1::from(seed).digest().bytes()[..16]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Opens `url` in the person's browser without putting it on a command
/// line: the address carries the launch's key, and every user of the host
/// reads every process's arguments (`ps`). The opener gets a file only the
/// person can read (mode 0600, in a directory only they can enter) that
/// sends the browser on to the address; it is removed a minute later.
#[cfg(feature = "serve")]
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let page = match handoff_page(url) {
        Ok(page) => page,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "warning: could not write the page that opens the dashboard ({e}); open {url} yourself"
            );
            return;
        }
    };
    let spawned = std::process::Command::new(opener)
        .arg(&page)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        let _ = writeln!(
            std::io::stderr(),
            "warning: could not open a browser ({opener}: {e}); open {url} yourself"
        );
    }
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(60));
        let _ = std::fs::remove_file(&page);
    });
}

/// The file [`open_browser`] hands the opener: a page that moves on to
/// `url` at once, private to the person.
#[cfg(feature = "serve")]
fn handoff_page(url: &str) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
    let dir = std::env::temp_dir().join(format!(
        "git-loopx-open-{}",
        rustix::process::getuid().as_raw()
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .or_else(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(e),
        })?;
    let meta = std::fs::symlink_metadata(&dir)?;
    use std::os::unix::fs::MetadataExt as _;
    if !meta.is_dir()
        || meta.uid() != rustix::process::getuid().as_raw()
        || meta.permissions().mode() & 0o077 != 0
    {
        return Err(std::io::Error::other(format!(
            "{} is not a directory only you can enter",
            dir.display()
        )));
    }
    let path = dir.join(format!("serve-{}.html", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let attr = url.replace('&', "&amp;").replace('"', "&quot;");
    let body = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={attr}\"><title>git loopx serve</title><a href=\"{attr}\">Open the dashboard</a>\n"
    );
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::io::Write::write_all(&mut file, body.as_bytes())?;
    Ok(path)
}
