//! Secrets hidden from the direct rules: split over lines, quotes, `+` or
//! invisible characters (read again with them removed, where only the
//! specific rules apply), and base64-encoded (decoded and scanned once more,
//! not recursively).

use super::prefixed::{jwts, prefixed};
use super::services::discord_webhooks;
use super::{b64_decode, classes, distinct, is_b64, mask, push, scan_into, vetted, Leak};

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

pub(super) fn split(text: &str, out: &mut Vec<Leak>) {
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

pub(super) fn base64_runs(text: &str, out: &mut Vec<Leak>) {
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
