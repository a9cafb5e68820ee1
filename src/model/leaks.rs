//! A basic credential scan of state text (SPEC §5: `sync` refuses to push
//! state that holds a credential). Patterns are matched by hand, so the scan
//! stays cheap and dependency-free; `check` will grow from here.

/// A credential-looking string found in some text.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Leak {
    pub kind: &'static str,
    /// The start of the match, with the rest masked.
    pub excerpt: String,
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// Length of the token run starting at `i`.
fn run_len(bytes: &[u8], i: usize) -> usize {
    bytes[i..].iter().take_while(|&&c| is_token_char(c)).count()
}

fn mask(s: &str) -> String {
    let keep: String = s.chars().take(6).collect();
    format!("{keep}…")
}

/// (prefix, kind, minimum length of the whole token, character check)
const PREFIXED: &[(&str, &str, usize)] = &[
    ("ghp_", "github_token", 40),
    ("gho_", "github_token", 40),
    ("ghs_", "github_token", 40),
    ("github_pat_", "github_token", 40),
    ("glpat-", "gitlab_token", 26),
    ("xoxb-", "slack_token", 20),
    ("xoxp-", "slack_token", 20),
    ("sk-", "api_key", 32),
    ("AIza", "google_api_key", 39),
];

/// Finds credential-looking strings in `text`.
pub fn scan(text: &str) -> Vec<Leak> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    if let Some(at) = text.find("-----BEGIN") {
        if text[at..].contains("PRIVATE KEY-----") {
            out.push(Leak {
                kind: "private_key",
                excerpt: "-----BEGIN … PRIVATE KEY-----".into(),
            });
        }
    }
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !is_token_char(bytes[i - 1]);
        if !boundary {
            i += 1;
            continue;
        }
        let len = run_len(bytes, i);
        if len == 0 {
            i += 1;
            continue;
        }
        let token = &text[i..i + len];
        let aws = len == 20
            && (token.starts_with("AKIA") || token.starts_with("ASIA"))
            && token[4..]
                .bytes()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        if aws {
            out.push(Leak {
                kind: "aws_access_key",
                excerpt: mask(token),
            });
        } else if let Some((_, kind, _)) = PREFIXED
            .iter()
            .find(|(p, _, min)| token.starts_with(p) && len >= *min)
        {
            out.push(Leak {
                kind,
                excerpt: mask(token),
            });
        }
        i += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::scan;

    #[test]
    fn finds_common_credentials_and_nothing_else() {
        let kinds = |s: &str| scan(s).into_iter().map(|l| l.kind).collect::<Vec<_>>();
        assert_eq!(kinds("key AKIAIOSFODNN7EXAMPLE here"), ["aws_access_key"]);
        assert_eq!(
            kinds(&format!("token=ghp_{}", "a".repeat(36))),
            ["github_token"]
        );
        assert_eq!(
            kinds("-----BEGIN OPENSSH PRIVATE KEY-----\nabc"),
            ["private_key"]
        );
        assert_eq!(kinds(&format!("sk-{}", "x".repeat(40))), ["api_key"]);
        assert!(
            kinds("todo_3f2a9c1b7d4e run_0123456789ab AKIA short sk-short ghp_short").is_empty()
        );
        assert!(kinds("a task-list with risk-based asks").is_empty());
        assert!(scan("AKIAIOSFODNN7EXAMPLE")[0].excerpt.ends_with('…'));
    }
}
