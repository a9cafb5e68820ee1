//! The checks every state commit passes, whatever publishes it
//! ([`Checked`]), what a write may let through them ([`Policy`]), and the
//! file changes a decision made.

use crate::codec;
use crate::model::{leaks, State};
use crate::store::{Error, FileChange, Message, Oid, Repository};

/// What a write may commit that its checks would refuse otherwise: the
/// credential rules ([`leaks::rules`]) whose new hits pass
/// (`--allow-secret-pattern`). A command holds one and hands it to each
/// write it makes; the default lets nothing through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    allowed_leaks: Vec<&'static str>,
}

impl Policy {
    /// Lets through the credential rules among `names` (names that are
    /// not a rule are ignored).
    pub fn allowing(names: &[impl AsRef<str>]) -> Self {
        Policy {
            allowed_leaks: leaks::rules()
                .filter(|rule| names.iter().any(|n| n.as_ref() == *rule))
                .collect(),
        }
    }

    /// Whether a new hit of credential rule `rule` passes.
    pub fn allows(&self, rule: &str) -> bool {
        self.allowed_leaks.contains(&rule)
    }

    /// The credential rules whose new hits pass.
    pub fn allowed_leaks(&self) -> &[&'static str] {
        &self.allowed_leaks
    }
}

/// A change that passed every check a write makes, and the only thing the
/// store commits ([`Repository::write_commit`], and its detached and merge
/// commits all take one): whatever publishes a write — a compare-and-swap
/// of the local ref, a commit pushed before the ref moves, a signed commit,
/// a sync merge, a repair — cannot skip a check.
///
/// The checks, in order: the files read back ([`check_readable`]); the
/// files and the message add no credential the parents did not hold
/// ([`refuse_new_leaks`]), and a rule `--allow-secret-pattern` let through
/// is named in a `Loopx-Allowed-Secret-Pattern` trailer ([`with_allowances`]).
#[derive(Debug)]
pub struct Checked {
    changes: Vec<FileChange>,
    message: Message,
}

impl Checked {
    /// Checks `changes` and `message` for a commit whose parents are
    /// `bases` (none for a root commit), letting through what `policy`
    /// allows.
    pub fn new(
        repo: &Repository,
        policy: &Policy,
        bases: &[&Oid],
        changes: Vec<FileChange>,
        message: &Message,
    ) -> Result<Self, Error> {
        check_readable(&changes)?;
        let passed = refuse_new_leaks(repo, policy, bases, &changes, message)?;
        let message = with_allowances(message, &passed).unwrap_or_else(|| message.clone());
        Ok(Checked { changes, message })
    }

    pub fn changes(&self) -> &[FileChange] {
        &self.changes
    }

    /// The message, with its allowance trailers.
    pub fn message(&self) -> &Message {
        &self.message
    }
}

/// Refuses changes a reader would refuse (a file too large, a time out of
/// range): nothing is ever committed that would make the state unreadable.
fn check_readable(changes: &[FileChange]) -> Result<(), Error> {
    for change in changes {
        if let FileChange::Upsert { path, bytes } = change {
            codec::check_file(path, bytes).map_err(Error::Unwritable)?;
        }
    }
    Ok(())
}

/// Refuses a write that would commit a credential (SPEC §5, `leak_detected`):
/// the changed files' bytes and the commit message are scanned
/// ([`leaks::scan`]). A credential the file already held at one of `bases`
/// (the parents: a merge has several; one that arrived from a remote or
/// predates the scan) does not block the write:
/// refusing it would make that todo unwritable, even to clear it, and the
/// write adds nothing new. `sync` still refuses to push it, and `redact`
/// removes it from unpushed history.
///
/// A new hit of a rule the write's policy allows ([`Policy::allows`]) passes;
/// the rules that let one through are returned, for the commit's
/// `Loopx-Allowed-Secret-Pattern` trailers ([`with_allowances`]).
fn refuse_new_leaks(
    repo: &Repository,
    policy: &Policy,
    bases: &[&Oid],
    changes: &[FileChange],
    message: &Message,
) -> Result<Vec<&'static str>, Error> {
    let mut passed: Vec<&'static str> = Vec::new();
    let mut pass = |kind: &'static str| {
        let ok = policy.allows(kind);
        if ok && !passed.contains(&kind) {
            passed.push(kind);
        }
        ok
    };
    // Each changed file as every base holds it, read once when needed.
    let mut old: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut old_at = |i: usize| -> Result<Vec<Vec<u8>>, Error> {
        if old.is_empty() {
            old = changes
                .iter()
                .map(|c| {
                    let path = match c {
                        FileChange::Upsert { path, .. } | FileChange::Remove { path } => path,
                    };
                    let mut held = Vec::new();
                    for base in bases {
                        held.extend(repo.read_file(base, path)?);
                    }
                    Ok(held)
                })
                .collect::<Result<_, Error>>()?;
        }
        Ok(old[i].clone())
    };
    let held_before = |secret: &str, versions: &[Vec<u8>]| {
        versions
            .iter()
            .any(|b| String::from_utf8_lossy(b).contains(secret))
    };
    for (i, change) in changes.iter().enumerate() {
        let FileChange::Upsert { path, bytes } = change else {
            continue;
        };
        for leak in leaks::scan_bytes(bytes) {
            if !held_before(&leak.secret, &old_at(i)?) && !pass(leak.kind) {
                let text = String::from_utf8_lossy(bytes);
                let line = leaks::lines_of(&text, &leak.secret)[0];
                let place = match field_of(&text, &leak.secret) {
                    Some(field) => format!("{path}:{line} (field `{field}`)"),
                    None => format!("{path}:{line}"),
                };
                return Err(Error::Leak {
                    place,
                    what: leak.describe(),
                });
            }
        }
    }
    for leak in leaks::scan(&message.render()) {
        let mut known = false;
        for i in 0..changes.len() {
            known |= held_before(&leak.secret, &old_at(i)?);
        }
        if !known && !pass(leak.kind) {
            return Err(Error::Leak {
                place: format!(
                    "the message of this `{}` commit",
                    leak_free_subject(message)
                ),
                what: leak.describe(),
            });
        }
    }
    Ok(passed)
}

/// `message` with a `Loopx-Allowed-Secret-Pattern` trailer for each rule
/// `--allow-secret-pattern` let through, so a reviewer sees the allowance.
fn with_allowances(message: &Message, passed: &[&'static str]) -> Option<Message> {
    if passed.is_empty() {
        return None;
    }
    let mut message = message.clone();
    for rule in passed {
        message = message.trailer("Loopx-Allowed-Secret-Pattern", *rule);
    }
    Some(message)
}

/// The YAML key whose value holds `secret` in a file we wrote: the nearest
/// `key:` at or above the line it starts on.
fn field_of(text: &str, secret: &str) -> Option<String> {
    let at = text.find(secret)?;
    text[..at]
        .lines()
        .rev()
        .chain(text[at..].lines().take(1))
        .find_map(|line| {
            let line = line.trim_start().trim_start_matches("- ");
            let key = &line[..line.find(':')?];
            (!key.is_empty() && key.bytes().all(|c| c.is_ascii_lowercase() || c == b'_'))
                .then(|| key.to_owned())
        })
}

/// The message's operation, for naming it without repeating its text.
fn leak_free_subject(message: &Message) -> String {
    message
        .trailers
        .iter()
        .find(|(k, _)| *k == "Loopx-Op")
        .map_or_else(String::new, |(_, v)| v.clone())
}

/// What a mutation wrote, as file changes (see [`codec::written_files`]).
pub fn written(before: Option<&codec::Skeleton>, new: &State) -> Vec<FileChange> {
    to_changes(codec::written_files(before, new))
}

fn to_changes(edits: Vec<codec::FileEdit>) -> Vec<FileChange> {
    edits
        .into_iter()
        .map(|(path, bytes)| match bytes {
            Some(bytes) => FileChange::Upsert { path, bytes },
            None => FileChange::Remove { path },
        })
        .collect()
}

/// The file changes that turn `old` into `new`. Files outside the layout are
/// never touched, and neither are entities that did not change.
pub fn changes(old: Option<&State>, new: &State) -> Vec<FileChange> {
    to_changes(codec::changed_files(old, new))
}
