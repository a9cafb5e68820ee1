//! Writes a person signs: the store builds the commit as usual (detached,
//! moving no ref), `git commit-tree -S` re-makes it with the person's
//! signing key, and the state ref moves to the signed commit by the usual
//! compare-and-swap, deciding again on the new tip when another writer won.

use crate::model::State;
use crate::session::write::Writer;
use crate::session::Context;
use crate::store::{Committed, Message};
use crate::Result;

/// How many times a signed write decides again after losing the race.
const ROUNDS: usize = 20;

/// Like [`crate::session::mutate`], but the commit is signed by git with the
/// person's configured key (`user.signingkey`, `gpg.format`); refused
/// (`git_failed`) when git cannot sign.
pub fn mutate_signed<R>(
    ctx: &Context,
    mut f: impl FnMut(&mut State, &str) -> Result<(R, Message)>,
) -> Result<Committed<R>> {
    ctx.adopt_remote_state()?;
    let writer = Writer::new(ctx);
    for round in 1..=ROUNDS as u32 {
        let (parent, _) = ctx.load()?;
        let mut opened = writer.open(parent.clone())?;
        let goal = ctx.goal(&opened.state)?.goal.id.clone();
        let (value, message) = f(&mut opened.state, &goal)?;
        let message = message.trailer("Loopx-Goal", goal);
        let draft = writer.draft(opened, message)?;
        let Some(unsigned) = draft.detached(&ctx.store, ctx.now)? else {
            return Ok(Committed {
                value,
                commit: None,
                base: Some(parent),
                attempts: round,
            });
        };
        let signed = match crate::git_cmd::signing::sign_commit(ctx.repo_dir(), &unsigned.id().0) {
            Ok(id) => crate::store::Oid(id),
            Err(e) => {
                unsigned.settle(&ctx.store);
                return Err(crate::model::Refusal::new(
                    crate::model::Code::GitFailed,
                    format!("git could not sign the state commit: {e}"),
                )
                .with_hint(
                    "set up commit signing: `git config gpg.format ssh` and \
                     `git config user.signingkey ~/.ssh/id_ed25519.pub` (a key of gate_signers)",
                )
                .into());
            }
        };
        if unsigned.land_as(&ctx.store, &signed, Some(&parent), " (signed)", ctx.now)? {
            writer.landed(&signed);
            return Ok(Committed {
                value,
                commit: Some(signed),
                base: Some(parent),
                attempts: round,
            });
        }
    }
    Err(crate::store::Error::Contended {
        attempts: ROUNDS as u32,
    }
    .into())
}
