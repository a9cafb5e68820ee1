//! Tokens known by their shape alone: a service's prefix and a body of its
//! alphabet and length (`ghp_…`, `sk-ant-…`, `AKIA…`), and JSON web tokens.
//! Both also run on joined text (see `hidden.rs`), where the prefixed
//! rules are stricter.

use super::{classes, distinct, find, is_b64url};

/// Body alphabets.
#[derive(Clone, Copy)]
enum Body {
    Alnum,
    /// alnum and `_`
    Word,
    /// alnum, `_` and `-`
    Dash,
    /// `A-Z` and `0-9`
    Upper,
}

impl Body {
    fn accepts(self, c: u8) -> bool {
        match self {
            Body::Alnum => c.is_ascii_alphanumeric(),
            Body::Word => c.is_ascii_alphanumeric() || c == b'_',
            Body::Dash => c.is_ascii_alphanumeric() || c == b'_' || c == b'-',
            Body::Upper => c.is_ascii_uppercase() || c.is_ascii_digit(),
        }
    }
}

pub(super) struct Prefix {
    text: &'static str,
    pub(super) kind: &'static str,
    min: usize,
    body: Body,
    /// A generic prefix: the body must mix upper, lower and digits.
    generic: bool,
}

const fn p(text: &'static str, kind: &'static str, min: usize, body: Body) -> Prefix {
    Prefix {
        text,
        kind,
        min,
        body,
        generic: false,
    }
}

const fn g(text: &'static str, kind: &'static str, min: usize, body: Body) -> Prefix {
    Prefix {
        text,
        kind,
        min,
        body,
        generic: true,
    }
}

/// Longer prefixes first: `sk-ant-` before `sk-`.
pub(super) const PREFIXES: &[Prefix] = &[
    p("github_pat_", "github_token", 22, Body::Word),
    p("ghp_", "github_token", 30, Body::Alnum),
    p("gho_", "github_token", 30, Body::Alnum),
    p("ghu_", "github_token", 30, Body::Alnum),
    p("ghs_", "github_token", 30, Body::Alnum),
    p("ghr_", "github_token", 30, Body::Alnum),
    p("glpat-", "gitlab_token", 20, Body::Dash),
    p("glptt-", "gitlab_token", 20, Body::Dash),
    p("glrt-", "gitlab_token", 20, Body::Dash),
    p("gldt-", "gitlab_token", 20, Body::Dash),
    p("xoxb-", "slack_token", 10, Body::Dash),
    p("xoxp-", "slack_token", 10, Body::Dash),
    p("xoxa-", "slack_token", 10, Body::Dash),
    p("xoxr-", "slack_token", 10, Body::Dash),
    p("xoxs-", "slack_token", 10, Body::Dash),
    p("xapp-", "slack_token", 10, Body::Dash),
    p("sk-ant-", "anthropic_key", 32, Body::Dash),
    p("sk-proj-", "openai_key", 32, Body::Dash),
    p("sk-svcacct-", "openai_key", 32, Body::Dash),
    g("sk-", "openai_key", 32, Body::Alnum),
    p("AIza", "google_api_key", 35, Body::Dash),
    p("sk_live_", "stripe_key", 20, Body::Alnum),
    p("rk_live_", "stripe_key", 20, Body::Alnum),
    g("npm_", "npm_token", 36, Body::Alnum),
    g("hf_", "huggingface_token", 30, Body::Alnum),
    p("hvs.", "vault_token", 24, Body::Dash),
    p("hvb.", "vault_token", 24, Body::Dash),
    p("hvr.", "vault_token", 24, Body::Dash),
    p("AKIA", "aws_access_key", 16, Body::Upper),
    p("ASIA", "aws_access_key", 16, Body::Upper),
    p("AGPA", "aws_access_key", 16, Body::Upper),
    p("AIDA", "aws_access_key", 16, Body::Upper),
    p("AROA", "aws_access_key", 16, Body::Upper),
    p("ANPA", "aws_access_key", 16, Body::Upper),
    p("ANVA", "aws_access_key", 16, Body::Upper),
    p("AIPA", "aws_access_key", 16, Body::Upper),
];

/// Every prefixed token: (start, end, kind).
pub(super) fn prefixed(bytes: &[u8], joined: bool) -> Vec<(usize, usize, &'static str)> {
    let mut hits: Vec<(usize, usize, &'static str)> = Vec::new();
    // One pass: only a few bytes can start a prefix.
    let mut starts = [false; 256];
    for pre in PREFIXES {
        starts[pre.text.as_bytes()[0] as usize] = true;
    }
    for at in 0..bytes.len() {
        if !starts[bytes[at] as usize] {
            continue;
        }
        for pre in PREFIXES {
            if joined && pre.generic {
                continue;
            }
            let needle = pre.text.as_bytes();
            if !bytes[at..].starts_with(needle) {
                continue;
            }
            let body_start = at + needle.len();
            let body_len = bytes[body_start..]
                .iter()
                .take_while(|&&c| pre.body.accepts(c))
                .count();
            let body = &bytes[body_start..body_start + body_len];
            if body_len < pre.min || distinct(body) < 6 {
                continue;
            }
            let (lower, upper, digit, _) = classes(body);
            let mixed = match pre.body {
                Body::Upper => digit,
                _ => lower && upper && digit,
            };
            if (pre.generic || joined) && !mixed {
                continue;
            }
            // Inside a longer prefix's match (`sk-` in `sk-ant-`): skip.
            if hits.iter().any(|&(s, e, _)| s <= at && at < e) {
                continue;
            }
            hits.push((at, body_start + body_len, pre.kind));
        }
    }
    hits
}

pub(super) fn jwts(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], b"eyJ").map(|i| i + from) {
        let seg = |i: usize| {
            bytes[i.min(bytes.len())..]
                .iter()
                .take_while(|&&c| is_b64url(c))
                .count()
        };
        let a = seg(at);
        let dot1 = at + a;
        from = dot1.max(at + 1);
        if a < 10 || bytes.get(dot1) != Some(&b'.') || !bytes[dot1 + 1..].starts_with(b"eyJ") {
            continue;
        }
        let b = seg(dot1 + 1);
        let dot2 = dot1 + 1 + b;
        if b < 10 || bytes.get(dot2) != Some(&b'.') {
            continue;
        }
        let c = seg(dot2 + 1);
        if c >= 16 {
            out.push((at, dot2 + 1 + c));
            from = dot2 + 1 + c;
        }
    }
    out
}
