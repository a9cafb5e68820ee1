//! The credential scan (SPEC §5): text an agent writes is scanned before it
//! is committed, and `sync` scans every commit it would push. Pure and
//! dependency-free: patterns are matched by hand, in a few linear passes, so
//! the scan costs microseconds on a todo file and runs on every write.
//!
//! What is caught, each under its rule name (`kind`):
//!
//! - **prefixed tokens** (GitHub, GitLab, Slack, OpenAI/Anthropic, Google,
//!   Stripe, npm, Hugging Face, AWS access key ids): the prefix found
//!   *anywhere* in the text, not only at a word start (`xghp_…`), followed
//!   by a body of the prefix's alphabet and minimum length (an AWS id may
//!   carry a suffix). A body of fewer than six distinct characters is a
//!   placeholder (`ghp_xxxx…`); generic prefixes (`sk-`, `hf_`, `npm_`) also
//!   need upper case, lower case and digits in the body;
//! - `aws_secret_key`: a 40-character base64 run with three character
//!   classes, less than 100 bytes after `aws` or `secret`;
//! - `assigned_secret`: `password`/`secret`/`token`/`api_key`/… (the tail of
//!   an identifier) then `=` or `:` and a value of at least 12 characters
//!   with two character classes and some entropy (not `${VAR}`, `<…>`, a URL
//!   or a path);
//! - `url_credentials`: `scheme://user:password@host` (the password is the
//!   secret); `private_key`: a `-----BEGIN … PRIVATE KEY-----` block;
//!   `jwt`: `eyJ….eyJ….<signature>`;
//! - **split** secrets: the text is also read with whitespace, line breaks,
//!   YAML escapes (`\n`, a `\` before a line break), quotes and `+` removed,
//!   so a token broken over lines, folded by YAML or written as
//!   `"ghp_ab" + "cd…"` joins up again. Only the specific prefixed rules and
//!   JWTs are applied to the joined text, and their bodies must then hold
//!   upper case, lower case and digits, so joined prose does not match;
//! - **base64**: a run of at least 24 base64 characters that decodes to
//!   printable text is scanned again (once, not recursively).
//!
//! The rules live in submodules by how they find a secret — by its shape
//! (`prefixed.rs`), by what stands before it (`named.rs`), by a service's
//! fixed format (`services.rs`), hidden (`hidden.rs`: split and base64) —
//! and gitleaks' in `vetted.rs`; [`scan`] runs them in order, and the
//! measures they share (character classes, entropy, base64) are here.
//!
//! Each [`Leak`] carries the exact text to remove (`secret`, never
//! serialized or printed) so `redact` can replace it, and a masked excerpt.

/// A credential-looking string found in some text.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Leak {
    /// The rule that matched.
    pub kind: &'static str,
    /// How it was hidden, if it was: `split` or `base64`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<&'static str>,
    /// The start of the match, with the rest masked.
    pub excerpt: String,
    /// The exact text that holds the credential (what redaction replaces).
    #[serde(skip)]
    pub secret: String,
}

impl Leak {
    /// `github_token: ghp_Ab…` (with ` (split)` / ` (base64)` when hidden).
    pub fn describe(&self) -> String {
        match self.via {
            Some(via) => format!("{} ({via}): {}", self.kind, self.excerpt),
            None => format!("{}: {}", self.kind, self.excerpt),
        }
    }
}

/// What `redact` puts in place of a secret.
///
/// Not `[redacted]`: a YAML plain scalar may not start with `[`, and a
/// secret that was a whole plain value must leave a valid file behind.
pub const REDACTED: &str = "<redacted>";

mod hidden;
mod named;
mod prefixed;
mod services;
mod vetted;
mod vetted_rule;
mod vetted_table;

use hidden::{base64_runs, split};
use named::{
    assignments, aws_secrets, basic_auth, bearers, command_credentials, netrc_passwords,
    url_credentials,
};
use prefixed::{jwts, prefixed};
use services::{azure_keys, discord_webhooks, private_keys, sendgrid_keys, slack_webhooks};

/// Every rule's name, as [`Leak::kind`] gives it: what
/// `--allow-secret-pattern` accepts. The hand rules first, then the vetted
/// ones.
pub fn rules() -> impl Iterator<Item = &'static str> {
    HAND_RULES.iter().copied().chain(vetted::kinds())
}

/// One vetted rule, as the tool that writes their corpus
/// (`examples/leak_corpus.rs`) reads it.
#[derive(Clone, Copy, Debug)]
pub struct VettedRule {
    pub kind: &'static str,
    /// As Go reads it: ASCII classes, ASCII case folding.
    pub regex: &'static str,
    /// The literal every match starts with (empty when none): such rules
    /// also run on split text.
    pub prefix: &'static str,
    /// Lower case; one must occur for the rule to run.
    pub keywords: &'static [&'static str],
}

/// The vetted rules, in table order.
pub fn vetted_rules() -> impl Iterator<Item = VettedRule> {
    vetted::table()
}

/// The hand rules' names.
const HAND_RULES: &[&str] = &[
    "github_token",
    "gitlab_token",
    "slack_token",
    "anthropic_key",
    "openai_key",
    "google_api_key",
    "stripe_key",
    "npm_token",
    "huggingface_token",
    "aws_access_key",
    "aws_secret_key",
    "assigned_secret",
    "url_credentials",
    "private_key",
    "jwt",
    "bearer_token",
    "basic_auth",
    "command_credentials",
    "netrc_password",
    "slack_webhook",
    "discord_webhook",
    "azure_key",
    "sendgrid_key",
    "vault_token",
];

/// The 1-based line numbers on which `secret` starts in `text` (every
/// occurrence), or the first line when it is not found as one piece.
pub fn lines_of(text: &str, secret: &str) -> Vec<usize> {
    let mut out = Vec::new();
    if !secret.is_empty() {
        let mut line = 1;
        let mut counted = 0;
        for (at, _) in text.match_indices(secret) {
            line += text.as_bytes()[counted..at]
                .iter()
                .filter(|&&c| c == b'\n')
                .count();
            counted = at;
            if out.last() != Some(&line) {
                out.push(line);
            }
        }
    }
    if out.is_empty() {
        out.push(1);
    }
    out
}

fn mask(s: &str) -> String {
    let keep: String = s.chars().take(6).collect();
    format!("{keep}…")
}

fn classes(s: &[u8]) -> (bool, bool, bool, bool) {
    let has = |f: fn(&u8) -> bool| s.iter().any(f);
    (
        has(u8::is_ascii_lowercase),
        has(u8::is_ascii_uppercase),
        has(u8::is_ascii_digit),
        s.iter()
            .any(|c| !c.is_ascii_alphanumeric() && !matches!(c, b'-' | b'_' | b'.')),
    )
}

fn distinct(s: &[u8]) -> usize {
    let mut seen = [false; 256];
    s.iter()
        .filter(|&&c| !std::mem::replace(&mut seen[c as usize], true))
        .count()
}

/// Shannon entropy in bits per byte.
fn entropy(s: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &c in s {
        counts[c as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Finds credential-looking strings in `text`.
pub fn scan(text: &str) -> Vec<Leak> {
    let mut out = Vec::new();
    scan_into(text, true, &mut out);
    out
}

/// [`scan`] of bytes that should be UTF-8 (invalid sequences are replaced).
pub fn scan_bytes(bytes: &[u8]) -> Vec<Leak> {
    scan(&String::from_utf8_lossy(bytes))
}

fn push(out: &mut Vec<Leak>, leak: Leak) {
    if !out
        .iter()
        .any(|l| l.kind == leak.kind && l.secret == leak.secret)
    {
        out.push(leak);
    }
}

/// Rules that judge a value by its context and shape, not by what issued
/// it: a vetted rule that finds the same token names it better.
const GENERIC: &[&str] = &["assigned_secret"];

/// A secret a rule before already found, in part or whole: a vetted rule
/// finding a GitHub token again under its own name adds nothing.
fn covered(out: &[Leak], secret: &str) -> bool {
    out.iter()
        .any(|l| l.secret.contains(secret) || secret.contains(l.secret.as_str()))
}

fn found(kind: &'static str, secret: &str) -> Leak {
    Leak {
        kind,
        via: None,
        excerpt: mask(secret),
        secret: secret.to_owned(),
    }
}

fn scan_into(text: &str, deep: bool, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    for (start, end, kind) in prefixed(bytes, false) {
        push(out, found(kind, &text[start..end]));
    }
    for (start, end) in jwts(bytes) {
        push(out, found("jwt", &text[start..end]));
    }
    private_keys(text, out);
    url_credentials(text, out);
    aws_secrets(text, out);
    assignments(text, out);
    bearers(text, out);
    basic_auth(text, out);
    command_credentials(text, out);
    netrc_passwords(text, out);
    slack_webhooks(text, out);
    discord_webhooks(text, out);
    azure_keys(text, out);
    sendgrid_keys(text, out);
    for hit in vetted::hits(text, false) {
        let secret = &text[hit.start..hit.end];
        // A generic rule's hit that is this token goes: the vetted rule
        // names what the token is (`LINEAR_KEY=lin_api_…` is a Linear key).
        out.retain(|l| !(GENERIC.contains(&l.kind) && secret.contains(l.secret.as_str())));
        if !covered(out, secret) {
            push(out, found(hit.kind, secret));
        }
    }
    if deep {
        split(text, out);
        base64_runs(text, out);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn is_b64url(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

fn is_b64(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

fn b64_value(c: u8) -> Option<u8> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    })
}

/// Decodes standard or URL-safe base64 (no padding), dropping trailing bits.
fn b64_decode(run: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(run.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in run {
        acc = (acc << 6) | u32::from(b64_value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// `text` with every occurrence of each of `secrets` replaced by [`REDACTED`].
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::prefixed::PREFIXES;
    use super::*;

    #[test]
    fn every_rule_a_scan_reports_is_named_in_rules() {
        for pre in PREFIXES {
            assert!(
                rules().any(|r| r == pre.kind),
                "{} not in rules()",
                pre.kind
            );
        }
        let lines = [
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "password=Xy7#kP2!mQ9zLr4v",
            "https://alice:s3cr3tPa55@git.example.org/x",
            "-----BEGIN RSA PRIVATE KEY-----",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36",
            "Bearer 8f3kQ2mZ9xLr4vT7wY1cB6nH",
        ];
        for line in lines {
            for leak in scan(line) {
                assert!(
                    rules().any(|r| r == leak.kind),
                    "{} not in rules()",
                    leak.kind
                );
            }
        }
    }
}
