//! Reading and rewriting loopx-state history with git plumbing: what a push
//! would send (for the credential scan of `sync`), and the pieces `redact`
//! rewrites unpushed commits with. Objects are read in one `cat-file --batch`
//! per call, not one process per object.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

/// One object's type and bytes.
pub struct Object {
    pub id: String,
    pub kind: String,
    pub data: Vec<u8>,
}

fn spawn_err(what: &str, e: impl std::fmt::Display) -> String {
    format!("could not run git {what}: {e}")
}

/// Runs git with `input` on stdin; returns stdout bytes, or stderr on failure.
fn with_input(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    input: &[u8],
) -> Result<Vec<u8>, String> {
    let mut cmd = super::git(dir);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_err(args[0], e))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = input.to_vec();
    // Written from a thread: git may fill its stdout before reading all input.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| spawn_err(args[0], e))?;
    let _ = writer.join();
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!(
            "git {} failed: {}",
            args[0],
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn text(dir: &Path, args: &[&str]) -> Result<String, String> {
    with_input(dir, args, &[], b"").map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The objects reachable from `tip` and from none of `exclude` (what a push
/// to a remote at `exclude` sends): `(id, path)`, the path empty for commits.
pub fn objects_between(
    dir: &Path,
    tip: &str,
    exclude: &[&str],
) -> Result<Vec<(String, String)>, String> {
    let mut args = vec!["rev-list", "--objects", tip];
    if !exclude.is_empty() {
        args.push("--not");
        args.extend(exclude);
    }
    Ok(text(dir, &args)?
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(' ') {
            Some((id, path)) => (id.to_owned(), path.to_owned()),
            None => (l.to_owned(), String::new()),
        })
        .collect())
}

/// The commits reachable from `tip` and from none of `exclude`, parents first.
pub fn commits_between(dir: &Path, tip: &str, exclude: &[&str]) -> Result<Vec<String>, String> {
    let mut args = vec!["rev-list", "--reverse", "--topo-order", tip];
    if !exclude.is_empty() {
        args.push("--not");
        args.extend(exclude);
    }
    Ok(text(dir, &args)?.lines().map(str::to_owned).collect())
}

/// Reads `ids` with one `git cat-file --batch`.
pub fn read_objects(dir: &Path, ids: &[String]) -> Result<Vec<Object>, String> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = ids.join("\n").into_bytes();
    input.push(b'\n');
    let out = with_input(dir, &["cat-file", "--batch"], &[], &input)?;
    let mut objects = Vec::with_capacity(ids.len());
    let mut rest: &[u8] = &out;
    while !rest.is_empty() {
        let header_end = rest
            .iter()
            .position(|&c| c == b'\n')
            .ok_or("truncated cat-file output")?;
        let header = String::from_utf8_lossy(&rest[..header_end]).into_owned();
        let mut parts = header.split(' ');
        let (Some(id), Some(kind), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("git cat-file: {header}"));
        };
        let size: usize = size
            .parse()
            .map_err(|_| format!("git cat-file: {header}"))?;
        let start = header_end + 1;
        let data = rest
            .get(start..start + size)
            .ok_or("truncated cat-file output")?;
        objects.push(Object {
            id: id.to_owned(),
            kind: kind.to_owned(),
            data: data.to_vec(),
        });
        rest = rest.get(start + size + 1..).unwrap_or(&[]);
    }
    Ok(objects)
}

/// The newest commit in `tip --not exclude` whose change added `blob`.
pub fn commit_adding(dir: &Path, blob: &str, tip: &str, exclude: &[&str]) -> Option<String> {
    let find = format!("--find-object={blob}");
    let mut args = vec!["log", "-m", "--format=%H", "-1", &find, tip];
    if !exclude.is_empty() {
        args.push("--not");
        args.extend(exclude);
    }
    let out = text(dir, &args).ok()?;
    out.lines().next().map(str::to_owned)
}

/// Whether `needle` appears in a change or message of history reachable
/// from `refs`: git's pickaxe for changes; messages are searched here, as
/// `--grep` would take a needle holding a newline for several patterns.
pub fn history_contains(dir: &Path, refs: &[&str], needle: &str) -> Result<bool, String> {
    if refs.is_empty() {
        return Ok(false);
    }
    let pick = format!("-S{needle}");
    let mut args = vec!["log", "-m", "--format=%H", "-1", &pick];
    args.extend(refs);
    args.push("--");
    if !text(dir, &args)?.trim().is_empty() {
        return Ok(true);
    }
    let mut args = vec!["log", "-z", "--format=%B"];
    args.extend(refs);
    args.push("--");
    let messages = with_input(dir, &args, &[], b"")?;
    Ok(messages.split(|&c| c == 0).any(|m| {
        m.windows(needle.len().max(1))
            .any(|w| w == needle.as_bytes())
    }))
}

/// Paths changed by any of `commits` (against each parent; all of a root's).
pub fn changed_paths(dir: &Path, commits: &[String]) -> Result<Vec<String>, String> {
    let mut input = commits.join("\n").into_bytes();
    input.push(b'\n');
    let out = with_input(
        dir,
        &[
            "diff-tree",
            "--stdin",
            "-r",
            "-m",
            "--root",
            "--no-commit-id",
            "--name-only",
            "-z",
        ],
        &[],
        &input,
    )?;
    let mut paths: Vec<String> = out
        .split(|&c| c == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .filter(|p| p.len() != 40 || !p.bytes().all(|c| c.is_ascii_hexdigit()))
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// `(blob id, path)` of the regular files at `paths` in `commit`'s tree.
pub fn blobs_at(
    dir: &Path,
    commit: &str,
    paths: &[String],
) -> Result<Vec<(String, String)>, String> {
    let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit, "--"];
    args.extend(paths.iter().map(String::as_str));
    let out = with_input(dir, &args, &[], b"")?;
    Ok(out
        .split(|&c| c == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (meta, path) = entry.split_once('\t')?;
            let mut meta = meta.split(' ');
            let (mode, kind, id) = (meta.next()?, meta.next()?, meta.next()?);
            (kind == "blob" && mode.starts_with("100")).then(|| (id.to_owned(), path.to_owned()))
        })
        .collect())
}

/// Writes an object of `kind` and returns its id.
pub fn write_object(dir: &Path, kind: &str, data: &[u8]) -> Result<String, String> {
    let out = with_input(
        dir,
        &["hash-object", "-w", "--stdin", "-t", kind],
        &[],
        data,
    )?;
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// The tree of `commit` with the files at the given paths pointed at new
/// blobs (through a private index file at `index`, removed afterwards).
pub fn tree_with(
    dir: &Path,
    index: &Path,
    commit: &str,
    blobs: &[(String, String)],
) -> Result<String, String> {
    let env = [("GIT_INDEX_FILE", index)];
    let _ = std::fs::remove_file(index);
    let result = (|| {
        with_input(dir, &["read-tree", commit], &env, b"")?;
        let mut info = Vec::new();
        for (path, blob) in blobs {
            info.extend_from_slice(format!("100644 {blob}\t{path}").as_bytes());
            info.push(0);
        }
        with_input(dir, &["update-index", "-z", "--index-info"], &env, &info)?;
        let tree = with_input(dir, &["write-tree"], &env, b"")?;
        Ok(String::from_utf8_lossy(&tree).trim().to_owned())
    })();
    let _ = std::fs::remove_file(index);
    result
}

/// Drops reflog entries of `reference` that no longer point into its
/// history (the commits a rewrite replaced).
pub fn expire_unreachable_reflog(dir: &Path, reference: &str) -> Result<(), String> {
    text(
        dir,
        &[
            "reflog",
            "expire",
            "--expire=never",
            "--expire-unreachable=now",
            reference,
        ],
    )
    .map(drop)
}
