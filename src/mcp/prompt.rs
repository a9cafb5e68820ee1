//! The prompt: `turn`, the task body for this agent's turn, as
//! `git loopx prompt --runtime …` prints it (`ops::prompt`), with the tool
//! calls to make where the command line has commands.
//!
//! Invariants: reading the prompt writes nothing.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{GetPromptResult, PromptMessage, Role};
use rmcp::{prompt, prompt_router, ErrorData};

use crate::mcp::Server;
use crate::ops::prompt::{self, PromptArgs, Surface};

#[prompt_router(vis = "pub(super)")]
impl Server {
    /// The task body for this agent's turn: the goal, the selected todo, the
    /// exact tool calls to make, and the rules (`git loopx prompt`).
    #[prompt(name = "turn")]
    async fn turn(
        &self,
        Parameters(a): Parameters<PromptArgs>,
    ) -> Result<GetPromptResult, ErrorData> {
        let (value, failed) = self
            .worker
            .json(move |ctx| {
                let runtime = a.runtime.unwrap_or_default();
                Ok((
                    prompt::prompt(ctx, (runtime, Surface::Mcp), &[], a.turn.as_deref())?,
                    None,
                ))
            })
            .await?;
        let message = |key: &str| {
            value
                .pointer(key)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        if failed {
            let text = message("/error/message").unwrap_or_else(|| "refused".to_owned());
            return Err(ErrorData::invalid_params(text, Some(value)));
        }
        let text = message("/prompt").unwrap_or_default();
        let description = format!(
            "git-loopx turn {} for {}",
            message("/turn").unwrap_or_default(),
            self.worker.agent()
        );
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(description),
        )
    }
}
