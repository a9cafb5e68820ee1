//! The tools: each is the CLI subcommand of the same meaning, as one call
//! into the same `ops` function, answering with the object `--json` prints.
//!
//! Invariants: a tool decides nothing itself. The few checks here are the
//! ones clap makes for the CLI (flags that go together or exclude each
//! other, durations), refused before any ops call, so nothing is written.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};

use crate::mcp::{args, Server};
use crate::model::handoff::{parse_markdown, Packet, Tried};
use crate::model::{lease::DEFAULT_TTL, parse_duration, Priority, Refusal, Role};
use crate::ops::{done, gate, lease, quota, should_run, status, todo, writeback};
use crate::Result;

type Answer = std::result::Result<CallToolResult, ErrorData>;

/// A duration argument in seconds (`ttl`, `validate_timeout`), as the CLI
/// parses its flags.
fn seconds(field: &str, text: Option<&str>, default: i64) -> Result<i64> {
    match text {
        None => Ok(default),
        Some(text) => parse_duration(text).ok_or_else(|| {
            Refusal::invalid_input(format!(
                "{field} `{text}` is not a duration like 90s, 30m, 2h"
            ))
            .into()
        }),
    }
}

/// Refuses `message` when `bad` (a pair of arguments clap would refuse).
fn usage(bad: bool, message: &str) -> Result<()> {
    if bad {
        return Err(Refusal::invalid_input(message).into());
    }
    Ok(())
}

#[tool_router(router = lease_tools, vis = "pub(super)")]
impl Server {
    /// The per-turn decision (`git loopx should-run`): whether this agent
    /// should run a turn now, and on which todo. With `turn`, a turn that
    /// runs is recorded once under that key.
    #[tool]
    async fn should_run(&self, Parameters(a): Parameters<args::ShouldRun>) -> Answer {
        self.answer(move |ctx| should_run::should_run(ctx, &a.capabilities, a.turn.as_deref()))
            .await
    }

    /// The next ready todo for this agent (`git loopx todo next`); with
    /// `claim`, claimed in the same compare-and-swap. Refused with
    /// `nothing_ready` when there is none.
    #[tool]
    async fn next_todo(&self, Parameters(a): Parameters<args::NextTodo>) -> Answer {
        self.answer(move |ctx| {
            let ttl = seconds("ttl", a.ttl.as_deref(), DEFAULT_TTL)?;
            usage(a.sync && !a.claim, "sync needs claim")?;
            usage(a.remote.is_some() && !a.sync, "remote needs sync")?;
            let r = if a.sync {
                lease::ClaimReportOrTodo::Claimed(lease::next_sync(
                    ctx,
                    &a.capabilities,
                    ttl,
                    a.remote.as_deref(),
                )?)
            } else {
                lease::next(ctx, &a.capabilities, a.claim, ttl)?
            };
            Ok((r, None))
        })
        .await
    }

    /// Take a lease on a todo (`git loopx todo claim`). Another agent's
    /// live lease refuses it with `claim_conflict`.
    #[tool]
    async fn claim(&self, Parameters(a): Parameters<args::Claim>) -> Answer {
        self.answer(move |ctx| {
            let ttl = seconds("ttl", a.ttl.as_deref(), DEFAULT_TTL)?;
            usage(a.remote.is_some() && !a.sync, "remote needs sync")?;
            let r = if a.sync {
                lease::claim_sync(ctx, &a.todo, ttl, a.remote.as_deref())?
            } else {
                lease::claim(ctx, &a.todo, ttl)?
            };
            Ok((r, None))
        })
        .await
    }

    /// Extend your lease, same epoch (`git loopx todo renew`); before half
    /// the lease has run it writes nothing (`renewed: false`).
    #[tool]
    async fn renew(&self, Parameters(a): Parameters<args::Renew>) -> Answer {
        self.answer(move |ctx| {
            let ttl = seconds("ttl", a.ttl.as_deref(), DEFAULT_TTL)?;
            Ok((lease::renew(ctx, &a.todo, ttl, a.epoch)?, None))
        })
        .await
    }

    /// Give up your lease (`git loopx todo release`); the epoch is kept.
    #[tool]
    async fn release(&self, Parameters(a): Parameters<args::Release>) -> Answer {
        self.answer(move |ctx| Ok((lease::release(ctx, &a.todo, a.epoch, false)?, None)))
            .await
    }

    /// Pass your lease to another registered agent, new epoch, with a note
    /// and a handoff packet (`git loopx todo handoff`).
    #[tool]
    async fn handoff(&self, Parameters(a): Parameters<args::Handoff>) -> Answer {
        self.answer(move |ctx| {
            let ttl = seconds("ttl", a.ttl.as_deref(), DEFAULT_TTL)?;
            let mut packet = match &a.packet {
                Some(text) => parse_markdown("the packet", text)?,
                None => Packet::default(),
            };
            packet.append(Packet {
                work_summary: a.summary,
                approaches_tried: a.tried.iter().map(|t| Tried::parse(t)).collect(),
                next_steps: a.next_steps,
                open_questions: a.questions,
                files: a.files,
            });
            let r = lease::handoff(
                ctx,
                &a.todo,
                lease::HandoffArgs {
                    to: a.to,
                    note: a.note,
                    packet,
                    ttl,
                    epoch: a.epoch,
                },
            )?;
            Ok((r, None))
        })
        .await
    }
}

#[tool_router(router = record_tools, vis = "pub(super)")]
impl Server {
    /// Record delivered work on a todo you hold (or an unclaimed one), or on
    /// the goal after a planning turn (`git loopx writeback`).
    #[tool]
    async fn writeback(&self, Parameters(a): Parameters<args::Writeback>) -> Answer {
        self.answer(move |ctx| {
            usage(
                a.validation.is_some() != a.exit_code.is_some(),
                "validation and exit_code go together",
            )?;
            let r = writeback::writeback(
                ctx,
                &writeback::WritebackArgs {
                    todo: a.todo,
                    outcome: a.outcome,
                    summary: a.summary,
                    validation: a.validation,
                    exit_code: a.exit_code,
                    artifacts: a.artifacts,
                    artifact_urls: a.artifact_urls,
                    next_action: a.next_action,
                    turn: a.turn,
                    epoch: a.epoch,
                },
            )?;
            Ok((r, None))
        })
        .await
    }

    /// Complete a todo (`git loopx todo done`): its `validate` command runs
    /// first, without a shell, and a failure refuses completion (recorded,
    /// with the output's last lines in `validation`).
    #[tool]
    async fn complete_todo(&self, Parameters(a): Parameters<args::CompleteTodo>) -> Answer {
        self.answer(move |ctx| {
            usage(
                a.next.is_some() && a.no_follow_up,
                "next and no_follow_up exclude each other",
            )?;
            usage(
                a.next_agent.is_some() && a.next.is_none(),
                "next_agent needs next",
            )?;
            let timeout = match &a.validate_timeout {
                Some(t) => Some(seconds("validate_timeout", Some(t), 0)?),
                None => None,
            };
            let args = done::DoneArgs {
                evidence: a.evidence,
                next: a.next,
                next_agent: a.next_agent,
                epoch: a.epoch,
                timeout: timeout.map(|s| std::time::Duration::from_secs(s.max(1) as u64)),
                no_follow_up: a.no_follow_up,
            };
            done::done(ctx, &a.todo, &args, &mut |_| {})
        })
        .await
    }

    /// Charge this agent's latest unspent accountable writeback, or the
    /// turn's or the one named (`git loopx quota spend`); a second spend for
    /// the same writeback or turn is a replay.
    #[tool]
    async fn spend(&self, Parameters(a): Parameters<args::Spend>) -> Answer {
        self.answer(move |ctx| {
            usage(
                a.turn.is_some() && a.writeback.is_some(),
                "turn and writeback exclude each other",
            )?;
            let r = quota::spend(
                ctx,
                a.turn.as_deref(),
                a.writeback.as_deref(),
                a.slots.unwrap_or(1),
            )?;
            Ok((r, None))
        })
        .await
    }

    /// Add a todo to the goal (`git loopx todo add`).
    #[tool]
    async fn add_todo(&self, Parameters(a): Parameters<args::AddTodo>) -> Answer {
        self.answer(move |ctx| {
            let r = todo::add(
                ctx,
                &todo::AddArgs {
                    text: a.text,
                    role: a.role.unwrap_or(Role::Agent),
                    class: a.class,
                    priority: a.priority.unwrap_or(Priority::P2),
                    requires_capabilities: a.requires_capabilities,
                    exclude_agents: a.exclude_agents,
                    resume_when: a.resume_when,
                    validate: a.validate,
                    monitor: crate::ops::monitor::MonitorArgs {
                        every: a.every,
                        until: a.until,
                        watch_only: a.watch_only,
                    },
                },
            )?;
            Ok((r, None))
        })
        .await
    }

    /// Ask the person a question (`git loopx gate add`): a gate. Answering
    /// it is not a tool; the person does, with `git loopx gate resolve`.
    #[tool]
    async fn add_gate(&self, Parameters(a): Parameters<args::AddGate>) -> Answer {
        self.answer(move |ctx| {
            let r = gate::add(
                ctx,
                &gate::AddArgs {
                    question: a.question,
                    blocks_agent: a.blocks_agent,
                    unblocks: a.unblocks,
                    priority: None,
                },
            )?;
            Ok((r, None))
        })
        .await
    }

    /// The goal, what needs the person, who holds what, quota and recent
    /// evidence (`git loopx status`).
    #[tool]
    async fn status(&self, Parameters(_): Parameters<args::NoArgs>) -> Answer {
        self.answer(move |ctx| Ok((status::status(ctx)?, None)))
            .await
    }

    /// What changed in the state, as facts (`git loopx diff`): by default
    /// the last state commit against its parent.
    #[tool]
    async fn diff(&self, Parameters(a): Parameters<args::Diff>) -> Answer {
        self.answer(move |ctx| {
            Ok((
                crate::ops::diff::diff(ctx, a.range.as_deref(), a.patch)?,
                None,
            ))
        })
        .await
    }
}
