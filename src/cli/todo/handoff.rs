//! `git loopx todo handoff`: its flags, and reading a Markdown packet.

use std::io::Read as _;

use crate::cli::Output;
use crate::model::handoff::{parse_markdown, Packet, Tried};
use crate::model::Refusal;
use crate::ops::{lease, Context};
use crate::Result;

/// Pass your lease to another agent (new epoch), with a note and an
/// optional handoff packet for the next agent.
///
/// The packet comes from flags, from a Markdown file (`--packet FILE.md`,
/// or `--packet -` for stdin), or both: flags add to the file. The
/// receiving agent's `prompt` shows it until that agent writes back on the
/// todo; `todo show` and `review` show it too. A new handoff replaces the
/// packet of the last one.
///
/// A Markdown packet has the sections `## Summary`, `## Tried`,
/// `## Next steps`, `## Open questions` and `## Files` (case and common
/// wordings such as "Approaches tried" or "Files to read" do not matter);
/// every section but Summary is a list. Text before the first section,
/// and `## Key decisions` or `## Rationale` sections, are part of the
/// summary; a `# Title` on the first line is skipped; any other heading is
/// refused with its line number.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The todo: its id or a unique prefix of one.
    id: String,
    /// The agent that takes the lease over.
    #[arg(long, value_name = "AGENT")]
    to: String,
    /// What the next agent needs to know (kept as a note on the todo;
    /// default: the first line of the packet's summary).
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// The work done so far (the packet's summary).
    #[arg(long, value_name = "TEXT")]
    summary: Option<String>,
    /// An approach tried and why it failed, as "APPROACH: WHY" (repeatable).
    #[arg(long, value_name = "APPROACH: WHY")]
    tried: Vec<String>,
    /// What the next agent should do next (repeatable, in order).
    #[arg(long = "next-step", value_name = "TEXT")]
    next_step: Vec<String>,
    /// A question still open (repeatable).
    #[arg(long, value_name = "TEXT")]
    question: Vec<String>,
    /// A file the next agent should read, from the top of the repository
    /// (repeatable; kept repository-relative, paths outside it are refused).
    #[arg(long, value_name = "PATH")]
    file: Vec<String>,
    /// A Markdown packet to read first (`-` reads stdin); flags add to it.
    #[arg(long, value_name = "FILE.md")]
    packet: Option<String>,
    /// The new holder's lease length, at most 24h (e.g. 30m, 2h).
    #[arg(long, value_parser = super::ttl_arg, default_value = "45m")]
    ttl: i64,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    epoch: Option<u64>,
}

/// The packet file's text, from the file or stdin.
fn read_packet(source: &str) -> Result<(String, String)> {
    if source == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            Refusal::invalid_input(format!("--packet -: cannot read stdin as UTF-8 text: {e}"))
        })?;
        return Ok(("the packet on stdin".to_owned(), text));
    }
    let text = std::fs::read_to_string(source).map_err(|e| {
        Refusal::invalid_input(format!("--packet {source}: cannot read it: {e}"))
            .with_hint("name a Markdown file, or `-` to read the packet from stdin")
    })?;
    Ok((source.to_owned(), text))
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let mut packet = match &args.packet {
        Some(source) => {
            let (name, text) = read_packet(source)?;
            parse_markdown(&name, &text)?
        }
        None => Packet::default(),
    };
    packet.append(Packet {
        work_summary: args.summary.clone(),
        approaches_tried: args.tried.iter().map(|t| Tried::parse(t)).collect(),
        next_steps: args.next_step.clone(),
        open_questions: args.question.clone(),
        files: args.file.clone(),
    });
    let r = lease::handoff(
        ctx,
        &args.id,
        lease::HandoffArgs {
            to: args.to.clone(),
            note: args.note.clone(),
            packet,
            ttl: args.ttl,
            epoch: args.epoch,
        },
    )?;
    let packet = r
        .todo
        .handoff
        .as_ref()
        .filter(|h| h.has_packet())
        .map(|h| format!(" with a packet: {}", h.describe()))
        .unwrap_or_default();
    Ok(Output::new(
        &r,
        format!(
            "handed {} to {} (epoch {}){packet}\n",
            r.todo.id, r.claim.agent, r.claim.epoch
        ),
    ))
}
