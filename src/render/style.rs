//! Colour in human output: a few of our own words (the `error[code]:`
//! prefix, the `Needs you:` heading), on a terminal only.
//!
//! A renderer does not put escape codes into its text (they would be
//! escaped with it, and state text must be). It marks byte ranges of its own
//! words with a [`Role`]; [`paint`] then makes every unmarked stretch
//! terminal-safe and wraps the marked ones in our escape codes.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Effects, Style};

use crate::Error;

/// What a marked span is, which decides its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `error[code]:`: red and bold.
    Error,
    /// A heading asking for the reader's attention: yellow and bold.
    Attention,
}

impl Role {
    fn style(self) -> Style {
        match self {
            Role::Error => Style::new()
                .fg_color(Some(AnsiColor::Red.into()))
                .effects(Effects::BOLD),
            Role::Attention => Style::new()
                .fg_color(Some(AnsiColor::Yellow.into()))
                .effects(Effects::BOLD),
        }
    }
}

/// A range of bytes of a rendered text, holding only our own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub range: std::ops::Range<usize>,
    pub role: Role,
}

/// `--color`: when human output is coloured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (to anything but empty)
    /// or `TERM` is `dumb`.
    #[default]
    Auto,
    /// Always, also into a pipe or a file.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether to colour a stream that is (`is_terminal`) or is not a
    /// terminal, given the `NO_COLOR` and `TERM` variables.
    pub fn enabled(self, is_terminal: bool, no_color: Option<&str>, term: Option<&str>) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_terminal && no_color.is_none_or(str::is_empty) && term != Some("dumb")
            }
        }
    }

    /// [`ColorChoice::enabled`] for this process's stdout (`stderr`: false)
    /// or stderr (true).
    pub fn for_stream(self, stderr: bool) -> bool {
        use std::io::IsTerminal as _;
        let is_terminal = if stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        let no_color = std::env::var("NO_COLOR").ok();
        let term = std::env::var("TERM").ok();
        self.enabled(is_terminal, no_color.as_deref(), term.as_deref())
    }
}

/// `text` made terminal-safe ([`super::terminal_safe`]) except for the
/// `spans`, our own words, which are wrapped in their style when `colour`.
/// Spans out of range, overlapping, or not on character boundaries are
/// ignored (the text is then only escaped).
pub fn paint(text: &str, spans: &[Span], colour: bool) -> String {
    let mut out = String::with_capacity(text.len() + 16 * spans.len());
    let mut at = 0;
    for span in spans {
        let r = &span.range;
        if !colour || r.start < at || r.end > text.len() || r.start > r.end {
            continue;
        }
        let (Some(before), Some(words)) = (text.get(at..r.start), text.get(r.clone())) else {
            continue;
        };
        out.push_str(&super::terminal_safe(before));
        let style = span.role.style();
        let _ = write!(
            out,
            "{}{}{}",
            style.render(),
            super::terminal_safe(words),
            style.render_reset()
        );
        at = r.end;
    }
    out.push_str(&super::terminal_safe(&text[at..]));
    out
}

/// [`super::error_text`] with the `error[code]:` prefix marked.
pub fn error_text(err: &Error) -> (String, Vec<Span>) {
    let text = super::error_text(err);
    let prefix = format!("error[{}]:", err.code());
    let spans = if text.starts_with(&prefix) {
        vec![Span {
            range: 0..prefix.len(),
            role: Role::Error,
        }]
    } else {
        Vec::new()
    };
    (text, spans)
}

#[cfg(test)]
mod tests {
    use super::{paint, ColorChoice, Role, Span};

    #[test]
    fn auto_colours_a_terminal_without_no_color_only() {
        let auto = ColorChoice::Auto;
        assert!(auto.enabled(true, None, Some("xterm")));
        assert!(auto.enabled(true, Some(""), None));
        assert!(!auto.enabled(false, None, None));
        assert!(!auto.enabled(true, Some("1"), None));
        assert!(!auto.enabled(true, None, Some("dumb")));
        assert!(ColorChoice::Always.enabled(false, Some("1"), Some("dumb")));
        assert!(!ColorChoice::Never.enabled(true, None, None));
    }

    #[test]
    fn paint_escapes_everything_but_our_codes() {
        let text = "Needs you:\n  ? g-1  \x1b[2Jwipe\n";
        let spans = [Span {
            range: 0..10,
            role: Role::Attention,
        }];
        assert_eq!(
            paint(text, &spans, true),
            "\x1b[1m\x1b[33mNeeds you:\x1b[0m\n  ? g-1  \\u{1b}[2Jwipe\n"
        );
        assert_eq!(
            paint(text, &spans, false),
            "Needs you:\n  ? g-1  \\u{1b}[2Jwipe\n"
        );
        // A span that is not on a character boundary is not painted.
        let bad = [Span {
            range: 0..1,
            role: Role::Error,
        }];
        assert_eq!(paint("é", &bad, true), "é");
    }
}
