//! `git loopx watch`

use crate::cli::{GlobalArgs, Output};
use crate::ops::notify;
use crate::session::Context;
use crate::Result;

/// Tell the person when they are needed, without a page.
///
/// Looks at the state every --interval and sends each new event once — a
/// gate or a reminder opened, a goal done or stopped, a goal throttled, an
/// agent failing (failed turns in a row, loop-guard releases, a lease that
/// expired unused) — to what git config names: `loopx.notify.command` (run
/// by `sh -c`, the event as JSON on its standard input),
/// `loopx.notify.webhook` (a JSON POST by curl;
/// `loopx.notify.webhookFormat=slack` posts `{"text": …}`), and
/// `loopx.notify.desktop=true` (notify-send). What was sent is recorded on
/// this host (`.git/loopx/notify.json`), so a restart sends nothing twice; a
/// failed delivery is retried with backoff and shown by `doctor`. A look
/// sends at most ten events one by one, and the rest due in one
/// `more_events` notification; a notify command has 30 s, and what it
/// leaves running in its process group is stopped when it exits. `serve`
/// does the same while it runs. examples/systemd/ has a user unit.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Look once, deliver what is due, and exit (for cron or a timer).
    #[arg(long)]
    once: bool,
    /// How long between looks: 30s, 2m.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = super::serve::duration)]
    interval: i64,
    /// Every repository in your list (`git loopx repos`), each by its own
    /// git config. Needs no repository.
    #[arg(long)]
    pub all_repos: bool,
}

/// `watch --all-repos`: each listed repository looked at in turn, within
/// a time limit (`ops::repos::read_listed`); one that cannot be read, does
/// not answer, or is refused (another user's, see `gix_store::owner`), is
/// said so and skipped, its notify command and webhook never run.
pub fn all_repos(global: &GlobalArgs, args: &Args) -> Result<Output> {
    loop {
        let mut looks = Vec::new();
        let mut out = String::new();
        for path in crate::ops::repos::read()? {
            let look = super::now().and_then(|now| {
                let (agent, goal) = (global.agent.clone(), global.goal.clone());
                crate::ops::repos::read_listed(&path, move |path| {
                    notify::look(&Context::open(path, now, agent, goal)?)
                })
            });
            match &look {
                Ok(Some(look)) => out.push_str(&text(look)),
                Ok(None) => {}
                Err(e) => out.push_str(&format!("{}: {e}\n", path.display())),
            }
            looks.push(serde_json::json!({
                "repo": path,
                "look": look.as_ref().ok(),
                "error": look.as_ref().err().map(|e| e.to_string()),
                "code": look.as_ref().err().map(|e| e.code().as_str()),
            }));
        }
        if args.once {
            return Ok(Output::new(serde_json::json!({ "repos": looks }), out));
        }
        print!("{out}");
        std::thread::sleep(std::time::Duration::from_secs(args.interval as u64));
    }
}

pub fn run(ctx: &Context, global: &GlobalArgs, args: &Args) -> Result<Output> {
    if args.once {
        let look = notify::look(ctx)?;
        let text = match &look {
            None => "another watcher of this repository is delivering: nothing done\n".to_owned(),
            Some(look) => text(look),
        };
        return Ok(Output::new(look, text));
    }
    let dir = ctx.repo_dir().to_owned();
    loop {
        let look = super::now().and_then(|now| {
            let ctx = Context::open(&dir, now, global.agent.clone(), global.goal.clone())?;
            notify::look(&ctx)
        });
        match look {
            Ok(Some(look)) => print!("{}", text(&look)),
            Ok(None) => {}
            Err(e) => eprintln!("git loopx watch: {e}"),
        }
        std::thread::sleep(std::time::Duration::from_secs(args.interval as u64));
    }
}

fn text(look: &notify::Look) -> String {
    let mut out = String::new();
    if look.sinks.is_empty() {
        out.push_str("no loopx.notify.command, loopx.notify.webhook or loopx.notify.desktop set: nothing to send\n");
    }
    for warning in &look.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    for event in &look.new {
        out.push_str(&notify::line(event));
        out.push('\n');
    }
    for failed in &look.failed {
        out.push_str(&format!(
            "not delivered to {} ({}): {}; retried later\n",
            failed.sink,
            failed.key,
            failed.error.as_deref().unwrap_or("")
        ));
    }
    out
}
