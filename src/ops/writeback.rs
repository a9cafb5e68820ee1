//! `writeback` and `history`: the evidence ledger.

use serde::{Deserialize, Serialize};

use crate::git_cmd;
use crate::model::gate::{self, GateAction};
use crate::model::ids::{headline, nonce};
use crate::model::{
    ids, lease, Code, Extra, Outcome, Refusal, Run, RunKind, Timestamp, Validation,
};
use crate::ops::args::enum_arg;
use crate::ops::{non_empty, resolve_todo};
use crate::session::{local, mutate_maybe, Context};
use crate::store::{Message, Oid};
use crate::Result;

/// `writeback`, and the `writeback` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WritebackArgs {
    /// The todo the work was for: its id or a unique prefix of one. Leave it
    /// out for a goal-level writeback: a planning or replanning turn, which
    /// works on no todo.
    #[arg(long, value_name = "ID")]
    pub todo: Option<String>,
    /// surface_only, outcome_gap, outcome_progress or primary_goal_outcome.
    #[arg(long, value_parser = enum_arg::<Outcome>)]
    pub outcome: Outcome,
    /// What was delivered, in a sentence or two.
    #[arg(long, value_name = "TEXT")]
    pub summary: String,
    /// The validation command that was run…
    #[arg(long, value_name = "CMD", requires = "exit_code")]
    pub validation: Option<String>,
    /// …and its exit code.
    #[arg(long, requires = "validation", allow_hyphen_values = true)]
    pub exit_code: Option<i32>,
    /// A code commit that carries the work (repeatable): any revision git
    /// reads (`HEAD`, a branch, a short id); stored as the full commit id.
    #[arg(long = "artifact", value_name = "REV")]
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// Evidence outside git, such as a CI run (repeatable): an absolute URL.
    #[arg(long = "artifact-url", value_name = "URL")]
    #[serde(default)]
    pub artifact_urls: Vec<String>,
    /// Set the goal's next action in the same commit.
    #[arg(long)]
    pub next_action: Option<String>,
    /// The turn key: a second writeback with the same key is a replay.
    #[arg(long, value_name = "KEY")]
    pub turn: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    pub epoch: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct WritebackReport {
    pub run: Run,
    pub accountable: bool,
    pub replayed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// The full ids of the commits `revs` name in this repository, in order,
/// each once; a revision that names no commit here is refused, named.
fn resolve_artifacts(ctx: &Context, revs: &[String]) -> Result<Vec<String>> {
    let mut ids: Vec<String> = Vec::new();
    for rev in revs {
        let found = if rev.trim().is_empty() {
            None
        } else {
            git_cmd::resolve_commit(ctx.repo_dir(), rev)
                .map_err(|e| Refusal::new(Code::GitFailed, e))?
        };
        let Some(id) = found else {
            return Err(Refusal::invalid_input(format!(
                "--artifact `{rev}` is not a commit in this repository"
            ))
            .with_hint(
                "name a commit (`HEAD`, a branch, a commit id; fetch it first if it is on a \
                 remote); for evidence outside git use --artifact-url <url>",
            )
            .into());
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// `--artifact-url`: an absolute URL (`scheme://…`) without spaces or a
/// password, at most 2048 bytes.
fn check_artifact_url(url: &str) -> Result<()> {
    let refuse = |why: &str| {
        Err(
            Refusal::invalid_input(format!("--artifact-url `{url}` {why}"))
                .with_hint("give an absolute URL such as https://ci.example.com/builds/42")
                .into(),
        )
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return refuse("is not a URL (scheme://…)");
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return refuse("is not a URL (scheme://…)");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        return refuse("names no host");
    }
    if url.len() > 2048 {
        return refuse("is longer than 2048 bytes");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("contains a space or a control character");
    }
    if authority
        .rsplit_once('@')
        .is_some_and(|(user, _)| user.contains(':'))
    {
        return refuse("carries a password");
    }
    Ok(())
}

pub fn writeback(ctx: &Context, args: &WritebackArgs) -> Result<WritebackReport> {
    let agent = ctx.require_agent()?.to_owned();
    let summary = non_empty("--summary", &args.summary)?;
    let validation = match (&args.validation, args.exit_code) {
        (Some(cmd), Some(code)) => Some(Validation {
            command: non_empty("--validation", cmd)?,
            exit_code: code,
            extra: Extra::new(),
        }),
        (None, None) => None,
        _ => return Err(Refusal::invalid_input("--validation and --exit-code go together").into()),
    };
    let artifacts = resolve_artifacts(ctx, &args.artifacts)?;
    for url in &args.artifact_urls {
        check_artifact_url(url)?;
    }
    let next_action = args
        .next_action
        .as_deref()
        .map(|n| non_empty("--next-action", n))
        .transpose()?;
    let turn = args
        .turn
        .as_deref()
        .map(|t| non_empty("--turn", t))
        .transpose()?;
    if args.todo.is_none() && args.epoch.is_some() {
        return Err(Refusal::invalid_input(
            "--epoch needs --todo: a goal-level writeback holds no claim",
        )
        .into());
    }
    let nonce = nonce();
    let done = mutate_maybe(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let todo_id = args
            .todo
            .as_deref()
            .map(|q| resolve_todo(gs, q))
            .transpose()?;
        if let Some(id) = &todo_id {
            gate::check_reserved(&gs.todos[id], Some(&agent), GateAction::Writeback)?;
            crate::ops::gate::check_held(ctx, state, goal, id, &agent, GateAction::Writeback)?;
        }
        let gs = state.goals.get_mut(goal).expect("goal exists");
        if let Some(t) = &turn {
            if let Some(old) = gs.runs.all_facts().find(|r| {
                r.kind == RunKind::Writeback
                    && r.agent == Some(agent.as_str())
                    && r.turn == Some(t.as_str())
            }) {
                return Ok(((gs.runs[old.id].clone(), true), None));
            }
            local::check_turn_open(ctx, t)?;
        }
        let standing = match &todo_id {
            Some(id) => {
                let expected = local::expected_epoch(ctx, &agent, id, args.epoch);
                lease::check_writer(&gs.todos[id], &agent, expected, ctx.now)?
            }
            None => lease::Standing::Unclaimed,
        };
        let run_id = ids::derive_id(
            "run_",
            &[goal, "writeback", &agent, &ctx.now.to_string(), &nonce],
        );
        let mut run = Run::new(
            run_id.clone(),
            RunKind::Writeback,
            goal,
            Some(&agent),
            ctx.now,
        );
        run.todo = todo_id.clone();
        run.epoch = match standing {
            lease::Standing::Holder(e) => Some(e),
            lease::Standing::Unclaimed => None,
        };
        run.outcome = Some(args.outcome);
        run.summary = Some(summary.clone());
        run.validation = validation.clone();
        run.artifacts = artifacts.clone();
        run.artifact_urls = args.artifact_urls.clone();
        run.turn = turn.clone();
        let run = gs.add_run(run);
        if let Some(n) = &next_action {
            gs.goal.next_action = Some(n.clone());
            gs.goal.rev = gs.goal.rev.saturating_add(1);
            gs.goal.updated_at = ctx.now;
        }
        let on = todo_id.clone().unwrap_or_else(|| format!("goal {goal}"));
        let mut message = Message::new(
            "writeback",
            format!(
                "writeback {run_id} on {on} by {agent}: {} {}",
                crate::ops::snake(&args.outcome),
                headline(&summary, 50)
            ),
        );
        if let Some(id) = todo_id {
            message = message.trailer("Loopx-Todo", id);
        }
        let message = message.trailer("Loopx-Run", run_id);
        Ok(((run, false), Some(message)))
    })?;
    let (run, replayed) = done.value;
    Ok(WritebackReport {
        accountable: run.outcome.is_some_and(Outcome::is_accountable),
        run,
        replayed,
        commit: done.commit,
    })
}

/// Show run records (writebacks, spends, voids, turns, moved notes),
/// newest first.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct HistoryArgs {
    /// Only records of this kind: writeback, spend, void, turn or note.
    #[arg(long, value_parser = enum_arg::<RunKind>)]
    pub kind: Option<RunKind>,
    /// Only records about this todo (an id or a unique prefix).
    #[arg(long, value_name = "ID")]
    pub todo: Option<String>,
    /// Show at most N records.
    #[arg(
        short = 'n',
        long = "max-count",
        value_name = "N",
        default_value_t = 50
    )]
    pub limit: usize,
    /// Only records from this time on: a day (2026-01-31), a time (RFC
    /// 3339) or a duration ago (7d). Runs archived past the retention
    /// horizon are read back from history for the days asked.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only records up to this time: a day (the whole day), a time or a
    /// duration ago.
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct HistoryReport {
    pub runs: Vec<Run>,
    /// How many more records matched than `--max-count` let through.
    pub more: usize,
}

/// A `--since`/`--until` bound: a day (its first second, or with `end` its
/// last), an RFC 3339 time, or a duration before `now`.
fn when(flag: &str, text: &str, now: Timestamp, end: bool) -> Result<Timestamp> {
    if let Some(seconds) = crate::model::parse_duration(text) {
        return Ok(now.plus_seconds(-seconds));
    }
    if let Ok(day) = chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d") {
        let start = day.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc();
        return Ok(Timestamp::from_unix(
            start.timestamp() + if end { 86_399 } else { 0 },
        ));
    }
    Timestamp::parse(text).ok_or_else(|| {
        Refusal::invalid_input(format!(
            "--{flag} `{text}` is not a day (2026-01-31), a time (RFC 3339) or a duration (7d)"
        ))
        .into()
    })
}

/// Run records, newest first.
pub fn history(ctx: &Context, args: &HistoryArgs) -> Result<HistoryReport> {
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    let todo = args
        .todo
        .as_deref()
        .map(|q| resolve_todo(gs, q))
        .transpose()?;
    let since = args
        .since
        .as_deref()
        .map(|t| when("since", t, ctx.now, false))
        .transpose()?;
    let until = args
        .until
        .as_deref()
        .map(|t| when("until", t, ctx.now, true))
        .transpose()?;
    let mut runs: Vec<Run> = gs.runs.values().cloned().collect();
    if let Some(since) = since {
        let until_day = until.map(Timestamp::day);
        let live: std::collections::BTreeSet<String> = runs.iter().map(|r| r.id.clone()).collect();
        let archived = crate::session::retention::archived_runs(
            ctx,
            &gs.goal,
            &since.day(),
            until_day.as_deref(),
        )?;
        runs.extend(archived.into_iter().filter(|r| !live.contains(&r.id)));
    }
    runs.retain(|r| {
        args.kind.is_none_or(|k| r.kind == k)
            && (todo.is_none() || r.todo == todo)
            && since.is_none_or(|s| r.at >= s)
            && until.is_none_or(|u| r.at <= u)
    });
    runs.sort_by(|a, b| b.added_key().cmp(&a.added_key()));
    let more = runs.len().saturating_sub(args.limit);
    runs.truncate(args.limit);
    Ok(HistoryReport { runs, more })
}
