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

struct Prefix {
    text: &'static str,
    kind: &'static str,
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
const PREFIXES: &[Prefix] = &[
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

mod vetted;
mod vetted_rule;
mod vetted_table;

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

/// Identifier tails that introduce a secret value.
const KEYWORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "secret_key",
    "private_key",
    "credential",
    "credentials",
    "auth",
];

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

/// Every prefixed token: (start, end, kind).
fn prefixed(bytes: &[u8], joined: bool) -> Vec<(usize, usize, &'static str)> {
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

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn is_b64url(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

fn jwts(bytes: &[u8]) -> Vec<(usize, usize)> {
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

fn private_keys(text: &str, out: &mut Vec<Leak>) {
    let mut from = 0;
    while let Some(at) = text[from..].find("-----BEGIN ").map(|i| i + from) {
        from = at + 1;
        let header_end = text[at + 11..].find("-----").map(|i| at + 11 + i + 5);
        let Some(header_end) = header_end else { break };
        let header = &text[at..header_end];
        if !header.contains("PRIVATE KEY") || header.contains('\n') {
            continue;
        }
        let end = text[header_end..]
            .find("-----END ")
            .and_then(|i| {
                let e = header_end + i + 9;
                text[e..].find("-----").map(|j| e + j + 5)
            })
            .unwrap_or(header_end);
        push(
            out,
            Leak {
                kind: "private_key",
                via: None,
                excerpt: "-----BEGIN … PRIVATE KEY-----".into(),
                secret: text[at..end].to_owned(),
            },
        );
        from = end;
    }
}

fn url_credentials(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("://").map(|i| i + from) {
        from = at + 3;
        let scheme = bytes[..at]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-'))
            .count();
        if scheme < 2 {
            continue;
        }
        let authority_len = bytes[at + 3..]
            .iter()
            .take_while(|&&c| !c.is_ascii_whitespace() && !b"/?#\"'<>`".contains(&c))
            .count();
        let authority = &text[at + 3..at + 3 + authority_len];
        let Some(user_end) = authority.rfind('@') else {
            continue;
        };
        let userinfo = &authority[..user_end];
        let Some(colon) = userinfo.find(':') else {
            continue;
        };
        let password = &userinfo[colon + 1..];
        let placeholder =
            password.starts_with(['$', '<', '{', '%']) || password.bytes().all(|c| c == b'*');
        if password.is_empty() || placeholder || user_end + 1 == authority.len() {
            continue;
        }
        push(
            out,
            Leak {
                kind: "url_credentials",
                via: None,
                excerpt: format!("{}:…@", &userinfo[..colon]),
                secret: password.to_owned(),
            },
        );
    }
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

fn assignments(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    for keyword in KEYWORDS {
        let mut from = 0;
        while let Some(at) = lower[from..].find(keyword).map(|i| i + from) {
            from = at + keyword.len();
            let mut i = at + keyword.len();
            if bytes.get(i).is_some_and(|&c| is_ident(c)) {
                continue;
            }
            if matches!(bytes.get(i), Some(b'"' | b'\'')) {
                i += 1;
            }
            while bytes.get(i) == Some(&b' ') {
                i += 1;
            }
            match bytes.get(i) {
                Some(b'=') => {
                    i += if bytes.get(i + 1) == Some(&b'>') {
                        2
                    } else {
                        1
                    }
                }
                Some(b':') => {
                    i += if bytes.get(i + 1) == Some(&b'=') {
                        2
                    } else {
                        1
                    }
                }
                _ => continue,
            }
            while bytes.get(i) == Some(&b' ') {
                i += 1;
            }
            if matches!(bytes.get(i), Some(b'"' | b'\'')) {
                i += 1;
            }
            let len = bytes[i..]
                .iter()
                .take_while(|&&c| !c.is_ascii_whitespace() && !b"\"'`,;)]}".contains(&c))
                .count();
            let value = &text[i..i + len];
            if secret_like(value.as_bytes()) {
                push(
                    out,
                    Leak {
                        kind: "assigned_secret",
                        via: None,
                        excerpt: format!("{}=…", &text[at..at + keyword.len()]),
                        secret: value.to_owned(),
                    },
                );
            }
        }
    }
}

/// `Bearer <token>` (an HTTP `Authorization` value, any case): an opaque
/// token of at least 16 characters holding letters and digits, with some
/// entropy. A JWT is left to the `jwt` rule; `Bearer $TOKEN`, `<token>`
/// and prose ("bearer tokens expire") pass.
fn bearers(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("bearer").map(|i| i + from) {
        from = at + 6;
        if at > 0 && is_ident(bytes[at - 1]) {
            continue;
        }
        let spaces = bytes[from..].iter().take_while(|&&c| c == b' ').count();
        if spaces == 0 {
            continue;
        }
        let start = from + spaces;
        let len = bytes[start..]
            .iter()
            .take_while(|&&c| c.is_ascii_alphanumeric() || b"-._~+/=".contains(&c))
            .count();
        let value = &bytes[start..start + len];
        let (lower_c, upper, digit, _) = classes(value);
        if len < 16
            || !digit
            || !(lower_c || upper)
            || distinct(value) < 8
            || entropy(value) < 3.0
            || !jwts(value).is_empty()
        {
            continue;
        }
        push(out, found("bearer_token", &text[start..start + len]));
    }
}

/// `Basic <base64 of user:password>` (an HTTP `Authorization` value, any
/// case), when the value decodes to `user:password` with a password.
fn basic_auth(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("basic").map(|i| i + from) {
        from = at + 5;
        if at > 0 && is_ident(bytes[at - 1]) {
            continue;
        }
        let spaces = bytes[from..].iter().take_while(|&&c| c == b' ').count();
        let start = from + spaces;
        let len = bytes[start..]
            .iter()
            .take_while(|&&c| is_b64(c) || c == b'=')
            .count();
        if spaces == 0 || len < 8 {
            continue;
        }
        let value = &text[start..start + len];
        let decoded = b64_decode(value.trim_end_matches('=').as_bytes())
            .and_then(|d| String::from_utf8(d).ok());
        let Some((user, password)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
            continue;
        };
        let printable = |s: &str| s.chars().all(|c| c.is_ascii_graphic() || c == ' ');
        if !user.is_empty() && !placeholder(password) && printable(user) && printable(password) {
            push(out, found("basic_auth", value));
        }
    }
}

/// A value that stands for a secret rather than being one: empty, a
/// variable (`$X`, `${X}`, `%X%`), a `<placeholder>`, or stars.
fn placeholder(value: &str) -> bool {
    value.is_empty()
        || value.starts_with(['$', '<', '{', '%'])
        || value.bytes().all(|c| c == b'*' || c == b'x' || c == b'X')
}

/// `curl -u user:password` / `--user user:password`, and wget's
/// `--password=` / `--http-password=`: a password on a command line.
fn command_credentials(text: &str, out: &mut Vec<Leak>) {
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let curl = words.iter().any(|w| w.ends_with("curl"));
        let wget = words.iter().any(|w| w.ends_with("wget"));
        for (i, word) in words.iter().enumerate() {
            let unquote = |w: &str| w.trim_matches(|c| c == '\'' || c == '"').to_owned();
            let value = if curl && (*word == "-u" || *word == "--user") {
                words.get(i + 1).map(|w| unquote(w))
            } else if curl && word.starts_with("-u") && word.len() > 2 {
                Some(unquote(&word[2..]))
            } else if curl && word.starts_with("--user=") {
                Some(unquote(&word[7..]))
            } else if wget
                && (word.starts_with("--password=") || word.starts_with("--http-password="))
            {
                word.split_once('=')
                    .map(|(_, v)| format!(":{}", unquote(v)))
            } else {
                None
            };
            let Some(value) = value else { continue };
            if let Some((_, password)) = value.split_once(':') {
                if !placeholder(password) {
                    push(out, found("command_credentials", password));
                }
            }
        }
    }
}

/// A netrc entry's password: `password <value>` after `machine …` or
/// `login …` (on one line or over several, as netrc allows).
fn netrc_passwords(text: &str, out: &mut Vec<Leak>) {
    let words: Vec<&str> = text.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        if *word != "password" || i < 2 {
            continue;
        }
        // `machine M login L password P` (or `default login L …`), or
        // `machine M password P`.
        let entry = words[i - 2] == "machine"
            || (words[i - 2] == "login" && i >= 4 && matches!(words[i - 4], "machine" | "default"));
        let Some(value) = words.get(i + 1) else {
            continue;
        };
        if entry && !placeholder(value) && value.len() >= 4 {
            push(out, found("netrc_password", value));
        }
    }
}

/// A Slack incoming-webhook URL (`hooks.slack.com/services/T…/B…/…`, or a
/// workflow trigger): the URL is the credential.
fn slack_webhooks(text: &str, out: &mut Vec<Leak>) {
    for host in [
        "hooks.slack.com/services/",
        "hooks.slack.com/workflows/",
        "hooks.slack.com/triggers/",
    ] {
        let mut from = 0;
        while let Some(at) = text[from..].find(host).map(|i| i + from) {
            from = at + host.len();
            let len = text.as_bytes()[from..]
                .iter()
                .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'/' || c == b'_' || c == b'-')
                .count();
            let path = &text[from..from + len];
            let secret_part = path.rsplit('/').next().unwrap_or("");
            if path.matches('/').count() >= 2
                && secret_part.len() >= 16
                && distinct(secret_part.as_bytes()) >= 8
            {
                push(out, found("slack_webhook", path));
            }
        }
    }
}

/// A Discord webhook URL (`discord.com/api/webhooks/<id>/<token>`, also
/// `discordapp.com`, `ptb.` and `canary.`): the id and token are the
/// credential.
fn discord_webhooks(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    for host in ["discord.com/api/webhooks/", "discordapp.com/api/webhooks/"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(host).map(|i| i + from) {
            from = at + host.len();
            let id = bytes[from..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if !(17..=20).contains(&id) || bytes.get(from + id) != Some(&b'/') {
                continue;
            }
            let token_at = from + id + 1;
            let token = bytes[token_at..]
                .iter()
                .take_while(|&&c| is_b64url(c))
                .count();
            if token >= 60 && distinct(&bytes[token_at..token_at + token]) >= 10 {
                push(out, found("discord_webhook", &text[from..token_at + token]));
            }
        }
    }
}

/// An Azure storage or service-bus connection string's key
/// (`AccountKey=…`, `SharedAccessKey=…`): base64 of 20 characters or more.
fn azure_keys(text: &str, out: &mut Vec<Leak>) {
    let lower = text.to_ascii_lowercase();
    for key in ["accountkey=", "sharedaccesskey="] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(key).map(|i| i + from) {
            from = at + key.len();
            let len = text.as_bytes()[from..]
                .iter()
                .take_while(|&&c| is_b64(c) || c == b'=')
                .count();
            let value = &text[from..from + len];
            let (lower_c, upper, digit, _) = classes(value.as_bytes());
            if len >= 20 && [lower_c, upper, digit].iter().filter(|&&b| b).count() >= 2 {
                push(out, found("azure_key", value));
            }
        }
    }
}

/// A SendGrid API key: `SG.` then 22 and 43 characters of URL-safe base64,
/// joined by a dot.
fn sendgrid_keys(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], b"SG.").map(|i| i + from) {
        from = at + 3;
        let seg = |i: usize| {
            bytes[i.min(bytes.len())..]
                .iter()
                .take_while(|&&c| is_b64url(c))
                .count()
        };
        let a = seg(from);
        if a < 16 || bytes.get(from + a) != Some(&b'.') {
            continue;
        }
        let b = seg(from + a + 1);
        if b >= 30 {
            push(out, found("sendgrid_key", &text[at..from + a + 1 + b]));
        }
    }
}

fn secret_like(v: &[u8]) -> bool {
    if v.len() < 12
        || v.starts_with(b"$")
        || v.starts_with(b"<")
        || v.starts_with(b"{")
        || v.starts_with(b"%")
        || v.starts_with(b"/")
        || v.starts_with(b".")
        || v.starts_with(b"~")
        || find(v, b"://").is_some()
    {
        return false;
    }
    let (lower, upper, digit, symbol) = classes(v);
    let n = [lower, upper, digit, symbol].iter().filter(|&&b| b).count();
    n >= 2 && distinct(v) >= 8 && entropy(v) >= 3.0
}

fn is_b64(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

fn aws_secrets(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut i = 0;
    while i < bytes.len() {
        if !is_b64(bytes[i]) {
            i += 1;
            continue;
        }
        let len = bytes[i..].iter().take_while(|&&c| is_b64(c)).count();
        if len == 40 {
            let run = &bytes[i..i + 40];
            let (lower_c, upper, digit, symbol) = classes(run);
            let n = [lower_c, upper, digit, symbol]
                .iter()
                .filter(|&&b| b)
                .count();
            let mut window = i.saturating_sub(100);
            while !lower.is_char_boundary(window) {
                window += 1;
            }
            let near = &lower[window..i];
            if n >= 3 && (near.contains("aws") || near.contains("secret")) {
                push(out, found("aws_secret_key", &text[i..i + 40]));
            }
        }
        i += len;
    }
}

/// The text with separators removed, and where each kept byte came from.
fn joined(text: &str) -> (Vec<u8>, Vec<usize>) {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut from = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let skip = match c {
            b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'' | b'+' => 1,
            // Invisible: zero-width space, non-joiner, joiner, word joiner,
            // byte-order mark, soft hyphen.
            0xE2 if matches!(&bytes[i + 1..], [0x80, 0x8B..=0x8D, ..] | [0x81, 0xA0, ..]) => 3,
            0xEF if bytes[i + 1..].starts_with(&[0xBB, 0xBF]) => 3,
            0xC2 if bytes.get(i + 1) == Some(&0xAD) => 2,
            b'\\' => match bytes.get(i + 1) {
                Some(b'n' | b't' | b'r' | b'"' | b'\n') => 2,
                _ => 0,
            },
            _ => 0,
        };
        if skip > 0 {
            i += skip;
            continue;
        }
        out.push(c);
        from.push(i);
        i += 1;
    }
    (out, from)
}

fn split(text: &str, out: &mut Vec<Leak>) {
    if !text.bytes().any(|c| {
        matches!(
            c,
            b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'' | b'+' | b'\\' | 0xC2 | 0xE2 | 0xEF
        )
    }) {
        return;
    }
    let (bytes, from) = joined(text);
    let mut hits: Vec<(usize, usize, &'static str)> = prefixed(&bytes, true);
    hits.extend(jwts(&bytes).into_iter().map(|(s, e)| (s, e, "jwt")));
    // The vetted rules that start with a literal, when the joined bytes
    // are text (they are when the text was: only whole characters go).
    if let Ok(joined_text) = std::str::from_utf8(&bytes) {
        hits.extend(
            vetted::hits(joined_text, true)
                .into_iter()
                .filter(|h| joined_like(&bytes[h.start..h.end]))
                .map(|h| (h.start, h.end, h.kind)),
        );
        // A webhook URL is a prefixed token too.
        let mut webhooks = Vec::new();
        discord_webhooks(joined_text, &mut webhooks);
        for leak in webhooks {
            if let Some(at) = joined_text.find(&leak.secret) {
                hits.push((at, at + leak.secret.len(), leak.kind));
            }
        }
    }
    let mut direct = prefixed(text.as_bytes(), false);
    direct.extend(
        jwts(text.as_bytes())
            .into_iter()
            .map(|(s, e)| (s, e, "jwt")),
    );
    direct.extend(
        vetted::hits(text, false)
            .into_iter()
            .map(|h| (h.start, h.end, h.kind)),
    );
    for (start, end, kind) in hits {
        let (o_start, o_end) = (from[start], from[end - 1] + 1);
        // Contiguous in the text: found (or not) by the direct rules. A
        // whole token the direct rules found, joined up with the next
        // line's text, is that token, not a longer one.
        if o_end - o_start == end - start
            || direct.iter().any(|&(s, _, k)| s == o_start && k == kind)
        {
            continue;
        }
        let pieces = String::from_utf8_lossy(&bytes[start..end]);
        push(
            out,
            Leak {
                kind,
                via: Some("split"),
                excerpt: mask(&pieces),
                secret: text[o_start..o_end].to_owned(),
            },
        );
    }
}

/// A vetted rule's secret found in joined text is a token, not prose run
/// together: it holds letters and digits and eight distinct characters.
fn joined_like(secret: &[u8]) -> bool {
    let (lower, upper, digit, _) = classes(secret);
    (lower || upper) && digit && distinct(secret) >= 8
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

fn base64_runs(text: &str, out: &mut Vec<Leak>) {
    let bytes = text.as_bytes();
    let in_run = |c: u8| is_b64(c) || c == b'-' || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !in_run(bytes[i]) {
            i += 1;
            continue;
        }
        let len = bytes[i..].iter().take_while(|&&c| in_run(c)).count();
        let run = &bytes[i..i + len];
        // Standard and URL-safe alphabets are not mixed in one encoding.
        let std = run.iter().any(|c| matches!(c, b'+' | b'/'));
        let url = run.iter().any(|c| matches!(c, b'-' | b'_'));
        if (24..=16_384).contains(&len) && !(std && url) {
            if let Some(decoded) = b64_decode(run).and_then(|d| String::from_utf8(d).ok()) {
                let printable = decoded
                    .chars()
                    .filter(|c| !c.is_control() || c.is_whitespace())
                    .count();
                if printable * 10 >= decoded.chars().count() * 9 {
                    let mut inner = Vec::new();
                    scan_into(&decoded, false, &mut inner);
                    for leak in inner {
                        let secret = &text[i..i + len];
                        push(
                            out,
                            Leak {
                                kind: leak.kind,
                                via: Some("base64"),
                                excerpt: mask(secret),
                                secret: secret.to_owned(),
                            },
                        );
                    }
                }
            }
        }
        i += len;
    }
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
