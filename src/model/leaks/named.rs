//! Secrets given away by what stands before them: a keyword and `=` or
//! `:`, a URL's user info, an HTTP `Authorization` scheme, a command's
//! password flag, a netrc entry, `aws` or `secret` near a 40-character
//! base64 run. The value must still look like a secret, not a variable or
//! a placeholder.

use super::prefixed::jwts;
use super::{b64_decode, classes, distinct, entropy, find, found, is_b64, push, Leak};

pub(super) fn url_credentials(text: &str, out: &mut Vec<Leak>) {
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

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

pub(super) fn assignments(text: &str, out: &mut Vec<Leak>) {
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

/// `Bearer <token>` (an HTTP `Authorization` value, any case): an opaque
/// token of at least 16 characters holding letters and digits, with some
/// entropy. A JWT is left to the `jwt` rule; `Bearer $TOKEN`, `<token>`
/// and prose ("bearer tokens expire") pass.
pub(super) fn bearers(text: &str, out: &mut Vec<Leak>) {
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
pub(super) fn basic_auth(text: &str, out: &mut Vec<Leak>) {
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

/// `curl -u user:password` / `--user user:password`, and wget's
/// `--password=` / `--http-password=`: a password on a command line.
pub(super) fn command_credentials(text: &str, out: &mut Vec<Leak>) {
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
pub(super) fn netrc_passwords(text: &str, out: &mut Vec<Leak>) {
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

pub(super) fn aws_secrets(text: &str, out: &mut Vec<Leak>) {
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

/// A value that stands for a secret rather than being one: empty, a
/// variable (`$X`, `${X}`, `%X%`), a `<placeholder>`, or stars.
fn placeholder(value: &str) -> bool {
    value.is_empty()
        || value.starts_with(['$', '<', '{', '%'])
        || value.bytes().all(|c| c == b'*' || c == b'x' || c == b'X')
}
