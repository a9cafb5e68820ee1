//! Saying what to do when there is no loopx state: on a clone whose remote
//! may have `loopx-state` that was never fetched, the answer is to fetch it,
//! not to `init` a second root. Decided from the configuration alone (no
//! network on this path).

use crate::model::{Code, Refusal};
use crate::session::Context;
use crate::store::STATE_REF;
use crate::Error;

/// `err` as it is, unless it is "no loopx state": then with a hint that
/// names the remotes that may hold it. (A remote-tracking
/// `refs/remotes/<remote>/loopx-state` is read by every command, so when
/// this error is raised none exists.)
pub fn explain(ctx: &Context, err: Error) -> Error {
    if !matches!(err, Error::Store(crate::store::Error::Missing)) {
        return err;
    }
    let remotes = ctx.store.remote_fetch_refspecs();
    match hint(&remotes) {
        Some(hint) => Refusal::new(Code::StateMissing, err.to_string())
            .with_hint(hint)
            .into(),
        None => err,
    }
}

/// The hint for these remotes and their fetch refspecs; `None` without remotes.
pub fn hint(remotes: &[(String, Vec<String>)]) -> Option<String> {
    let (name, specs) = remotes
        .iter()
        .find(|(name, _)| name == "origin")
        .or_else(|| remotes.first())?;
    let fetch = if specs.iter().any(|s| fetches(s, STATE_REF)) {
        format!(" (or `git fetch {name}`)")
    } else {
        String::new()
    };
    Some(format!(
        "if `{name}` has loopx-state that was not fetched yet, run `git loopx sync{}`{fetch} \
         to get it; to start new state here instead: `git loopx init --objective \"…\"`",
        if name == "origin" {
            String::new()
        } else {
            format!(" --remote {name}")
        }
    ))
}

/// Whether fetch refspec `spec` (`[+]src[:dst]`, one `*` at most) takes
/// `reference` from the remote into a remote-tracking ref.
pub fn fetches(spec: &str, reference: &str) -> bool {
    let spec = spec.strip_prefix('+').unwrap_or(spec);
    if spec.starts_with('^') {
        return false;
    }
    let Some((src, dst)) = spec.split_once(':') else {
        return false;
    };
    if dst.is_empty() {
        return false;
    }
    match src.split_once('*') {
        Some((before, after)) => {
            reference.len() >= before.len() + after.len()
                && reference.starts_with(before)
                && reference.ends_with(after)
        }
        None => src == reference,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refspecs_that_take_the_state_branch() {
        let r = "refs/heads/loopx-state";
        assert!(fetches("+refs/heads/*:refs/remotes/origin/*", r));
        assert!(fetches(
            "refs/heads/loopx-state:refs/remotes/o/loopx-state",
            r
        ));
        assert!(fetches("+refs/heads/loopx-*:refs/remotes/o/loopx-*", r));
        assert!(!fetches("+refs/heads/main:refs/remotes/origin/main", r));
        assert!(!fetches("refs/heads/*", r));
        assert!(!fetches("^refs/heads/loopx-state", r));
        assert!(!fetches("+refs/tags/*:refs/tags/*", r));
    }

    #[test]
    fn hint_names_sync_and_fetch_only_when_the_refspec_covers_it() {
        let all = vec![(
            "origin".to_owned(),
            vec!["+refs/heads/*:refs/remotes/origin/*".to_owned()],
        )];
        let h = hint(&all).unwrap();
        assert!(h.contains("git loopx sync`"), "{h}");
        assert!(h.contains("git fetch origin"), "{h}");
        let single = vec![(
            "up".to_owned(),
            vec!["+refs/heads/main:refs/remotes/up/main".to_owned()],
        )];
        let h = hint(&single).unwrap();
        assert!(h.contains("git loopx sync --remote up"), "{h}");
        assert!(!h.contains("git fetch"), "{h}");
        assert_eq!(hint(&[]), None);
    }
}
