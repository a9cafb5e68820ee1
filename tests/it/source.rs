//! Rust sources read as tokens, for the tests that hold the code to its
//! rules (`layers`, `sizes`): comments, character literals and lifetimes
//! are skipped, strings (raw strings too) are one token, every other
//! character that is not part of a word, a number or `::` is a `Punct` of
//! its own, braces included, so a reader can match `{` with `}`.

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    Str(String),
    /// `::`
    Sep,
    Punct(char),
}

/// The tokens of a Rust source, each with its line, without comments,
/// character literals and lifetimes.
pub fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    // Skips to the end of a string that opened before `i`, ended by `"`
    // and `hashes` times `#`; escapes count only without hashes.
    let string_end = |mut i: usize, hashes: Option<usize>, line: &mut usize| {
        let start = i;
        loop {
            match at(i) {
                '\0' => return (i, start),
                '\n' => *line += 1,
                '\\' if hashes.is_none() => i += 1,
                '"' if (1..=hashes.unwrap_or(0)).all(|k| at(i + k) == '#') => {
                    return (i + 1 + hashes.unwrap_or(0), start);
                }
                _ => {}
            }
            i += 1;
        }
    };
    while i < c.len() {
        let (ch, next) = (c[i], at(i + 1));
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            let (end, start) = string_end(i + 1, None, &mut line);
            out.push((Tok::Str(c[start..end - 1].iter().collect()), line));
            i = end;
        } else if ch == '\'' {
            if next == '\\' {
                // An escape: `'\''`, `'\\'`, `'\u{…}'`.
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or a label.
                i += 1;
                while at(i).is_alphanumeric() || at(i) == '_' {
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let hashes = (i..).take_while(|&k| at(k) == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && at(i + hashes) == '"' {
                let (end, start) = string_end(i + hashes + 1, Some(hashes), &mut line);
                out.push((Tok::Str(c[start..end - 1 - hashes].iter().collect()), line));
                i = end;
            } else if word == "r" && hashes == 1 && (at(i + 1).is_alphabetic() || at(i + 1) == '_')
            {
                // A raw identifier, `r#type`: the word is read next.
                i += 1;
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if ch.is_ascii_digit() {
            while at(i).is_alphanumeric()
                || at(i) == '_'
                || (at(i) == '.' && at(i + 1).is_ascii_digit())
            {
                i += 1;
            }
        } else if ch == ':' && next == ':' {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The identifier at `i`, if there is one.
pub fn ident(t: &[(Tok, usize)], i: usize) -> Option<&str> {
    match t.get(i) {
        Some((Tok::Ident(w), _)) => Some(w),
        _ => None,
    }
}

/// Whether the token at `i` is the punctuation `p`.
pub fn is(t: &[(Tok, usize)], i: usize, p: char) -> bool {
    matches!(t.get(i), Some((Tok::Punct(c), _)) if *c == p)
}
