//! Signing a state commit and checking its signature, both by `git`
//! (`commit-tree -S`, `%G?` against an allowed-signers file), for the
//! `gate_signers` policy (docs/gates.md).

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;

/// Re-makes `unsigned` (a commit the store wrote) as a commit git signs with
/// the person's configured key (`user.signingkey`, `gpg.format`): the same
/// tree, parents, author, committer, dates and message. Returns its id, or
/// git's complaint.
pub fn sign_commit(dir: &Path, unsigned: &str) -> Result<String, String> {
    let raw = super::run(dir, &["cat-file", "commit", unsigned]).map_err(|e| e.to_string())?;
    if !raw.success {
        return Err(raw.stderr.trim().to_owned());
    }
    let (headers, message) = raw
        .stdout
        .split_once("\n\n")
        .unwrap_or((raw.stdout.as_str(), ""));
    let mut tree = None;
    let mut parents = Vec::new();
    let mut author = None;
    let mut committer = None;
    for line in headers.lines() {
        match line.split_once(' ') {
            Some(("tree", t)) => tree = Some(t),
            Some(("parent", p)) => parents.push(p),
            Some(("author", a)) => author = split_person(a),
            Some(("committer", c)) => committer = split_person(c),
            _ => {}
        }
    }
    let (Some(tree), Some(author), Some(committer)) = (tree, author, committer) else {
        return Err(format!(
            "commit {unsigned} has no tree, author or committer"
        ));
    };
    let mut cmd = super::git(dir);
    cmd.args(["commit-tree", "-S", tree]);
    for p in &parents {
        cmd.args(["-p", p]);
    }
    cmd.env("GIT_AUTHOR_NAME", author.0)
        .env("GIT_AUTHOR_EMAIL", author.1)
        .env("GIT_AUTHOR_DATE", author.2)
        .env("GIT_COMMITTER_NAME", committer.0)
        .env("GIT_COMMITTER_EMAIL", committer.1)
        .env("GIT_COMMITTER_DATE", committer.2)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("running git: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(message.as_bytes())
            .map_err(|e| format!("writing the message to git: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `Name <email> 1700000000 +0000` → (name, email, `@1700000000 +0000`).
fn split_person(s: &str) -> Option<(&str, &str, String)> {
    let (name, rest) = s.split_once(" <")?;
    let (email, date) = rest.split_once("> ")?;
    Some((name, email, format!("@{date}")))
}

/// Whether `commit` carries a good signature by a key of `allowed` (an
/// allowed-signers file): git's `%G?` is `G`. Any other answer (no
/// signature, an unknown key, a bad one) is `false`.
pub fn signed_by(dir: &Path, commit: &str, allowed: &Path) -> Result<bool, String> {
    let setting = format!("gpg.ssh.allowedSignersFile={}", allowed.display());
    let out = super::run(
        dir,
        &["-c", &setting, "log", "-1", "--format=%G?", commit, "--"],
    )
    .map_err(|e| e.to_string())?;
    if !out.success {
        return Err(out.stderr.trim().to_owned());
    }
    Ok(out.stdout.trim() == "G")
}

/// What stands between a signing key and a process running as its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protection {
    /// A FIDO key (`sk-…`): every signature needs a touch of the device.
    Touch,
    /// The private key file is encrypted: using it needs the passphrase
    /// (or an ssh-agent that holds it).
    Passphrase,
    /// The private key file opens with no passphrase: anyone who can read
    /// it can sign.
    None,
    /// No private key file beside the public one: only an ssh-agent can
    /// sign with it.
    AgentOnly,
}

/// How the key `public` (a `.pub` file) is protected, asked of
/// `ssh-keygen`: a private key that `ssh-keygen -y -P ''` opens has no
/// passphrase. `Err` when ssh-keygen cannot be run.
pub fn protection(public: &Path, key: &str) -> Result<Protection, String> {
    if key.starts_with("sk-") {
        return Ok(Protection::Touch);
    }
    let private = public.with_extension("");
    if private == public || !private.is_file() {
        return Ok(Protection::AgentOnly);
    }
    let out = std::process::Command::new("ssh-keygen")
        .args(["-y", "-P", "", "-f"])
        .arg(&private)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running ssh-keygen: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        Ok(Protection::None)
    } else if stderr.contains("passphrase") {
        Ok(Protection::Passphrase)
    } else {
        Err(format!("{}: {}", private.display(), stderr.trim()))
    }
}

/// Whether the ssh-agent of `SSH_AUTH_SOCK` holds `key` (type and body).
pub fn in_ssh_agent(key: &str) -> bool {
    if std::env::var_os("SSH_AUTH_SOCK").is_none() {
        return false;
    }
    std::process::Command::new("ssh-add")
        .arg("-L")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.starts_with(key))
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_person_line_splits_into_git_environment() {
        assert_eq!(
            super::split_person("Pat Person <pat@example.com> 1700000000 +0000"),
            Some((
                "Pat Person",
                "pat@example.com",
                "@1700000000 +0000".to_owned()
            ))
        );
        assert_eq!(super::split_person("nobody"), None);
    }
}
