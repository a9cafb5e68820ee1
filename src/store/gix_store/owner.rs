//! git's ownership rule (CVE-2022-24765): a repository whose parts belong
//! to another user is refused unless a `safe.directory` the current user
//! wrote allows it, as git refuses it with "detected dubious ownership".
//!
//! What is checked is what git checks: the `.git` file of a worktree that
//! has one, the worktree's top level and the git directory (for a bare
//! repository, or a command started inside the git directory, the git
//! directory alone), and, as gix does, the common directory of a linked
//! worktree, whose config the commands read. As root, a part owned by root
//! or by `SUDO_UID` is the user's. `safe.directory` is read from protected
//! config only — system, global, and the command line (`git -c`,
//! `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`) — never from the
//! repository: `*` allows every repository, an empty value clears what came
//! before, a value ending in `/*` allows every repository below it, and
//! paths are compared once resolved.
//!
//! gix has the rule too (`open::Options::bail_if_untrusted`), but it reads
//! no command-line config (`git -c safe.directory=…` would not count), it
//! takes `SUDO_UID` for any user, and its refusal names neither owner; so
//! gix opens the repository with reduced trust (nothing of its config is
//! used before this check) and the rule is made here, with gix's config
//! files, includes and path interpolation.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice as _;

use crate::store::Error;

/// Refuses `repo`, discovered from `start`, when git would.
pub(super) fn check(repo: &gix::Repository, start: &Path) -> Result<(), Error> {
    let euid = rustix::process::geteuid().as_raw();
    let sudo_uid = std::env::var("SUDO_UID").ok();
    let not_owned = |parts: Vec<PathBuf>| {
        parts.into_iter().find_map(|part| {
            let owner = std::fs::symlink_metadata(&part).ok().map(|m| m.uid());
            let user = owner.map_or(euid, |owner| users_own(owner, euid, sudo_uid.as_deref()));
            (owner != Some(user)).then_some((part, owner, user))
        })
    };
    let git_dir = repo.git_dir();
    let parts = |worktree: Option<&Path>| {
        let mut parts: Vec<PathBuf> = Vec::new();
        if let Some(worktree) = worktree {
            let dot_git = worktree.join(".git");
            if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
                parts.push(dot_git);
            }
            parts.push(worktree.to_owned());
        }
        parts.push(git_dir.to_owned());
        parts.push(repo.common_dir().to_owned());
        parts
    };
    // Nearly always every part is the user's: nothing more to look at.
    if not_owned(parts(repo.workdir())).is_none() {
        return Ok(());
    }
    // Started inside the git directory, git takes it as a bare repository.
    let inside_git_dir = match (std::fs::canonicalize(start), std::fs::canonicalize(git_dir)) {
        (Ok(start), Ok(git_dir)) => start.starts_with(git_dir),
        _ => false,
    };
    let worktree = repo.workdir().filter(|_| !inside_git_dir);
    let Some((path, owner, user)) = not_owned(parts(worktree)) else {
        return Ok(());
    };
    let named = worktree.unwrap_or(git_dir);
    let refused = |repo: PathBuf| Error::DubiousOwnership {
        repo,
        path: path.clone(),
        owner,
        user,
    };
    // A repository whose path cannot be resolved is not safe (as for git).
    let Ok(resolved) = std::fs::canonicalize(named) else {
        return Err(refused(named.to_owned()));
    };
    match allowed(&protected_safe_directories(repo), &resolved) {
        true => Ok(()),
        false => Err(refused(resolved)),
    }
}

/// The user git takes a part owned by `owner` to be the current user's
/// for: the effective uid; for root, a part root does not own is the
/// user's in `SUDO_UID` (when it holds a number).
fn users_own(owner: u32, euid: u32, sudo_uid: Option<&str>) -> u32 {
    if euid == 0 && owner != 0 {
        if let Some(uid) = sudo_uid.and_then(|v| v.trim_start().parse::<u32>().ok()) {
            return uid;
        }
    }
    euid
}

/// `safe.directory` from protected config, in git's order: system and
/// global files (with their includes), then `GIT_CONFIG_COUNT`'s pairs,
/// then `GIT_CONFIG_PARAMETERS` (`git -c`). A key without a value is an
/// empty value.
fn protected_safe_directories(repo: &gix::Repository) -> Vec<String> {
    use gix::config::source::Kind;
    let config = repo.config_snapshot();
    let protected = |meta: &gix::config::file::Metadata| {
        matches!(
            meta.source.kind(),
            Kind::GitInstallation | Kind::System | Kind::Global
        )
    };
    let mut values: Vec<String> = config
        .plumbing()
        .strings_filter_by("safe", None::<&gix::bstr::BStr>, "directory", protected)
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.to_str_lossy().into_owned())
        .collect();
    let env = |name: &str| std::env::var(name).ok();
    let command_line = counted_pairs(env).and_then(|mut pairs| {
        if let Some(params) = env("GIT_CONFIG_PARAMETERS") {
            pairs.extend(parameters(&params)?);
        }
        Some(pairs)
    });
    // Config git cannot parse stops git altogether: it allows nothing.
    let Some(command_line) = command_line else {
        return Vec::new();
    };
    values.extend(
        command_line
            .into_iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case("safe.directory"))
            .map(|(_, value)| value.unwrap_or_default()),
    );
    values
}

/// `git -c`'s pairs (`GIT_CONFIG_PARAMETERS`) as gix config overrides
/// (`key=value`, or `key` alone for git's implicit true); none when git
/// would refuse them (it would not have run us).
pub(super) fn command_line_overrides() -> Vec<String> {
    std::env::var("GIT_CONFIG_PARAMETERS")
        .ok()
        .and_then(|p| parameters(&p))
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| match value {
            Some(v) => format!("{key}={v}"),
            None => key,
        })
        .collect()
}

/// `GIT_CONFIG_COUNT` and its `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>`;
/// `None` where git would refuse them.
fn counted_pairs(env: impl Fn(&str) -> Option<String>) -> Option<Vec<(String, Option<String>)>> {
    let count = match env("GIT_CONFIG_COUNT").filter(|c| !c.is_empty()) {
        None => return Some(Vec::new()),
        Some(count) => count.parse::<usize>().ok()?,
    };
    (0..count)
        .map(|i| {
            let key = env(&format!("GIT_CONFIG_KEY_{i}"))?;
            let value = env(&format!("GIT_CONFIG_VALUE_{i}"))?;
            Some((key, Some(value)))
        })
        .collect()
}

/// The pairs of `GIT_CONFIG_PARAMETERS` as git writes it for `git -c`:
/// shell-quoted words, `'key'='value'` (`'key'=` for a key without a
/// value) or the older `'key=value'`; `None` where git would refuse it.
fn parameters(text: &str) -> Option<Vec<(String, Option<String>)>> {
    let mut pairs = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (key, after) = dequote_step(rest)?;
        let after = match after {
            None => "",
            Some(after) if after.starts_with(char::is_whitespace) => after,
            Some(after) => {
                let after = after.strip_prefix('=')?;
                if after.starts_with('\'') {
                    let (value, after) = dequote_step(after)?;
                    let after = after.unwrap_or("");
                    if !after.is_empty() && !after.starts_with(char::is_whitespace) {
                        return None;
                    }
                    pairs.push((key, Some(value)));
                    rest = after.trim_start();
                    continue;
                }
                if !after.is_empty() && !after.starts_with(char::is_whitespace) {
                    return None;
                }
                pairs.push((key, None));
                rest = after.trim_start();
                continue;
            }
        };
        // The older form: one word, split at its first `=`.
        pairs.push(match key.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), Some(v.to_owned())),
            None => (key.trim().to_owned(), None),
        });
        rest = after.trim_start();
    }
    Some(pairs)
}

/// One single-quoted word at the start of `text` (git's
/// `sq_dequote_step`): `'…'`, joined to the next quoted part by `\'` or
/// `\!`. Returns the word and what follows it (`None`: nothing).
fn dequote_step(text: &str) -> Option<(String, Option<&str>)> {
    let mut word = String::new();
    let mut rest = text.strip_prefix('\'')?;
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        match rest.as_bytes() {
            [] => return Some((word, None)),
            [b'\\', c @ (b'\'' | b'!'), b'\'', ..] => {
                word.push(char::from(*c));
                rest = &rest[3..];
            }
            _ => return Some((word, Some(rest))),
        }
    }
}

/// Whether the `safe.directory` values allow the repository at `resolved`
/// (its resolved path), walking them in order as git does.
fn allowed(values: &[String], resolved: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut safe = false;
    for value in values {
        if value.is_empty() {
            safe = false;
        } else if value == "*" || matches(value, resolved, home.as_deref()) {
            safe = true;
        }
    }
    safe
}

/// Whether one `safe.directory` path names the repository at `resolved`:
/// the same directory once both are resolved, or (ending in `/*`) a
/// directory above it. `~/` and `~user/` are expanded; a relative path, or
/// one that cannot be resolved, names nothing.
fn matches(value: &str, resolved: &Path, home: Option<&Path>) -> bool {
    let context = gix::config::path::interpolate::Context {
        git_install_dir: None,
        home_dir: home,
        home_for_user: Some(gix::config::path::interpolate::home_for_user),
    };
    let path = gix::config::Path::from(std::borrow::Cow::Borrowed(value.as_bytes().as_bstr()))
        .interpolate(context)
        .unwrap_or_else(|_| PathBuf::from(value));
    if !path.is_absolute() {
        return false;
    }
    match path.to_str().and_then(|p| p.strip_suffix("/*")) {
        Some(above) => {
            let above = if above.is_empty() { "/" } else { above };
            std::fs::canonicalize(above)
                .is_ok_and(|above| resolved != above.as_path() && resolved.starts_with(&above))
        }
        None => std::fs::canonicalize(&path).is_ok_and(|p| p == resolved),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn git_c_parameters_read_as_git_writes_them() {
        // What `git -c safe.directory=/a -c safe.directory -c x.Y="a'b" -c foo.bar=` passes on.
        let written = r"'safe.directory'='/a' 'safe.directory'= 'x.Y'='a'\''b' 'foo.bar'=''";
        assert_eq!(
            parameters(written),
            Some(pairs(&[
                ("safe.directory", Some("/a")),
                ("safe.directory", None),
                ("x.Y", Some("a'b")),
                ("foo.bar", Some("")),
            ]))
        );
        // The older form, one word a pair.
        assert_eq!(
            parameters("'safe.directory=/b c'  'core.bare'"),
            Some(pairs(&[
                ("safe.directory", Some("/b c")),
                ("core.bare", None)
            ]))
        );
        assert_eq!(parameters(""), Some(Vec::new()));
        for bogus in [
            "safe.directory=/a",
            "'unclosed",
            "'k'x",
            "'k'='v'x",
            "'k'=v",
        ] {
            assert_eq!(parameters(bogus), None, "{bogus}");
        }
    }

    #[test]
    fn counted_pairs_need_every_key_and_value() {
        let env = |vars: &'static [(&str, &str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(counted_pairs(env(&[])), Some(Vec::new()));
        assert_eq!(
            counted_pairs(env(&[
                ("GIT_CONFIG_COUNT", "1"),
                ("GIT_CONFIG_KEY_0", "safe.directory"),
                ("GIT_CONFIG_VALUE_0", "*"),
            ])),
            Some(pairs(&[("safe.directory", Some("*"))]))
        );
        assert_eq!(
            counted_pairs(env(&[("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "k")])),
            None
        );
        assert_eq!(counted_pairs(env(&[("GIT_CONFIG_COUNT", "x")])), None);
    }

    #[test]
    fn safe_directory_values_are_walked_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let repo = std::fs::canonicalize(dir.path()).unwrap().join("repo");
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        let at = |p: &Path| p.to_string_lossy().into_owned();
        let values = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let parent = repo.parent().unwrap();
        assert!(allowed(&values(&[&at(&repo)]), &repo));
        assert!(allowed(&values(&["*"]), &repo));
        assert!(
            !allowed(&values(&["*", ""]), &repo),
            "an empty value clears"
        );
        assert!(allowed(&values(&["", &at(&repo)]), &repo));
        assert!(allowed(&values(&[&format!("{}/*", at(parent))]), &repo));
        assert!(allowed(&values(&["/*"]), &repo));
        assert!(
            !allowed(&values(&[&format!("{}/*", at(&repo))]), &repo),
            "`/*` allows what is below, not the directory itself"
        );
        assert!(
            allowed(&values(&[&format!("{}/sub/..", at(&repo))]), &repo),
            "compared once resolved"
        );
        assert!(
            !allowed(&values(&["repo"]), &repo),
            "a relative path names nothing"
        );
        assert!(!allowed(&values(&[&at(&repo.join("sub"))]), &repo));
        assert!(!allowed(&[], &repo));
    }

    #[test]
    fn as_root_the_sudo_user_owns_what_is_theirs() {
        assert_eq!(users_own(1000, 1000, Some("5")), 1000);
        assert_eq!(users_own(1000, 0, Some("1000")), 1000);
        assert_eq!(users_own(0, 0, Some("1000")), 0, "root's own stays root's");
        assert_eq!(users_own(1000, 0, Some("x")), 0);
        assert_eq!(users_own(1000, 0, None), 0);
    }
}
