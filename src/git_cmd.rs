//! The only place that runs the `git` program (transport, version, fsck).
//!
//! gix reads and writes the state branch; `git` is used where gix cannot serve
//! (push, fsck) or where the user's own git setup must be honoured.

use std::path::Path;
use std::process::Command;

/// The oldest git whose `fetch --porcelain` we rely on for sync.
pub const MIN_VERSION: (u32, u32, u32) = (2, 41, 0);

/// Output of one git invocation.
#[derive(Debug)]
pub struct GitOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `git -C dir args…`.
pub fn run(dir: &Path, args: &[&str]) -> std::io::Result<GitOutput> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output()?;
    Ok(GitOutput {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The installed git's version, if git runs at all.
pub fn version() -> Option<(u32, u32, u32)> {
    let out = Command::new("git").arg("--version").output().ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let rest = text.trim().strip_prefix("git version ")?;
    let mut parts = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor, patch))
}

/// `git fsck --no-progress` of the repository at `dir`; `Err` carries its report.
pub fn fsck(dir: &Path) -> std::io::Result<Result<(), String>> {
    let out = run(dir, &["fsck", "--no-progress", "--no-dangling"])?;
    Ok(if out.success {
        Ok(())
    } else {
        Err(format!("{}{}", out.stdout, out.stderr).trim().to_owned())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions() {
        assert_eq!(
            super::parse_version("git version 2.47.3\n"),
            Some((2, 47, 3))
        );
        assert_eq!(
            super::parse_version("git version 2.41.0.windows.1"),
            Some((2, 41, 0))
        );
        assert_eq!(super::parse_version("git version 2.45"), Some((2, 45, 0)));
        assert_eq!(super::parse_version("hg 6"), None);
    }
}
