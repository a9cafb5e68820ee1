//! `git loopx todo handoff`: reading a Markdown packet.

use std::io::Read as _;

use crate::cli::Output;
use crate::model::Refusal;
use crate::ops::lease;
use crate::session::Context;
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
    #[command(flatten)]
    args: lease::HandoffArgs,
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
    let markdown = args.args.packet.as_deref().map(read_packet).transpose()?;
    let markdown = markdown
        .as_ref()
        .map(|(name, text)| (name.as_str(), text.as_str()));
    let r = lease::handoff(ctx, &args.args, markdown)?;
    let packet = r
        .todo
        .handoff
        .as_ref()
        .filter(|h| h.has_packet())
        .map(|h| format!(" with a packet: {}", h.describe()))
        .unwrap_or_default();
    let text = format!(
        "handed {} to {} (epoch {}){packet}\n",
        r.todo.id, r.claim.agent, r.claim.epoch
    );
    Ok(Output::new(r, text))
}
