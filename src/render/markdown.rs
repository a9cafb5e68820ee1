//! Markdown that is safe to post where a forge renders it (a pull request
//! comment, an issue): agent-written text becomes inert, and a comment
//! fits the forge's size limit.
//!
//! Every piece of text that came from the state (todo text, summaries,
//! notes, evidence, questions, names) goes through [`text`] before it is
//! placed in Markdown; only what git-loopx itself writes (headings, ids,
//! commit ids, field names) is left as is. [`text`] keeps the words readable
//! and makes them mean nothing to the renderer:
//!
//! - every ASCII punctuation character is backslash-escaped (CommonMark lets
//!   any of them be escaped, and an escaped one is a literal character): no
//!   heading, list, emphasis, table cell, link or image, no HTML tag, no
//!   entity, no code span can start;
//! - line breaks become spaces, so nothing starts a new block (a heading or
//!   a quote on the next line);
//! - an `@` is followed by a zero-width space, so no one is mentioned (forges
//!   find mentions in the rendered text, after escapes are gone), and `#`
//!   references to issues are broken the same way.
//!
//! A bare `https://…` address is escaped like the rest; should a forge still
//! turn it into a link, the address shown is the address followed, unlike a
//! `[label](target)` link, which never forms.

/// GitHub's limit on the body of a comment, in characters.
pub const COMMENT_LIMIT: usize = 65_536;

/// A zero-width space: invisible, but it ends a mention or a reference.
const BREAK: char = '\u{200B}';

/// `raw` (agent-written text) as inert inline Markdown.
pub fn text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + raw.len() / 4);
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push(' ');
                }
            }
            '\n' | '\t' | '\u{b}' | '\u{c}' => out.push(' '),
            '@' | '#' => {
                out.push('\\');
                out.push(c);
                out.push(BREAK);
            }
            c if c.is_ascii_punctuation() => {
                out.push('\\');
                out.push(c);
            }
            // Other control characters (and the bidi overrides, which
            // reorder what a reader sees) are dropped from a comment.
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// `s` (an id, a commit id: what git-loopx names) as a code span; text that
/// could close the span or break the line goes through [`text`] instead.
pub fn code(s: &str) -> String {
    if s.is_empty()
        || s.chars()
            .any(|c| c == '`' || c.is_control() || is_bidi_control(c))
    {
        text(s)
    } else {
        format!("`{s}`")
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// No line is cut shorter than this many characters.
const MIN_LINE: usize = 160;

/// `body` made to fit in `limit` characters, with a last line that says
/// what was left out and where to read all of it; unchanged when it fits.
///
/// Every heading (a section, a todo) stays. The longest lines are cut
/// first: every line is capped at the widest length that fits (never below
/// [`MIN_LINE`]). When that is not enough, items are dropped from the end of
/// whichever section is then the largest, so one huge section cannot push
/// out the small ones after it.
pub fn fit(body: &str, limit: usize, whole: &str) -> String {
    if body.chars().count() <= limit {
        return body.to_owned();
    }
    let mut lines: Vec<String> = body.lines().map(str::to_owned).collect();
    let heading = |l: &str| l.starts_with('#') || l.starts_with("<!--");
    let note = |left: usize, cut: usize| {
        format!(
            "\n_… {left} more line(s) left out and {cut} shortened to fit the comment limit of {limit} characters: run `{whole}` for all of it._\n"
        )
    };
    let room = limit.saturating_sub(note(lines.len(), lines.len()).chars().count());
    let lens: Vec<usize> = lines.iter().map(|l| l.chars().count()).collect();
    let size = |cap: usize| -> usize {
        lens.iter()
            .map(|&n| n.min(cap) + usize::from(n > cap) + 1)
            .sum()
    };
    let longest = lens.iter().copied().max().unwrap_or(0);
    let cap = if size(MIN_LINE) > room {
        MIN_LINE
    } else {
        // The widest cap that fits.
        let (mut lo, mut hi) = (MIN_LINE, longest.max(MIN_LINE));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if size(mid) <= room {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    };
    let mut cut = 0;
    for line in &mut lines {
        if line.chars().count() > cap {
            *line = shortened(line, cap);
            cut += 1;
        }
    }
    // Sections: each heading starts one; a section's items may be dropped.
    let mut section_of = Vec::with_capacity(lines.len());
    let mut sections: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new())];
    for (i, line) in lines.iter().enumerate() {
        if heading(line) {
            sections.push((0, Vec::new()));
        } else {
            let last = sections.len() - 1;
            sections[last].0 += line.chars().count() + 1;
            sections[last].1.push(i);
        }
        section_of.push(sections.len() - 1);
    }
    let mut kept = vec![true; lines.len()];
    let mut total: usize = lines.iter().map(|l| l.chars().count() + 1).sum();
    let mut left = 0;
    while total > room {
        let Some(biggest) = (0..sections.len())
            .filter(|&s| !sections[s].1.is_empty())
            .max_by_key(|&s| (sections[s].0, s))
        else {
            break;
        };
        let Some(i) = sections[biggest].1.pop() else {
            break;
        };
        let n = lines[i].chars().count() + 1;
        sections[section_of[i]].0 -= n;
        total -= n;
        kept[i] = false;
        left += 1;
    }
    let mut out = String::with_capacity(limit);
    for (line, keep) in lines.iter().zip(&kept) {
        if *keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(&note(left, cut));
    out
}

/// `line`'s first `cap` characters and `…`, cut where no escape (`\\x`) or
/// code span is left half-open.
fn shortened(line: &str, cap: usize) -> String {
    let mut out: String = line.chars().take(cap).collect();
    let slashes = out.chars().rev().take_while(|&c| c == '\\').count();
    if slashes % 2 == 1 {
        out.pop();
    }
    if out.matches('`').count() % 2 == 1 {
        if let Some(at) = out.rfind('`') {
            out.truncate(at);
        }
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_cannot_start_blocks_links_html_or_mentions() {
        let hostile = "done\n## Heading\n<script>alert(1)</script> [x](javascript:alert(1)) @someone #12 ![i](http://x/i.png) `code` | cell | &amp; > quote";
        let safe = text(hostile);
        assert!(!safe.contains('\n'));
        // Every punctuation character is escaped (so it is a literal).
        let mut escaped = false;
        for c in safe.chars() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else {
                assert!(!c.is_ascii_punctuation(), "unescaped `{c}` in {safe}");
            }
        }
        assert!(safe.contains("\\#\u{200B}\\#\u{200B} Heading"), "{safe}");
        assert!(safe.contains(r"\<script\>"), "{safe}");
        assert!(safe.contains("@\u{200B}someone"), "{safe}");
        assert!(safe.contains("#\u{200B}12"), "{safe}");
        // The words stay readable.
        assert!(safe.contains("alert"));
        assert!(safe.contains("someone"));
    }

    #[test]
    fn plain_words_pass_unchanged_and_line_breaks_become_spaces() {
        assert_eq!(text("Wrote the tokenizer"), "Wrote the tokenizer");
        assert_eq!(text("a\r\nb\rc\nd"), "a b c d");
        assert_eq!(text("é ü 日本"), "é ü 日本");
        assert_eq!(text("a\u{1b}[2Jb\u{202E}c"), r"a\[2Jbc");
    }

    #[test]
    fn a_long_body_is_cut_at_a_line_with_a_note() {
        let body: String = (0..1000).map(|i| format!("- line {i}\n")).collect();
        let cut = fit(&body, 2000, "git loopx pr");
        assert!(cut.chars().count() <= 2000, "{}", cut.chars().count());
        assert!(cut.contains("more line(s) left out"));
        assert!(cut.contains("`git loopx pr`"));
        assert!(cut
            .lines()
            .all(|l| l.is_empty() || l.starts_with("- line") || l.starts_with("_…")));
        assert_eq!(fit("short\n", 2000, "x"), "short\n");
    }
}
