//! The tools: each is the CLI subcommand of the same meaning, as one call
//! into the same `ops` function, answering with the object `--json` prints.
//!
//! Invariants: a tool decides nothing itself. Its arguments are the
//! command's own struct (`ops::args`), held to the command's flag rules
//! before the tool runs ([`Parameters`]), so nothing is written.

use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};

use crate::mcp::params::Parameters;
use crate::mcp::Server;
use crate::ops::{
    diff, done, gate, goal, lease, monitor, quota, should_run, status, todo, writeback,
};

type Answer = std::result::Result<CallToolResult, ErrorData>;

#[tool_router(router = lease_tools, vis = "pub(super)")]
impl Server {
    /// The per-turn decision (`git loopx should-run`): whether this agent
    /// should run a turn now, and on which todo. With `turn`, a turn that
    /// runs is recorded once under that key.
    #[tool]
    async fn should_run(&self, Parameters(a): Parameters<should_run::ShouldRunArgs>) -> Answer {
        self.answer(move |ctx| should_run::should_run(ctx, &a.capabilities, a.turn.as_deref()))
            .await
    }

    /// The next ready todo for this agent (`git loopx todo next`); with
    /// `claim`, claimed in the same compare-and-swap. Refused with
    /// `nothing_ready` when there is none.
    #[tool]
    async fn next_todo(&self, Parameters(a): Parameters<lease::NextArgs>) -> Answer {
        self.answer(move |ctx| Ok((lease::next(ctx, &a)?, None)))
            .await
    }

    /// Take a lease on a todo (`git loopx todo claim`). Another agent's
    /// live lease refuses it with `claim_conflict`.
    #[tool]
    async fn claim(&self, Parameters(a): Parameters<lease::ClaimArgs>) -> Answer {
        self.answer(move |ctx| Ok((lease::claim(ctx, &a)?, None)))
            .await
    }

    /// Extend your lease, same epoch (`git loopx todo renew`); before half
    /// the lease has run it writes nothing (`renewed: false`).
    #[tool]
    async fn renew(&self, Parameters(a): Parameters<lease::RenewArgs>) -> Answer {
        self.answer(move |ctx| Ok((lease::renew(ctx, &a)?, None)))
            .await
    }

    /// Give up your lease (`git loopx todo release`); the epoch is kept.
    #[tool]
    async fn release(&self, Parameters(a): Parameters<lease::ReleaseArgs>) -> Answer {
        self.answer(move |ctx| Ok((lease::release(ctx, &a)?, None)))
            .await
    }

    /// Pass your lease to another registered agent, new epoch, with a note
    /// and a handoff packet (`git loopx todo handoff`).
    #[tool]
    async fn handoff(&self, Parameters(a): Parameters<lease::HandoffArgs>) -> Answer {
        self.answer(move |ctx| {
            let markdown = a.packet.as_deref().map(|text| ("the packet", text));
            Ok((lease::handoff(ctx, &a, markdown)?, None))
        })
        .await
    }
}

#[tool_router(router = record_tools, vis = "pub(super)")]
impl Server {
    /// Record delivered work on a todo you hold (or an unclaimed one), or on
    /// the goal after a planning turn (`git loopx writeback`).
    #[tool]
    async fn writeback(&self, Parameters(a): Parameters<writeback::WritebackArgs>) -> Answer {
        self.answer(move |ctx| Ok((writeback::writeback(ctx, &a)?, None)))
            .await
    }

    /// Complete a todo (`git loopx todo done`): its `validate` command runs
    /// first for this agent, without a shell, and a failure refuses
    /// completion (recorded, with the output's last lines in `validation`).
    #[tool]
    async fn complete_todo(&self, Parameters(a): Parameters<done::DoneArgs>) -> Answer {
        self.answer(move |ctx| done::done(ctx, &a, &mut |_| {}))
            .await
    }

    /// Charge this agent's latest unspent accountable writeback, or the
    /// turn's or the one named (`git loopx quota spend`); a second spend for
    /// the same writeback or turn is a replay.
    #[tool]
    async fn spend(&self, Parameters(a): Parameters<quota::SpendArgs>) -> Answer {
        self.answer(move |ctx| Ok((quota::spend(ctx, &a)?, None)))
            .await
    }

    /// Add a todo to the goal (`git loopx todo add`).
    #[tool]
    async fn add_todo(&self, Parameters(a): Parameters<todo::AddArgs>) -> Answer {
        self.answer(move |ctx| Ok((todo::add(ctx, &a)?, None)))
            .await
    }

    /// Change a todo's status (open, blocked, deferred), priority, text or
    /// resume condition, or add a note (`git loopx todo update`): what a
    /// replan turn does to blocked todos.
    #[tool]
    async fn update_todo(&self, Parameters(a): Parameters<todo::UpdateArgs>) -> Answer {
        self.answer(move |ctx| Ok((todo::update(ctx, &a)?, None)))
            .await
    }

    /// Record a poll of a continuous_monitor, quiet or material, and set
    /// when it is next due (`git loopx todo poll`); with `material`, `next`
    /// adds a todo for the work found in the same commit.
    #[tool]
    async fn poll_monitor(&self, Parameters(a): Parameters<monitor::PollArgs>) -> Answer {
        self.answer(move |ctx| Ok((monitor::poll(ctx, &a)?, None)))
            .await
    }

    /// Mark the goal done, the explicit end of its work (`git loopx goal
    /// done`): should_run then answers `terminal_no_followup`. Refused when
    /// the goal keeps that decision for a person (`person_only`).
    #[tool]
    async fn complete_goal(&self, Parameters(a): Parameters<goal::DoneArgs>) -> Answer {
        self.answer(move |ctx| Ok((goal::done(ctx, &a)?, None)))
            .await
    }

    /// Ask the person a question (`git loopx gate add`): a gate. Answering
    /// it is not a tool; the person does, with `git loopx gate resolve`.
    #[tool]
    async fn add_gate(&self, Parameters(a): Parameters<gate::AddArgs>) -> Answer {
        self.answer(move |ctx| Ok((gate::add(ctx, &a)?, None)))
            .await
    }

    /// The goal, what needs the person, who holds what, quota and recent
    /// evidence (`git loopx status`).
    #[tool]
    async fn status(&self, Parameters(a): Parameters<status::StatusArgs>) -> Answer {
        self.answer(move |ctx| {
            let report = if a.all {
                serde_json::to_value(status::status_all(ctx)?)
            } else {
                serde_json::to_value(status::status(ctx)?)
            };
            Ok((
                report.map_err(|e| crate::Error::invalid_input(e.to_string()))?,
                None,
            ))
        })
        .await
    }

    /// What changed in the state, as facts (`git loopx diff`): by default
    /// the last state commit against its parent.
    #[tool]
    async fn diff(&self, Parameters(a): Parameters<diff::DiffArgs>) -> Answer {
        self.answer(move |ctx| Ok((diff::diff(ctx, a.range.as_deref(), a.patch)?, None)))
            .await
    }
}
