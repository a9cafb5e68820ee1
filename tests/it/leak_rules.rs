//! The rule table: lines that must be caught (with the rule that catches
//! them) and lines that must pass.

use loopx::model::leaks::*;

const GH: &str = "R8x2Kq9LmN4pVt7Zw3Yc6Hj1Bs5Df0Ga8Ue2";

/// The rules that catch `text`, as `kind` or `kind/via`.
pub(crate) fn kinds(text: &str) -> Vec<String> {
    scan(text)
        .into_iter()
        .map(|l| match l.via {
            Some(via) => format!("{}/{via}", l.kind),
            None => l.kind.to_owned(),
        })
        .collect()
}

#[test]
fn must_catch() {
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    let table: Vec<(String, &str)> = vec![
        ("key AKIAIOSFODNN7EXAMPLE here".into(), "aws_access_key"),
        ("AKIAIOSFODNN7EXAMPLEXYZ123".into(), "aws_access_key"),
        ("idXAKIAIOSFODNN7EXAMPLE".into(), "aws_access_key"),
        ("temp ASIAY34FZKBOKMUTVV7A".into(), "aws_access_key"),
        (format!("token ghp_{GH}"), "github_token"),
        (format!("xghp_{GH}"), "github_token"),
        (format!("Xghp_{GH}"), "github_token"),
        (format!("gho_{GH}"), "github_token"),
        (format!("(ghu_{GH})"), "github_token"),
        (format!("ghs_{GH}."), "github_token"),
        (format!("ghr_{GH}"), "github_token"),
        (format!("export GITHUB_TOKEN=ghp_{GH}"), "github_token"),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF".into(),
            "github_token",
        ),
        ("glpat-xY3kP9mQ2vR7tL5wZ8nB".into(), "gitlab_token"),
        (
            "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp".into(),
            "slack_token",
        ),
        (
            "https://hooks.example.com/x?t=xoxp-2233445566-AbCdEfGh12".into(),
            "slack_token",
        ),
        (
            "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCd".into(),
            "anthropic_key",
        ),
        (
            "sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7jK".into(),
            "openai_key",
        ),
        (
            "OPENAI sk-Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7jKl0nMp3r".into(),
            "openai_key",
        ),
        (
            "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY".into(),
            "google_api_key",
        ),
        ("sk_live_51H8xYzAbCdEfGhIjKlMnOp".into(), "stripe_key"),
        ("rk_live_51H8xYzAbCdEfGhIjKlMnOp".into(), "stripe_key"),
        (
            "npm_Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7j".into(),
            "npm_token",
        ),
        (
            "hf_Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fG".into(),
            "huggingface_token",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            "aws_secret_key",
        ),
        (
            "the secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            "aws_secret_key",
        ),
        ("password=Xy7#kP2!mQ9zLr4v".into(), "assigned_secret"),
        ("DB_PASSWORD: 'Tr0ub4dor&3xyzzy'".into(), "assigned_secret"),
        ("api_key=9f8e7d6c5b4aA1B2C3D4".into(), "assigned_secret"),
        (
            "\"client_secret\": \"q8W2e9R4t7Y1u3I5o\"".into(),
            "assigned_secret",
        ),
        (
            "git clone https://user:pass@host.example.com/repo.git".into(),
            "url_credentials",
        ),
        (
            "remote https://alice:s3cr3tPa55@git.example.org/x".into(),
            "url_credentials",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----".into(),
            "private_key",
        ),
        ("-----BEGIN OPENSSH PRIVATE KEY-----".into(), "private_key"),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----".into(),
            "private_key",
        ),
        (format!("bearer {jwt}"), "jwt"),
        (
            "ghp_R8x2Kq9LmN4pVt7Z\nw3Yc6Hj1Bs5Df0Ga8Ue2".into(),
            "github_token/split",
        ),
        (
            "text: |\n  ghp_R8x2Kq9LmN4pVt7Z\n  w3Yc6Hj1Bs5Df0Ga8Ue2\n".into(),
            "github_token/split",
        ),
        (
            "text: \"ghp_R8x2Kq9LmN\\n4pVt7Zw3Yc6Hj1Bs5Df0Ga8Ue2\"".into(),
            "github_token/split",
        ),
        (
            "\"ghp_R8x2Kq9LmN\" + \"4pVt7Zw3Yc6Hj1Bs5Df0Ga8Ue2\"".into(),
            "github_token/split",
        ),
        ("AKIA IOSF ODNN 7EXA MPLE".into(), "aws_access_key/split"),
        (
            "b64 dG9rZW4gZ2hwX1I4eDJLcTlMbU40cFZ0N1p3M1ljNkhqMUJzNURmMEdhOFVlMg==".into(),
            "github_token/base64",
        ),
        (
            "QUtJQUlPU0ZPRE5ON0VYQU1QTEU=".into(),
            "aws_access_key/base64",
        ),
        (
            "cGFzc3dvcmQ9WHk3I2tQMiFtUTl6THI0dg==".into(),
            "assigned_secret/base64",
        ),
        (
            "Authorization: Bearer 8f3kQ2mZ9xLr4vT7wY1cB6nH".into(),
            "bearer_token",
        ),
        (
            "curl -H 'authorization: bearer ya29.a0AfH6SMBx3kq9Lm2'".into(),
            "bearer_token",
        ),
        (
            "GITHUB_TOKEN=github_pat_11AB2CD3E0abcDEF456ghiJKL789mnoPQR".into(),
            "github_token",
        ),
        (
            "SLACK_BOT=xoxb-2048-4096-Zq8Wm3Kd9PfL2vRt".into(),
            "slack_token",
        ),
        (
            "postgres://app:Zk9!vQ2pL7mX4@db.internal:5432/prod".into(),
            "url_credentials",
        ),
        (
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----".into(),
            "private_key",
        ),
        ("API_KEY = \"a8F3k2Lq9Zx7Vw1Mn4\"".into(), "assigned_secret"),
        (
            "post to https://hooks.slack.com/services/T024BE7LD/B01ABCDEFGH/Xq3kP9mZ2vR7tL5wZ8nB4cD1".into(),
            "slack_webhook",
        ),
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u==;EndpointSuffix=core.windows.net".into(),
            "azure_key",
        ),
        (
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=q8W2e9R4t7Y1u3I5o6P0aSdFgHjKl=".into(),
            "azure_key",
        ),
        (
            "SENDGRID=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".into(),
            "sendgrid_key",
        ),
        ("VAULT_TOKEN=hvs.CAESIJ3kP9mZ2vR7tL5wZ8nB4cD1xYqW".into(), "vault_token"),
        (
            "Authorization: Basic YWxpY2U6czNjcjN0UGE1NQ==".into(),
            "basic_auth",
        ),
        (
            "curl -u alice:s3cr3tPa55 https://api.example.com/v1".into(),
            "command_credentials",
        ),
        (
            "curl --user 'bob:Tr0ub4dor' https://api.example.com".into(),
            "command_credentials",
        ),
        (
            "machine api.example.com login alice password s3cr3tPa55".into(),
            "netrc_password",
        ),
        (
            "machine git.example.org\n  login bob\n  password hunter2x\n".into(),
            "netrc_password",
        ),
        (
            "ghp_R8x2Kq9LmN4p\u{200B}Vt7Zw3Yc6Hj1Bs5Df0Ga8Ue2".into(),
            "github_token/split",
        ),
        (
            "AKIA\u{2060}IOSFODNN7EXAMPLE".into(),
            "aws_access_key/split",
        ),
        // Shapes the vetted rules add (issue 47: 9 of 47 passed before).
        ("publish with pypi-AgEIcHlwaS5vcmctI36rgxyF1DNAh9Bo2det4eEvtrZeEQqMuxgMdqb8O1tkehtF9nyhcOaw_gT4BVKJi83uEh8oCfbs3XW".into(), "pypi_upload_token"),
        ("LINEAR_API_KEY=lin_api_e6MIGIuykWhZGRcApHaEXBQCILvg1fMyxzfhdkkA".into(), "linear_api_key"),
        ("notify: https://discord.com/api/webhooks/1228509306101408439/TiK_rGO01tm_RIO76C3Ik_OftqV7CM66jDYkFh9xIN9un0aLNnzquNL2uGsHyigala7m".into(), "discord_webhook"),
        ("doctl auth init -t dop_v1_eea14f00dee893935dafd78a0ce5c1552fd17e5c042c0cfeb3c32dd35ffe2cad".into(), "digitalocean_pat"),
        ("refresh: dor_v1_6ac24fa38f2b0c276893195f7cf0c7b3a253752455224cb3d97b2a3164a2adbd".into(), "digitalocean_refresh_token"),
        ("shopify: 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".into(), "shopify_access_token"),
        ("postman key PMAK-9108b66bb46e199d3ddbf81f-78c10c6db2bae22f82567df6903086bf6a".into(), "postman_api_token"),
        ("grafana: glsa_Z6CrplaUzziW5AGBTyDmN002h3nAC3jl_1ce628cb".into(), "grafana_service_account_token"),
        ("DATABRICKS_TOKEN=dapi12991eeda28db3cc590064720dddd44c".into(), "databricks_api_token"),
        ("DOPPLER_TOKEN=dp.pt.ip6dQo0pJEClP0ulIE6BIHhxIn278Skm4ajv9fn2l3B".into(), "doppler_api_token"),
        ("sentry: 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".into(), "sentry_user_token"),
        ("pulumi login with pul-71bc5f56c1fa283468c38b3cb798a169ea3458a8".into(), "pulumi_api_token"),
        ("gem push key rubygems_3961866ff2c043d97d62672d9ab32ae632af71a9c8128e7f".into(), "rubygems_api_token"),
        ("PPLX=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".into(), "perplexity_api_key"),
        ("notion: 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".into(), "notion_api_token"),
        ("age: AGE-SECRET-KEY-1NZD7PKQJ360AAR9GEUT0ZEUXPUL22035VL3AS48WSWZG0U95D5XS23HG29".into(), "age_secret_key"),
        ("NEW_RELIC_API_KEY=NRAK-LD6L9GSCULF2RGTM5JIP8PTQ3BT".into(), "new_relic_user_api_key"),
        ("dt0c01.MB1LR5M2AXPZ6LLLDNUZTRFT.OC94TPS3LL9T3SSDTCEZ61JYY8O79028LQZUVHY1IF1PPAQ8BVZ8TMQEDPLWWF5Q".into(), "dynatrace_api_token"),
        ("telegram_bot_token: 4953047318:AAnXyjZjUUoTj9MkhTyccWLlS7lENcaNZ-x".into(), "telegram_bot_api_token"),
        ("key: lin_api_e6MIGIuykWhZGRcA\n  pHaEXBQCILvg1fMyxzfhdkkA".into(), "linear_api_key/split"),
        ("note: \"dop_v1_eea14f00dee893935dafd78a0ce5c\" +\n  \"1552fd17e5c042c0cfeb3c32dd35ffe2cad\"".into(), "digitalocean_pat/split"),
        ("config: RElHSVRBTE9DRUFOX1RPS0VOPWRvcF92MV9lZWExNGYwMGRlZTg5MzkzNWRhZmQ3OGEwY2U1YzE1NTJmZDE3ZTVjMDQyYzBjZmViM2MzMmRkMzVmZmUyY2Fk".into(), "digitalocean_pat/base64"),
    ];
    assert!(table.len() >= 50);
    for (line, kind) in &table {
        let got = kinds(line);
        assert!(
            got.iter().any(|k| k == kind),
            "{line:?} must be caught as {kind}, got {got:?}"
        );
    }
}

#[test]
fn must_pass() {
    let table = [
        "todo_3f2a9c1b7d4e",
        "run_0123456789ab and turn_ab12cd34ef56",
        "3a94740e2b5c3f8a9d1e6b7c4f0a2d8e9b1c3f5a",
        "commit 3a94740e2b5c3f8a9d1e6b7c4f0a2d8e9b1c3f5a fixes the secret handling",
        "fix the task-list in risk-based ordering",
        "see src/store/gix_store.rs and docs/ARCHITECTURE.md",
        "goals/g/todos/3f/todo_3f2a9c1b7d4e.yaml",
        "https://github.com/org/repo/pull/123",
        "ssh://git@github.com/org/repo.git",
        "https://example.com:8443/path?q=1#frag",
        "https://user@host.example.com/",
        "version 1.2.3-beta.4+build.5",
        "550e8400-e29b-41d4-a716-446655440000",
        "ghp_xxx",
        "sk-short",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "AKIA short",
        "AKIAXXXXXXXXXXXXXXXX",
        "password: hunter2",
        "token=${GITHUB_TOKEN}",
        "secret: <your secret here>",
        "password: see the team vault",
        "api_key: $API_KEY",
        "max_tokens=4096",
        "the token_count: 123456789012345",
        "secret: https://vault.example.com/v1/secret/data/app",
        "Check the ghp_ token rotation docs for more details on this",
        "Rotate the sk- keys and the AKIA ids every 90 days as the policy says",
        "disk-0123456789abcdef0123456789abcdef",
        "desk-based asks, task-specific notes, mask-free",
        "expires_at: '2026-01-01T00:00:00Z'",
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----",
        "The quick brown fox jumps over the lazy dog, again and again.",
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "base64 of a greeting: aGVsbG8gd29ybGQgdGhpcyBpcyBmaW5l",
        "eyJhbGciOiJIUzI1NiJ9 alone",
        "authorization is handled by the proxy",
        "password_policy: min 12 chars",
        "token: 0",
        "internationalization-localization-and-accessibility",
        "aws region us-east-1, bucket my-bucket-name-with-forty-chars-xx",
        "Loopx-Op: todo add\nLoopx-Todo: todo_3f2a9c1b7d4e\nLoopx-Agent: agent-a",
        "secret: my-app-secret-name",
        "The Secret Garden, chapter 1: Mary Lennox arrives at Misselthwaite Manor",
        "<redacted> was here",
        "export GITHUB_TOKEN=<YOUR_TOKEN>",
        "api_key = \"<YOUR_API_KEY>\"",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $ACCESS_TOKEN",
        "Bearer tokens expire after an hour; ask for a new one",
        "the bearer of this note may open the gate",
        "Bearer abcdefghijklmnopqrstuvwxyz",
        "postgres://app:${DB_PASSWORD}@db.internal:5432/prod",
        "store the password in the vault, never in a todo",
        "gate_7c1e9a2b4d6f resolved by alice",
        "merge 9fceb02d0ae598e95dc970b74767f19372d61af8 into main",
        "ticket 6ba7b810-9dad-11d1-80b4-00c04fd430c8 closed",
        "curl -u $USER:$PASS https://api.example.com",
        "curl -u alice https://api.example.com (prompts for the password)",
        "docker run -u 1000:1000 image",
        "Basic training starts on Monday",
        "the login page password reset flow is broken",
        "post to https://hooks.slack.com/services/<your webhook>",
        "AccountKey=<your key>;EndpointSuffix=core.windows.net",
        "SG.example is not a key",
        "hvs.short",
        "machine learning login flows",
        "password <see vault>",
        // Near misses of the vetted rules' shapes.
        "publish with the pypi-AgEIcHlwaS5vcmc prefix token from the vault",
        "Linear keys start lin_api_ and are 40 characters long",
        "post the summary to https://discord.com/api/webhooks/<id>/<token>",
        "dop_v1_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "shpat_ tokens go to the store admin, not here",
        "evidence: pytest 142 passed in 3.21s at 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "the Sentry issue SENTRY-1234 and the Grafana board 7",
        "DATABRICKS_TOKEN=${DATABRICKS_TOKEN}",
        "telegram channel t.me/loopx, twitter handle @loopx",
        "ask the Twilio SKU list owner; task SK-12 is done",
        "the Adobe, Algolia and Atlassian plans are in docs/vendors.md",
    ];
    assert!(table.len() >= 50);
    for line in table {
        assert_eq!(kinds(line), Vec::<String>::new(), "{line:?} must pass");
    }
}

#[test]
fn a_token_at_a_line_end_is_not_joined_with_the_next_line() {
    let text = format!("fix with ghp_{GH}\n\nLoopx-Op: todo update");
    let secrets: Vec<String> = scan(&text).into_iter().map(|l| l.secret).collect();
    assert_eq!(secrets, vec![format!("ghp_{GH}")]);
}

#[test]
fn lines_of_finds_every_line_a_secret_starts_on() {
    let text = format!("a: 1\nb: ghp_{GH}\nc: 2\nd: ghp_{GH} ghp_{GH}\n");
    assert_eq!(lines_of(&text, &format!("ghp_{GH}")), vec![2, 4]);
    assert_eq!(lines_of("x", "y"), vec![1]);
}

#[test]
fn the_secret_is_what_redaction_removes_and_is_never_shown() {
    let line = format!("use xghp_{GH} now");
    let leak = &scan(&line)[0];
    assert_eq!(leak.secret, format!("ghp_{GH}"));
    assert!(leak.excerpt.ends_with('…') && !leak.excerpt.contains(GH));
    assert!(!serde_json::to_string(leak).unwrap().contains(GH));
    let clean = redact(&line, std::slice::from_ref(&leak.secret));
    assert_eq!(clean, format!("use x{REDACTED} now"));
    assert!(scan(&clean).is_empty());
    let url = scan("https://alice:s3cr3tPa55@git.example.org/x");
    assert_eq!(url[0].secret, "s3cr3tPa55");
    let split = scan("text: |\n  ghp_R8x2Kq9LmN4pVt7Z\n  w3Yc6Hj1Bs5Df0Ga8Ue2\n");
    let clean = redact(
        "text: |\n  ghp_R8x2Kq9LmN4pVt7Z\n  w3Yc6Hj1Bs5Df0Ga8Ue2\n",
        &[split[0].secret.clone()],
    );
    assert_eq!(clean, format!("text: |\n  {REDACTED}\n"));
}
