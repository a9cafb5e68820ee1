//! Writes a person signs: the store builds the commit as usual (detached,
//! moving no ref), `git commit-tree -S` re-makes it with the person's
//! signing key, and the state ref moves to the signed commit by the usual
//! compare-and-swap, deciding again on the new tip when another writer won.

use crate::codec;
use crate::model::State;
use crate::ops::Context;
use crate::store::{cache, transaction, Checked, Committed, Message, STATE_REF};
use crate::Result;

/// How many times a signed write decides again after losing the race.
const ROUNDS: usize = 20;

/// Like [`crate::ops::mutate`], but the commit is signed by git with the
/// person's configured key (`user.signingkey`, `gpg.format`); refused
/// (`git_failed`) when git cannot sign.
pub fn mutate_signed<R>(
    ctx: &Context,
    mut f: impl FnMut(&mut State, &str) -> Result<(R, Message)>,
) -> Result<Committed<R>> {
    ctx.adopt_remote_state()?;
    for round in 1..=ROUNDS as u32 {
        let (parent, mut state) = ctx.load()?;
        let skeleton = codec::Skeleton::of(&state);
        let goal = ctx.goal(&state)?.goal.id.clone();
        let (value, message) = f(&mut state, &goal)?;
        let message = message.trailer("Loopx-Goal", goal);
        let changes = transaction::written(Some(&skeleton), &state);
        let checked = Checked::new(&ctx.store, &[&parent], changes, &message)?;
        let Some(unsigned) = ctx.store.commit_detached(&parent, &checked, ctx.now)? else {
            return Ok(Committed {
                value,
                commit: None,
                base: Some(parent),
                attempts: round,
            });
        };
        let signed = crate::git_cmd::signing::sign_commit(ctx.repo_dir(), &unsigned.0);
        let signed = match signed {
            Ok(id) => crate::store::Oid(id),
            Err(e) => {
                ctx.store.settle_detached(&unsigned);
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
        let reflog = format!("loopx: {} (signed)", checked.message().subject);
        let moved = ctx
            .store
            .move_ref(STATE_REF, Some(&parent), &signed, &reflog, ctx.now);
        ctx.store.settle_detached(&unsigned);
        if moved? {
            let changes = checked.changes();
            cache::remember_delta(&ctx.store, &signed, Some(&parent), &state, changes);
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
