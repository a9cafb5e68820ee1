//! The ops thread: owns the server's one [`Context`] (its store keeps the
//! parsed state between calls, as any long-lived writer's does) and runs the
//! calls one at a time, each at the clock's time when it starts.
//!
//! Invariants: the agent is checked once, when the thread opens the
//! repository, and never changes; a call that panics is answered with an
//! internal error and does not take the server down.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;

use rmcp::ErrorData;
use serde_json::Value;

use crate::mcp::Options;
use crate::session::Context;
use crate::{render, Error, Result};

type Job = Box<dyn FnOnce(&mut Context) + Send>;

pub struct Worker {
    jobs: mpsc::Sender<Job>,
    agent: String,
}

impl Worker {
    /// Opens the repository on a new thread and waits until it is open:
    /// a repository problem, or no agent, is the server's start-up error.
    pub fn start(options: &Options) -> Result<Worker> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready, opened) = mpsc::channel::<Result<String>>();
        let dir = options.dir.clone();
        let (agent, goal) = (options.agent.clone(), options.goal.clone());
        let (clock, policy) = (options.clock, options.policy.clone());
        std::thread::Builder::new()
            .name("loopx-mcp-ops".to_owned())
            .spawn(move || {
                let open = || -> Result<Context> {
                    let mut ctx = Context::open(&dir, clock()?, agent, goal)?;
                    ctx.require_agent()?;
                    ctx.set_policy(policy);
                    Ok(ctx)
                };
                let mut ctx = match open() {
                    Ok(ctx) => ctx,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(ctx.agent().unwrap_or_default().to_owned()));
                for job in inbox {
                    // LOOPX_NOW was read once at start and does not change.
                    if let Ok(now) = clock() {
                        ctx.now = now;
                    }
                    job(&mut ctx);
                }
            })
            .map_err(|e| Error::invalid_input(format!("cannot start the ops thread: {e}")))?;
        let agent = opened
            .recv()
            .map_err(|_| Error::invalid_input("the ops thread stopped while opening"))??;
        Ok(Worker { jobs, agent })
    }

    /// The acting agent, fixed for the server's life.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Runs `op` on the ops thread and hands back what it returned.
    pub async fn run<R, F>(&self, op: F) -> std::result::Result<R, ErrorData>
    where
        R: Send + 'static,
        F: FnOnce(&Context) -> R + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |ctx| {
            let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(|| op(ctx))));
        });
        self.jobs
            .send(job)
            .map_err(|_| ErrorData::internal_error("the ops thread has stopped", None))?;
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_)) => Err(ErrorData::internal_error(
                "git-loopx failed on this call (a bug: run it with the CLI to see where)",
                None,
            )),
            Err(_) => Err(ErrorData::internal_error(
                "the ops thread stopped during the call",
                None,
            )),
        }
    }

    /// Runs `op` and turns its result into the object `--json` prints,
    /// and whether that object reports a failure.
    pub async fn json<R, F>(&self, op: F) -> std::result::Result<(Value, bool), ErrorData>
    where
        R: serde::Serialize,
        F: FnOnce(&Context) -> Result<(R, Option<Error>)> + Send + 'static,
    {
        self.run(move |ctx| match op(ctx) {
            Ok((report, failure)) => {
                let value = serde_json::to_value(&report).expect("reports serialize");
                (render::ok_json(value, failure.as_ref()), failure.is_some())
            }
            Err(err) => {
                let err = crate::ops::missing::explain(ctx, err);
                (render::error_json(&err, None), true)
            }
        })
        .await
    }
}
