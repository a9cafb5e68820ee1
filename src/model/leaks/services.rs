//! A service's own credential formats, found by their fixed parts: PEM
//! private key blocks, Slack and Discord webhook URLs, Azure connection
//! string keys, SendGrid keys.

use super::{classes, distinct, find, found, is_b64, is_b64url, push, Leak};

pub(super) fn private_keys(text: &str, out: &mut Vec<Leak>) {
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

/// A Slack incoming-webhook URL (`hooks.slack.com/services/T…/B…/…`, or a
/// workflow trigger): the URL is the credential.
pub(super) fn slack_webhooks(text: &str, out: &mut Vec<Leak>) {
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
pub(super) fn discord_webhooks(text: &str, out: &mut Vec<Leak>) {
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
pub(super) fn azure_keys(text: &str, out: &mut Vec<Leak>) {
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
pub(super) fn sendgrid_keys(text: &str, out: &mut Vec<Leak>) {
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
