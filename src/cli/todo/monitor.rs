//! `git loopx todo poll`.

use crate::cli::Output;
use crate::ops::{monitor, Context};
use crate::Result;

/// Record a poll of a continuous_monitor and set when it is next due.
///
/// The monitor is next due one cadence (`--every`) from now. By the agent
/// holding its claim if it is claimed, else by any agent or person; the
/// claim is kept. The monitor keeps its last 20 polls.
#[derive(Debug, Clone, clap::Args)]
pub struct PollArgs {
    /// The monitor: its id or a unique prefix of one.
    id: String,
    /// Nothing needs work (the default).
    #[arg(long, conflicts_with = "material")]
    quiet: bool,
    /// The poll found something that needs work (add --next to queue it).
    #[arg(long)]
    material: bool,
    /// What the poll saw (kept with the poll).
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// With --material: add an agent todo for the work found, in the same commit.
    #[arg(long, value_name = "TEXT", requires = "material")]
    next: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    epoch: Option<u64>,
}

pub fn poll(ctx: &Context, args: &PollArgs) -> Result<Output> {
    let r = monitor::poll(
        ctx,
        &args.id,
        &monitor::PollArgs {
            material: args.material && !args.quiet,
            note: args.note.clone(),
            next: args.next.clone(),
            epoch: args.epoch,
        },
    )?;
    let due = r
        .todo
        .monitor
        .as_ref()
        .and_then(|m| m.next_due_at)
        .map_or(String::new(), |d| d.to_string());
    let what = if r.poll.material { "material" } else { "quiet" };
    let mut text = format!("polled {} ({what}): next due {due}\n", r.todo.id);
    if let Some(f) = &r.follow_up {
        text.push_str(&format!("added {}: {}\n", f.id, f.text));
    }
    Ok(Output::new(&r, text))
}
