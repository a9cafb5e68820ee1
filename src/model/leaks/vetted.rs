//! The vetted rule set: gitleaks' rules, kept as data in `vetted_table.rs`
//! (written by `scripts/leak-rules.py`), matched the way gitleaks matches
//! them, behind the same scan that joins split tokens and decodes base64.
//!
//! For each rule whose keywords occur in the text (case-insensitive, one
//! pass over every keyword), its regex is compiled (once a
//! process, only when needed) and run. A match's secret is the rule's
//! secret group, else its first non-empty group, else (or when that group
//! is shorter than eight bytes, a piece of the token) the whole match. A
//! secret is dropped when it has less entropy than the rule asks, when an
//! allowlist holds (the global one's or the rule's regexes or stopwords),
//! or when it has fewer than six distinct characters (a placeholder, as
//! the hand rules judge one).

use std::sync::OnceLock;

use regex::bytes::{Match, Regex};

use super::vetted_table::{GLOBAL_REGEXES, GLOBAL_STOPWORDS, VETTED};

/// Every rule's kind, in table order.
pub(super) fn kinds() -> impl Iterator<Item = &'static str> {
    VETTED.iter().map(|v| v.kind)
}

/// The table, for the tool that writes its corpus.
pub(super) fn table() -> impl Iterator<Item = super::VettedRule> {
    VETTED.iter().map(|v| super::VettedRule {
        kind: v.kind,
        regex: v.regex,
        prefix: v.prefix,
        keywords: v.keywords,
    })
}

/// A secret found: the rule, and the secret's byte range in the text.
pub(super) struct Hit {
    pub kind: &'static str,
    pub start: usize,
    pub end: usize,
}

/// Every rule's keywords, found in one pass: the keywords by their first
/// two bytes, and a bitmap of which pairs start one. Building it costs a
/// few microseconds (an Aho-Corasick automaton over the same words cost
/// 0.5-0.7 ms a process, more than a whole scan of a state file).
struct Keywords {
    /// Bit `pair` set: some keyword starts with those two bytes.
    pairs: Box<[u64; 1024]>,
    /// (first two bytes, keyword, rule), sorted by the pair.
    words: Vec<(u16, &'static [u8], usize)>,
}

fn pair(a: u8, b: u8) -> u16 {
    u16::from(a) << 8 | u16::from(b)
}

impl Keywords {
    fn new() -> Keywords {
        let mut pairs = Box::new([0u64; 1024]);
        let mut words = Vec::new();
        for (i, rule) in VETTED.iter().enumerate() {
            for word in rule.keywords {
                let w = word.as_bytes();
                // The table's keywords are lower case and two bytes or
                // more (`every_regex_of_the_table_compiles` checks).
                let p = pair(w[0], w[1]);
                pairs[usize::from(p >> 6)] |= 1 << (p & 63);
                words.push((p, w, i));
            }
        }
        words.sort_by_key(|&(p, _, _)| p);
        Keywords { pairs, words }
    }

    /// Marks in `wanted` every rule one of whose keywords occurs in
    /// `text`, ASCII case ignored.
    fn mark(&self, text: &[u8], wanted: &mut [bool]) {
        for i in 0..text.len().saturating_sub(1) {
            let p = pair(
                text[i].to_ascii_lowercase(),
                text[i + 1].to_ascii_lowercase(),
            );
            if self.pairs[usize::from(p >> 6)] & (1 << (p & 63)) == 0 {
                continue;
            }
            let from = self.words.partition_point(|&(q, _, _)| q < p);
            for &(q, word, rule) in &self.words[from..] {
                if q != p {
                    break;
                }
                if !wanted[rule]
                    && text.len() - i >= word.len()
                    && text[i..i + word.len()].eq_ignore_ascii_case(word)
                {
                    wanted[rule] = true;
                }
            }
        }
    }
}

struct Compiled {
    keywords: Keywords,
    rules: Vec<OnceLock<Option<Regex>>>,
    /// The same, as run on joined text ([`joined_form`]).
    joined: Vec<OnceLock<Option<Regex>>>,
    allows: Vec<OnceLock<Vec<Vec<Regex>>>>,
    global: OnceLock<Vec<Regex>>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| Compiled {
        keywords: Keywords::new(),
        rules: VETTED.iter().map(|_| OnceLock::new()).collect(),
        joined: VETTED.iter().map(|_| OnceLock::new()).collect(),
        allows: VETTED.iter().map(|_| OnceLock::new()).collect(),
        global: OnceLock::new(),
    })
}

/// Compiled as Go compiles it, which the rules were written for: `\w`,
/// `\d`, `\s` and `\b` are ASCII, and `(?i)` folds ASCII case.
fn regex(pattern: &str) -> Option<Regex> {
    regex::bytes::RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(1 << 24)
        .build()
        .ok()
}

fn all(patterns: &[&str]) -> Vec<Regex> {
    patterns.iter().filter_map(|p| regex(p)).collect()
}

/// What a token ends with in the rules: a quote, a space, `;`, an escaped
/// line break, or the end.
const TERMINATOR: &str = r#"(?:[\x60'"\s;]|\\[nr]|$)"#;

/// A prefixed rule's regex as run on joined text: without the word
/// boundary before it or the terminator after it, which the removed spaces
/// and quotes held (`-t dop_v1_…` joins as `-tdop_v1_…`). The literal
/// prefix still anchors each match.
fn joined_form(pattern: &str) -> String {
    let p = pattern.strip_prefix(r"\b").unwrap_or(pattern);
    let p = p.strip_suffix(TERMINATOR).unwrap_or(p);
    p.strip_suffix(r"\b").unwrap_or(p).to_owned()
}

impl Compiled {
    fn rule(&self, i: usize, joined: bool) -> Option<&Regex> {
        if joined {
            self.joined[i]
                .get_or_init(|| regex(&joined_form(VETTED[i].regex)))
                .as_ref()
        } else {
            self.rules[i]
                .get_or_init(|| regex(VETTED[i].regex))
                .as_ref()
        }
    }

    fn allows(&self, i: usize) -> &[Vec<Regex>] {
        self.allows[i].get_or_init(|| VETTED[i].allow.iter().map(|a| all(a.regexes)).collect())
    }

    fn global(&self) -> &[Regex] {
        self.global.get_or_init(|| all(GLOBAL_REGEXES))
    }
}

/// Every vetted rule's secrets in `text`; with `joined`, `text` is split
/// text joined up, and only the rules whose matches start with a literal
/// run, in their [`joined_form`].
pub(super) fn hits(text: &str, joined: bool) -> Vec<Hit> {
    let c = compiled();
    let mut wanted: Vec<bool> = VETTED.iter().map(|r| r.keywords.is_empty()).collect();
    c.keywords.mark(text.as_bytes(), &mut wanted);
    let mut out = Vec::new();
    for (i, rule) in VETTED.iter().enumerate() {
        if !wanted[i] || (joined && rule.prefix.is_empty()) {
            continue;
        }
        let Some(rx) = c.rule(i, joined) else {
            continue;
        };
        for caps in rx.captures_iter(text.as_bytes()) {
            let whole = caps.get(0).expect("group 0 is the match");
            let secret = if rule.group > 0 {
                caps.get(rule.group)
            } else {
                (1..caps.len())
                    .filter_map(|g| caps.get(g))
                    .find(|m| !m.is_empty())
            }
            // A group of a few bytes is a piece of the token (a repeated
            // group's last turn), not the token: redacting it would leave
            // the credential. The whole match is the secret then.
            .filter(|m| m.len() >= 8)
            .unwrap_or(whole);
            // Bytes matched, not characters: a secret that starts or ends
            // inside a character is no token.
            let whole_ok =
                text.is_char_boundary(whole.start()) && text.is_char_boundary(whole.end());
            let secret_ok =
                text.is_char_boundary(secret.start()) && text.is_char_boundary(secret.end());
            if whole_ok && secret_ok && kept(c, i, text, secret) {
                out.push(Hit {
                    kind: rule.kind,
                    start: secret.start(),
                    end: secret.end(),
                });
            }
        }
    }
    out
}

fn kept(c: &Compiled, i: usize, text: &str, secret: Match) -> bool {
    let rule = &VETTED[i];
    let s = &text[secret.range()];
    if s.is_empty()
        || super::distinct(s.as_bytes()) < 6
        || (rule.entropy > 0.0 && super::entropy(s.as_bytes()) < rule.entropy)
    {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    if c.global().iter().any(|r| r.is_match(s.as_bytes()))
        || GLOBAL_STOPWORDS.iter().any(|w| lower.contains(w))
    {
        return false;
    }
    for (allow, regexes) in rule.allow.iter().zip(c.allows(i)) {
        if regexes.iter().any(|r| r.is_match(s.as_bytes()))
            || allow.stopwords.iter().any(|w| lower.contains(w))
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_regex_of_the_table_compiles() {
        for rule in VETTED {
            assert!(regex(rule.regex).is_some(), "{}: {}", rule.kind, rule.regex);
            let joined = joined_form(rule.regex);
            assert!(regex(&joined).is_some(), "{} joined: {joined}", rule.kind);
            for word in rule.keywords {
                assert!(
                    word.len() >= 2 && *word == word.to_ascii_lowercase(),
                    "{}: keyword {word:?}",
                    rule.kind
                );
            }
            for allow in rule.allow {
                for r in allow.regexes {
                    assert!(regex(r).is_some(), "{} allowlist: {r}", rule.kind);
                }
            }
        }
        for r in GLOBAL_REGEXES {
            assert!(regex(r).is_some(), "global allowlist: {r}");
        }
    }

    #[test]
    fn the_joined_form_drops_the_boundaries_the_removed_spaces_held() {
        let dop = VETTED
            .iter()
            .find(|r| r.kind == "digitalocean_pat")
            .unwrap();
        assert!(dop.regex.ends_with(TERMINATOR), "{}", dop.regex);
        assert_eq!(joined_form(dop.regex), r"(dop_v1_[a-f0-9]{64})");
    }

    #[test]
    fn kinds_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for kind in kinds() {
            assert!(seen.insert(kind), "{kind} twice");
        }
    }
}
