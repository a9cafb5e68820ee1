//! A todo's `validate` command: refused when it needs a shell (at `todo add`),
//! run without one (at `todo done`) with a timeout, its output's tails kept.
//!
//! Invariants: memory per stream is bounded ([`TAIL_BYTES`] kept, the rest
//! only counted), whatever the command prints; a command that outlives its
//! timeout is killed (off a terminal, with the process group it leads), and
//! the pipes are waited for at most a second after it ends, so a grandchild
//! holding them open cannot hang `done`.

use std::io::{IsTerminal as _, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::model::Refusal;
use crate::Result;

/// Lines of each stream shown when validation fails.
pub const TAIL_LINES: usize = 40;
/// Bytes of each stream shown (and kept in memory) when validation fails.
pub const TAIL_BYTES: usize = 8 * 1024;

/// Exit code recorded when validation is killed for running too long.
pub const TIMEOUT_EXIT: i32 = 124;
/// Exit code recorded when the validation program cannot be started.
pub const SPAWN_FAILED_EXIT: i32 = 127;

/// The shell construct `command` relies on, if any, described for a
/// message: without a shell these would be passed to the program as
/// arguments (`true ; false` runs `true` with two arguments), which is never
/// what the author meant. Quoted text is plain text, as in sh; `$` is a
/// construct outside single quotes; `*` and `?` only outside any quotes.
pub fn shell_construct(command: &str) -> Option<String> {
    let mut quote: Option<char> = None;
    let mut word_start = true;
    let mut first_word = true;
    let mut word = String::new();
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), _) => {}
            (Some(_), '$') => return Some("`$`".into()),
            (Some(_), '`') => return Some("a backtick".into()),
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(_), _) => {}
            (None, '\\') => {
                chars.next();
                word_start = false;
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                word_start = false;
            }
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    first_word = false;
                }
                word.clear();
                word_start = true;
            }
            (None, '&' | '|') => {
                return Some(match chars.peek() {
                    Some(&n) if n == c => format!("`{c}{c}`"),
                    _ => format!("`{c}`"),
                });
            }
            (None, ';' | '<' | '>' | '$' | '*' | '?' | '(' | ')') => {
                return Some(format!("`{c}`"));
            }
            (None, '`') => return Some("a backtick".into()),
            (None, '~' | '#') if word_start => return Some(format!("a leading `{c}`")),
            (None, '=') if first_word && is_name(&word) => {
                let value: String = chars.by_ref().take_while(|c| !c.is_whitespace()).collect();
                return Some(format!("`{word}={value}`"));
            }
            (None, c) => {
                word.push(c);
                word_start = false;
            }
        }
    }
    None
}

/// `90` → `1m30s`, `600` → `10m`, `2` → `2s`: as `--validate-timeout` takes it.
pub fn duration_words(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `--validate` as `todo add` takes it: words without a shell, or refused.
pub fn check_command(command: &str) -> Result<()> {
    if crate::supervise::argv(command)?.is_empty() {
        return Err(Refusal::invalid_input("--validate is empty").into());
    }
    if let Some(construct) = shell_construct(command) {
        return Err(Refusal::invalid_input(format!(
            "--validate `{command}` needs a shell ({construct}): it runs without one"
        ))
        .with_hint(format!(
            "to run it through a shell, say so: --validate \"sh -c '{}'\"",
            command.replace('\'', r"'\''")
        ))
        .into());
    }
    Ok(())
}

/// How a validation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    Passed,
    Failed,
    TimedOut,
    NotFound,
    NotStarted,
}

/// The last lines of one output stream, and how much before them was cut.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tail {
    pub text: String,
    pub lines_cut: usize,
    pub bytes_cut: u64,
}

/// One run of a `validate` command, as `todo done` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct ValidationRun {
    pub command: String,
    /// The exit code recorded (124 for a timeout, 127 when it did not start).
    pub exit_code: i32,
    pub result: Ending,
    pub seconds: f64,
    pub timeout_seconds: u64,
    /// Why it did not start (`not_found`, `not_started`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub stdout: Tail,
    pub stderr: Tail,
}

impl ValidationRun {
    pub fn passed(&self) -> bool {
        self.result == Ending::Passed
    }

    /// What happened, for a message: "exited 1", "timed out after 2s",
    /// "`foo` not found on PATH".
    pub fn what(&self) -> String {
        match self.result {
            Ending::Passed | Ending::Failed => format!("exited {}", self.exit_code),
            Ending::TimedOut => format!("timed out after {}", duration_words(self.timeout_seconds)),
            Ending::NotFound | Ending::NotStarted => {
                self.error.clone().unwrap_or_else(|| "did not start".into())
            }
        }
    }

    /// The last non-empty line of its output (stderr first), at most 200
    /// characters: all of the output the state keeps.
    pub fn last_line(&self) -> Option<String> {
        [&self.stderr, &self.stdout].into_iter().find_map(|t| {
            let line = t.text.lines().rev().find(|l| !l.trim().is_empty())?;
            Some(crate::model::ids::headline(line.trim(), 200))
        })
    }
}

/// Runs `command` without a shell in `dir`, killing it after `timeout`;
/// `tick` is called about every 100 ms with the time it has run.
pub fn run(
    command: &str,
    dir: &Path,
    timeout: Duration,
    tick: &mut dyn FnMut(Duration),
) -> Result<ValidationRun> {
    let argv = crate::supervise::argv(command)?;
    let Some((program, args)) = argv.split_first() else {
        return Err(Refusal::invalid_input("the validate command is empty").into());
    };
    let mut report = ValidationRun {
        command: command.to_owned(),
        exit_code: SPAWN_FAILED_EXIT,
        result: Ending::NotStarted,
        seconds: 0.0,
        timeout_seconds: timeout.as_secs(),
        error: None,
        stdout: Tail::default(),
        stderr: Tail::default(),
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Off a terminal (an agent, CI) the command leads a process group of its
    // own, so a timeout kills everything it started. On a terminal it stays
    // in ours, so that Ctrl-C reaches it as it would reach `cargo test` run
    // by hand; a timeout then kills the command itself.
    let interactive = std::io::stdin().is_terminal() || std::io::stderr().is_terminal();
    if !interactive {
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            let (result, error) = match e.kind() {
                std::io::ErrorKind::NotFound if program.contains('/') => {
                    (Ending::NotFound, format!("`{program}` not found"))
                }
                std::io::ErrorKind::NotFound => {
                    (Ending::NotFound, format!("`{program}` not found on PATH"))
                }
                std::io::ErrorKind::PermissionDenied => (
                    Ending::NotStarted,
                    format!("`{program}` could not be run (permission denied)"),
                ),
                _ => (
                    Ending::NotStarted,
                    format!("`{program}` could not be started: {e}"),
                ),
            };
            report.result = result;
            report.error = Some(error);
            return Ok(report);
        }
    };
    let out = Capture::start(child.stdout.take());
    let err = Capture::start(child.stderr.take());
    let start = Instant::now();
    let status = crate::git_cmd::wait_limited(&mut child, timeout, !interactive, tick)
        .ok()
        .flatten();
    report.seconds = start.elapsed().as_secs_f64();
    // The pipes close when the command (and its group) is gone; a daemon it
    // left behind may keep them open, so do not wait for ever.
    report.stdout = out.finish(Duration::from_secs(1));
    report.stderr = err.finish(Duration::from_secs(1));
    match status {
        Some(status) => {
            report.exit_code = status.code().unwrap_or(1);
            report.result = if status.success() {
                Ending::Passed
            } else {
                Ending::Failed
            };
        }
        None => {
            report.exit_code = TIMEOUT_EXIT;
            report.result = Ending::TimedOut;
        }
    }
    Ok(report)
}

/// The last [`TAIL_BYTES`] of a stream, read on its own thread.
#[derive(Default)]
struct Kept {
    bytes: Vec<u8>,
    total: u64,
    newlines: usize,
    ended: bool,
}

struct Capture(Arc<Mutex<Kept>>);

impl Capture {
    fn start(stream: Option<impl Read + Send + 'static>) -> Self {
        let kept = Arc::new(Mutex::new(Kept::default()));
        let Some(mut stream) = stream else {
            kept.lock().expect("not poisoned").ended = true;
            return Capture(kept);
        };
        let shared = Arc::clone(&kept);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut k = shared.lock().expect("not poisoned");
                k.total += n as u64;
                k.newlines += buf[..n].iter().filter(|&&b| b == b'\n').count();
                k.bytes.extend_from_slice(&buf[..n]);
                if k.bytes.len() > 2 * TAIL_BYTES {
                    let cut = k.bytes.len() - TAIL_BYTES;
                    k.bytes.drain(..cut);
                }
            }
            shared.lock().expect("not poisoned").ended = true;
        });
        Capture(kept)
    }

    fn finish(self, wait: Duration) -> Tail {
        let start = Instant::now();
        loop {
            let k = self.0.lock().expect("not poisoned");
            if k.ended || start.elapsed() >= wait {
                return tail(&k.bytes, k.total, k.newlines);
            }
            drop(k);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The last [`TAIL_LINES`] lines of `kept` (the end of a stream of `total`
/// bytes holding `newlines` newlines), at most [`TAIL_BYTES`].
fn tail(kept: &[u8], total: u64, newlines: usize) -> Tail {
    let mut start = kept.len().saturating_sub(TAIL_BYTES);
    // Count back TAIL_LINES lines; a final line without a newline counts.
    let body = kept.strip_suffix(b"\n").unwrap_or(kept);
    let mut lines = 0;
    let mut line_start = None;
    for (i, &b) in body.iter().enumerate().rev() {
        if b == b'\n' {
            lines += 1;
            if lines == TAIL_LINES {
                line_start = Some(i + 1);
                break;
            }
        }
    }
    if let Some(s) = line_start {
        start = start.max(s);
    }
    // Do not start inside a UTF-8 sequence.
    while start < kept.len() && (kept[start] & 0xC0) == 0x80 {
        start += 1;
    }
    let shown = &kept[start..];
    let bytes_cut = total - shown.len() as u64;
    let shown_newlines = shown.iter().filter(|&&b| b == b'\n').count();
    let ends_open = !shown.is_empty() && !shown.ends_with(b"\n");
    let total_lines = newlines + usize::from(ends_open);
    let shown_lines = shown_newlines + usize::from(ends_open);
    // A partial first line counts as shown, not as cut.
    let lines_cut = total_lines.saturating_sub(shown_lines);
    Tail {
        text: String::from_utf8_lossy(shown).into_owned(),
        lines_cut,
        bytes_cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_constructs_are_named_and_quoted_text_is_plain() {
        let cases = [
            ("a && b", Some("`&&`")),
            ("a || b", Some("`||`")),
            ("a | b", Some("`|`")),
            ("a & ", Some("`&`")),
            ("a; b", Some("`;`")),
            ("a > f", Some("`>`")),
            ("a 2>&1", Some("`>`")),
            ("a < f", Some("`<`")),
            ("echo $(x)", Some("`$`")),
            ("echo \"$HOME\"", Some("`$`")),
            ("echo `x`", Some("a backtick")),
            ("ls *.rs", Some("`*`")),
            ("ls a?", Some("`?`")),
            ("(cd x)", Some("`(`")),
            ("cd ~/x", Some("a leading `~`")),
            ("X=1 cargo test", Some("`X=1`")),
            ("cargo test # all", Some("a leading `#`")),
            ("cargo test --features=x", None),
            ("sh -c 'a && b | c; d'", None),
            ("grep 'a$' f", None),
            ("grep \"a|b\" f", None),
            ("cargo test -- 'x::*'", None),
            ("a\\;b", None),
            ("test -f a#b", None),
        ];
        for (command, want) in cases {
            assert_eq!(shell_construct(command).as_deref(), want, "{command}");
        }
    }

    #[test]
    fn durations_read_as_they_are_written() {
        assert_eq!(duration_words(2), "2s");
        assert_eq!(duration_words(90), "1m30s");
        assert_eq!(duration_words(600), "10m");
        assert_eq!(duration_words(3600), "1h");
        assert_eq!(duration_words(0), "0s");
    }

    #[test]
    fn a_tail_keeps_the_last_lines_and_says_what_was_cut() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let t = tail(text.as_bytes(), text.len() as u64, 100);
        assert!(t.text.starts_with("line 61\n") && t.text.ends_with("line 100\n"));
        assert_eq!(t.lines_cut, 60);
        assert_eq!(t.bytes_cut as usize, text.len() - t.text.len());
        let short = tail(b"one\ntwo", 7, 1);
        assert_eq!(
            short,
            Tail {
                text: "one\ntwo".into(),
                lines_cut: 0,
                bytes_cut: 0
            }
        );
        let long = vec![b'x'; 3 * TAIL_BYTES];
        let t = tail(&long, 10 * TAIL_BYTES as u64, 0);
        assert_eq!(t.text.len(), TAIL_BYTES);
        assert_eq!(t.bytes_cut, 9 * TAIL_BYTES as u64);
        assert_eq!(t.lines_cut, 0);
        // A cut never splits a character.
        let mut accents = vec![b'a'];
        accents.extend("é".repeat(TAIL_BYTES).as_bytes());
        let t = tail(&accents, accents.len() as u64, 0);
        assert!(t.text.chars().all(|c| c == 'é'));
    }
}
