//! `git loopx quota …`

use clap::Subcommand;

use crate::cli::Output;
use crate::ops::quota;
use crate::render;
use crate::session::Context;
use crate::Result;

/// The rolling compute quota: spend, void, show.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: QuotaCommand,
}

#[derive(Debug, Subcommand)]
enum QuotaCommand {
    /// Charge this agent's latest unspent accountable writeback (or the one
    /// named). A second spend for the same writeback or turn is a replay.
    Spend(quota::SpendArgs),
    /// Cancel a spend (it stops counting against the window).
    Void {
        /// The spend's run id or a unique prefix.
        run: String,
        /// Why it should not count, for the record.
        #[arg(long, value_name = "TEXT")]
        note: String,
    },
    /// Show the allowance, what is spent, and when the next slot frees.
    Show,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    match &args.command {
        QuotaCommand::Spend(a) => {
            let r = quota::spend(ctx, a)?;
            let verb = if r.replayed { "already spent" } else { "spent" };
            let text = format!(
                "{verb}: {} for {} — {}/{} slots used\n",
                r.spend.id,
                r.spend.writeback.as_deref().unwrap_or("?"),
                r.quota.spent_slots,
                r.quota.allowed_slots
            );
            Ok(Output::new(r, text))
        }
        QuotaCommand::Void { run, note } => {
            let r = quota::void(ctx, run, note)?;
            let text = format!(
                "voided {} — {}/{} slots used\n",
                r.void.spend.as_deref().unwrap_or("?"),
                r.quota.spent_slots,
                r.quota.allowed_slots
            );
            Ok(Output::new(r, text))
        }
        QuotaCommand::Show => {
            let r = quota::show(ctx)?;
            let text = render::text::quota(&r);
            Ok(Output::new(r, text))
        }
    }
}
