//! The command line: global flags, one file per subcommand, and the single
//! place where a result becomes output and an exit status.

mod agent;
mod check;
mod completions;
mod diff;
mod doctor;
mod gate;
mod goal;
mod hook;
mod hook_git;
mod hooks;
mod import;
mod init;
mod install_man;
mod log;
mod mcp;
mod pr;
mod progress;
mod prompt;
mod quota;
mod redact;
mod report;
mod repos;
mod review;
mod run;
mod serve;
mod should_run;
mod status;
mod sync;
mod todo;
mod watch;
mod writeback;

#[cfg(test)]
mod help_tests;

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::model::Timestamp;
use crate::render;
use crate::session::{Context, Policy};
use crate::{Error, Result};

/// git-loopx: durable control state for long-running AI agents, kept on the
/// `loopx-state` branch of this repository.
///
/// Every change is one commit on `refs/heads/loopx-state`, made without
/// touching your working tree, index or HEAD. `git loopx help <command>`
/// shows a command's options.
#[derive(Debug, Parser)]
#[command(
    name = "git-loopx",
    bin_name = "git loopx",
    version,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts, before or after its name.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// Run as if started in <PATH>.
    #[arg(short = 'C', value_name = "PATH", global = true)]
    pub dir: Option<PathBuf>,
    /// Print exactly one JSON object on stdout, also on failure.
    #[arg(long, global = true)]
    pub json: bool,
    /// The acting agent (else $LOOPX_AGENT, else git config loopx.agent).
    #[arg(long, global = true, env = "LOOPX_AGENT", value_name = "ID")]
    pub agent: Option<String>,
    /// The goal to act on (else $LOOPX_GOAL, else the default goal).
    #[arg(long, global = true, env = "LOOPX_GOAL", value_name = "ID")]
    pub goal: Option<String>,
    /// `--agent` and `--goal` were given on the command line (not only by
    /// $LOOPX_AGENT, $LOOPX_GOAL): `hooks install` bakes only those into
    /// what it installs.
    #[arg(skip)]
    pub on_command_line: (bool, bool),
    /// Colour in human output: auto (on a terminal, unless $NO_COLOR is
    /// set), always, or never.
    #[arg(
        long,
        global = true,
        value_name = "WHEN",
        value_enum,
        default_value_t = render::style::ColorChoice::Auto
    )]
    pub color: render::style::ColorChoice,
    /// Let this credential rule's hits through: a write then commits the
    /// text, naming the rule in a `Loopx-Allowed-Secret-Pattern` trailer;
    /// `check` and `sync` pass it too. Repeatable. Rules as the scanner
    /// names them (`git loopx check` lists a hit's rule; an unknown name
    /// lists every rule).
    #[arg(
        long = "allow-secret-pattern",
        global = true,
        value_name = "RULE",
        value_parser = secret_rule,
        action = clap::ArgAction::Append
    )]
    pub allow_secret_pattern: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Init(init::Args),
    Status(status::Args),
    Log(log::Args),
    Diff(diff::Args),
    Doctor(doctor::Args),
    Check(check::Args),
    Goal(goal::Args),
    Agent(agent::Args),
    Todo(todo::Args),
    Gate(gate::Args),
    Writeback(writeback::Args),
    History(writeback::HistoryArgs),
    ShouldRun(should_run::Args),
    Quota(quota::Args),
    Review(review::Args),
    Report(report::Args),
    Pr(pr::Args),
    Prompt(prompt::Args),
    Sync(sync::Args),
    Redact(redact::Args),
    Repos(repos::Args),
    Hooks(hooks::Args),
    Import(import::Args),
    Hook(hook::Args),
    Run(run::Args),
    Serve(serve::Args),
    Watch(watch::Args),
    Completions(completions::Args),
    InstallMan(install_man::Args),
    Mcp(mcp::Args),
}

/// What a command hands back to be printed: its report, and the report
/// as text; [`main`] prints one of the two.
pub struct Output {
    /// The report, serialized only when it is printed (the `--json` object
    /// without `ok`): a 10,000-todo `status` spent a fifth of its time
    /// building JSON that text output then dropped.
    report: Box<dyn Report>,
    /// The human rendering.
    pub text: String,
    /// Exit status for a command that succeeded but found problems (`doctor`).
    pub failure: Option<Error>,
    /// `text` is Markdown (`--markdown`): its zero-width spaces, which keep
    /// mentions inert, are printed as they are, not as `\u{200b}`.
    pub markdown: bool,
    /// Our own words in `text` to colour on a terminal (`render::style`).
    pub spans: Vec<render::style::Span>,
}

/// A report, kept as it is until it is printed as JSON.
trait Report {
    fn json(&self) -> serde_json::Value;
}

impl<T: serde::Serialize> Report for T {
    fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("reports serialize")
    }
}

impl Output {
    /// `report`, printed as JSON under `--json` (serialized then only), else
    /// as `text`.
    pub fn new(report: impl serde::Serialize + 'static, text: String) -> Self {
        Output {
            report: Box::new(report),
            text,
            failure: None,
            markdown: false,
            spans: Vec::new(),
        }
    }

    /// Like [`Output::new`], with some of the text's own words marked for
    /// colour.
    pub fn styled(
        report: impl serde::Serialize + 'static,
        (text, spans): (String, Vec<render::style::Span>),
    ) -> Self {
        Output {
            spans,
            ..Output::new(report, text)
        }
    }

    /// Like [`Output::new`]; when `markdown`, the text is Markdown.
    pub fn markdown(report: impl serde::Serialize + 'static, text: String, markdown: bool) -> Self {
        Output {
            markdown,
            ..Output::new(report, text)
        }
    }
}

/// The current time: `LOOPX_NOW` when set (RFC 3339), else the system clock.
///
/// `LOOPX_NOW` pins the clock (tests, replays); it may not run more than
/// [`MAX_AHEAD`] past the system clock unless `LOOPX_ALLOW_FUTURE=1` (a
/// simulation of days to come): one write dated in year 9999 archived every
/// run of its goal's window, the quota then read no spends, and no archive
/// could happen again before 9999.
fn now() -> Result<Timestamp> {
    let system = Timestamp::from_unix(chrono::Utc::now().timestamp());
    match std::env::var("LOOPX_NOW") {
        Ok(text) if !text.is_empty() => {
            let pinned = Timestamp::parse(&text).ok_or_else(|| {
                Error::invalid_input(format!("LOOPX_NOW=`{text}` is not an RFC 3339 time"))
            })?;
            let allowed = std::env::var_os("LOOPX_ALLOW_FUTURE").is_some_and(|v| v == "1");
            if pinned.unix() - system.unix() > MAX_AHEAD && !allowed {
                return Err(crate::model::Refusal::invalid_input(format!(
                    "LOOPX_NOW=`{text}` is more than a day after this machine's clock ({system}): a state dated there would archive every run of the goal's window"
                ))
                .with_hint("unset LOOPX_NOW, or set LOOPX_ALLOW_FUTURE=1 to simulate days to come")
                .into());
            }
            Ok(pinned)
        }
        _ => Ok(system),
    }
}

/// How far past the system clock `LOOPX_NOW` may run (see [`now`]).
const MAX_AHEAD: i64 = 24 * 3600;

/// The answer of a command whose Cargo feature this build left out. The
/// command stays listed (help, completions, manual pages), so that a script
/// or a person using it learns which feature brings it back.
fn not_built(command: &Command) -> Option<Error> {
    let (command, feature) = match command {
        Command::Serve(_) if !cfg!(feature = "serve") => ("serve", "serve"),
        Command::Mcp(_) if !cfg!(feature = "mcp") => ("mcp", "mcp"),
        Command::Import(_) if !cfg!(feature = "import-loopx") => ("import", "import-loopx"),
        _ => return None,
    };
    let refusal =
        crate::model::Refusal::invalid_input(format!("this git-loopx was built without `{command}`"))
            .with_hint(format!(
                "build git-loopx with the Cargo feature `{feature}`: default builds have it, `--no-default-features` leaves it out"
            ));
    Some(refusal.into())
}

fn dispatch(cli: &Cli) -> Result<Output> {
    if let Some(err) = not_built(&cli.command) {
        return Err(err);
    }
    // What needs no repository.
    match &cli.command {
        Command::Completions(args) => return completions::run(args),
        Command::InstallMan(args) => return install_man::run(args),
        Command::Repos(args) => return repos::run(&cli.global, args),
        Command::Status(args) if args.all_repos => return status::all_repos(now()?),
        Command::Watch(args) if args.all_repos => return watch::all_repos(&cli.global, args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => return serve::run(&cli.global, args),
        _ => {}
    }
    let now = now()?;
    let dir = match &cli.global.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| Error::invalid_input(format!("cannot read the current directory: {e}")))?,
    };
    let mut ctx = Context::open(&dir, now, cli.global.agent.clone(), cli.global.goal.clone())?;
    ctx.set_policy(Policy::allowing(&cli.global.allow_secret_pattern));
    let result = match &cli.command {
        Command::Init(args) => init::run(&ctx, args),
        #[cfg(feature = "import-loopx")]
        Command::Import(args) => import::run(&ctx, args),
        Command::Status(args) => status::run(&ctx, args),
        Command::Log(args) => log::run(&ctx, args),
        Command::Diff(args) => diff::run(&ctx, args),
        Command::Doctor(args) => doctor::run(&ctx, args),
        Command::Check(args) => check::run(&ctx, args),
        Command::Todo(args) => todo::run(&ctx, args),
        Command::Goal(args) => goal::run(&ctx, args),
        Command::Agent(args) => agent::run(&ctx, args),
        Command::Gate(args) => gate::run(&ctx, args),
        Command::Writeback(args) => writeback::run(&ctx, args),
        Command::History(args) => writeback::history(&ctx, args),
        Command::ShouldRun(args) => should_run::run(&ctx, args),
        Command::Quota(args) => quota::run(&ctx, args),
        Command::Review(args) => review::run(&ctx, args),
        Command::Report(args) => report::run(&mut ctx, args),
        Command::Pr(args) => pr::run(&ctx, args),
        Command::Prompt(args) => prompt::run(&ctx, args),
        Command::Sync(args) => sync::run(&ctx, args),
        Command::Redact(args) => redact::run(&ctx, args),
        Command::Hooks(args) => hooks::run(&ctx, &cli.global, args),
        Command::Hook(_) => unreachable!("hook programs run from `main`, before a Context"),
        Command::Run(args) => run::run(&mut ctx, &cli.global, args),
        Command::Watch(args) => watch::run(&ctx, &cli.global, args),
        Command::Completions(_)
        | Command::InstallMan(_)
        | Command::Serve(_)
        | Command::Repos(_) => {
            unreachable!("run above")
        }
        #[cfg(not(feature = "import-loopx"))]
        Command::Import(_) => unreachable!("refused above: not built"),
        Command::Mcp(_) => {
            unreachable!("run from `main`, before a Context; refused above when not built")
        }
    };
    match &cli.command {
        // sync has fetched: its "no state" means the remote has none either.
        Command::Sync(_) => result,
        _ => result.map_err(|e| crate::ops::missing::explain(&ctx, e)),
    }
}

/// `--agent ""` on the command line is a usage error (an empty
/// `LOOPX_AGENT` is taken as unset, as shells clear variables that way).
fn empty_agent_flag(matches: &clap::ArgMatches) -> Option<clap::Error> {
    let mut m = matches;
    loop {
        let given = m.value_source("agent") == Some(clap::parser::ValueSource::CommandLine);
        if given && m.get_one::<String>("agent").is_some_and(|a| a.is_empty()) {
            return Some(Cli::command().error(
                clap::error::ErrorKind::InvalidValue,
                "--agent needs an agent id, not an empty string",
            ));
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return None,
        }
    }
}

/// Whether the global flag `id` was given on the command line, not only by
/// its variable (clap hands both over as the same value).
fn on_command_line(matches: &clap::ArgMatches, id: &str) -> bool {
    let mut m = matches;
    loop {
        if m.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            return true;
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return false,
        }
    }
}

/// Runs the CLI on `args` and returns the process exit status.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    let json = args.iter().any(|a| a == "--json");
    let parsed = Cli::command()
        .color(clap_color(&args))
        .try_get_matches_from(&args)
        .and_then(|m| {
            let mut cli = empty_agent_flag(&m).map_or(Cli::from_arg_matches(&m), Err)?;
            cli.global.on_command_line =
                (on_command_line(&m, "agent"), on_command_line(&m, "goal"));
            Ok(cli)
        });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: under --json, their text in one object.
            if json {
                let key = match e.kind() {
                    clap::error::ErrorKind::DisplayVersion => "version",
                    _ => "help",
                };
                let text = e.render().to_string();
                let text = match key {
                    "version" => text
                        .trim()
                        .rsplit(' ')
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                    _ => text,
                };
                emit(
                    &serde_json::json!({ "ok": true, key: text }).to_string(),
                    "",
                );
            } else {
                let _ = e.print();
            }
            return 0;
        }
        // A hook program never fails loudly: a runtime may read an exit
        // status (Claude Code's 2) as "block" (see `hook`).
        Err(e) if is_hook_program(&args) => {
            let _ = writeln!(std::io::stderr(), "git-loopx hook: ignored: {e}");
            return 0;
        }
        Err(e) => {
            if json {
                let rendered = e.render().to_string();
                let first = rendered.lines().next().unwrap_or_default();
                let err = Error::invalid_input(first.strip_prefix("error: ").unwrap_or(first));
                emit(
                    &render::error_json(&err, Some(e.to_string())).to_string(),
                    "",
                );
            } else {
                let _ = e.print();
            }
            return 2;
        }
    };
    if let Command::Hook(args) = &cli.command {
        return hook::main(&cli.global, args);
    }
    // stdout is the MCP session's: an error goes to stderr only. (Without
    // the feature, `dispatch` answers that it is not built.)
    #[cfg(feature = "mcp")]
    if let Command::Mcp(args) = &cli.command {
        return match mcp::run(&cli.global, args) {
            Ok(()) => 0,
            Err(err) => {
                emit_error(&err, cli.global.color);
                err.exit_code()
            }
        };
    }
    let result = dispatch(&cli);
    match result {
        Ok(out) => {
            let exit = out.failure.as_ref().map_or(0, Error::exit_code);
            if cli.global.json {
                let value = render::ok_json(out.report.json(), out.failure.as_ref());
                emit(&value.to_string(), "");
            } else if out.markdown {
                emit(&render::markdown_safe(&out.text), "");
            } else {
                let colour = cli.global.color.for_stream(false);
                emit(&render::style::paint(&out.text, &out.spans, colour), "");
                if let Some(err) = &out.failure {
                    emit_error(err, cli.global.color);
                }
            }
            exit
        }
        Err(err) => {
            tracing::debug!(?err, "command failed");
            if cli.global.json {
                emit(&render::error_json(&err, None).to_string(), "");
            } else {
                emit_error(&err, cli.global.color);
            }
            err.exit_code()
        }
    }
}

/// Whether `args` run `git loopx hook …`: the first word that is not a
/// global flag (or its value) is `hook`.
fn is_hook_program(args: &[OsString]) -> bool {
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        match word.to_str() {
            Some("-C" | "--agent" | "--goal" | "--color" | "--allow-secret-pattern") => {
                words.next();
            }
            Some(flag) if flag.starts_with('-') => {}
            other => return other == Some("hook"),
        }
    }
    false
}

/// `--color` as clap should use it for its own usage errors and help,
/// read from the raw arguments (clap colours before it has parsed them).
fn clap_color(args: &[OsString]) -> clap::ColorChoice {
    let mut choice = clap::ColorChoice::Auto;
    let mut words = args.iter().skip(1).filter_map(|a| a.to_str());
    while let Some(word) = words.next() {
        let value = match word.strip_prefix("--color") {
            Some("") => words.next(),
            Some(v) => v.strip_prefix('='),
            None if word == "--" => break,
            None => None,
        };
        choice = match value {
            Some("always") => clap::ColorChoice::Always,
            Some("never") => clap::ColorChoice::Never,
            Some("auto") => clap::ColorChoice::Auto,
            _ => choice,
        };
    }
    choice
}

/// Writes an error on stderr: `error[code]:` coloured per `--color`, the
/// rest terminal-safe.
fn emit_error(err: &Error, color: render::style::ColorChoice) {
    let (text, spans) = render::style::error_text(err);
    emit(
        "",
        &render::style::paint(&text, &spans, color.for_stream(true)),
    );
}

/// Writes human text: made terminal-safe first ([`render::terminal_safe`]),
/// as state text comes from agents and peers and must not drive the terminal.
fn emit_text(stdout: &str, stderr: &str) {
    emit(
        &render::terminal_safe(stdout),
        &render::terminal_safe(stderr),
    );
}

/// Writes to stdout and stderr; a closed pipe is not an error (`| head`).
fn emit(stdout: &str, stderr: &str) {
    if !stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(stdout.as_bytes());
        if !stdout.ends_with('\n') {
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
    }
    if !stderr.is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(stderr.as_bytes());
        if !stderr.ends_with('\n') {
            let _ = err.write_all(b"\n");
        }
    }
}

/// `--allow-secret-pattern`'s value: a rule the scanner has. Checked by
/// hand, not with a list of possible values, which clap would build on
/// every command for the 238 rules.
fn secret_rule(value: &str) -> Result<String, String> {
    if crate::model::leaks::rules().any(|r| r == value) {
        return Ok(value.to_owned());
    }
    let rules: Vec<&str> = crate::model::leaks::rules().collect();
    Err(format!(
        "no credential rule is named {value:?}; the rules: {}",
        rules.join(", ")
    ))
}
