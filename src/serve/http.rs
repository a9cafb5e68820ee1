//! Requests to routes and answers to responses: the part of `serve` that
//! knows HTTP (methods, headers, status codes), over `tiny_http`.

use std::io::Cursor;

use tiny_http::{Header, Method, Request, Response};

use super::{Answer, Route};
use crate::model::Code;
use crate::Error;

type Reply = Response<Cursor<Vec<u8>>>;

/// The page, with `nonce` marking its own script and style.
pub fn page(nonce: &str) -> String {
    include_str!("page.html").replace("{{NONCE}}", nonce)
}

/// What the page may load and run: its nonce-marked script and style, and
/// requests to this server. Nothing else, so even a mistake in escaping
/// could not run a script or load an image.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

/// A fresh nonce per page: unguessable enough for a page on loopback.
fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let seed = format!(
        "{time}-{}-{}-{:p}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed),
        &COUNT
    );
    sha1_smol::Sha1::from(seed).digest().to_string()[..32].to_owned()
}

/// The route `url` names, or `None` (404).
pub fn route(url: &str) -> Option<Route> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
    };
    match path {
        "/" | "/index.html" => Some(Route::Page),
        "/status.json" => Some(Route::Status {
            goal: param("goal").filter(|g| !g.is_empty()),
        }),
        "/dashboard.json" => Some(Route::Dashboard),
        "/healthz" => Some(Route::Health),
        _ => {
            let commit = path.strip_prefix("/diff/")?.strip_suffix(".json")?;
            let hex = (4..=64).contains(&commit.len())
                && commit
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
            hex.then(|| Route::Diff {
                commit: commit.to_owned(),
            })
        }
    }
}

/// Whether `host` (a `Host` header) names this machine's loopback at `port`.
pub fn loopback_host(host: &str, port: u16) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let (name, given_port) = match host.rsplit_once(':') {
        Some((name, p)) if !name.ends_with(':') && p.bytes().all(|b| b.is_ascii_digit()) => {
            (name.to_owned(), Some(p.to_owned()))
        }
        _ => (host.clone(), None),
    };
    let name_ok = matches!(name.as_str(), "127.0.0.1" | "localhost" | "[::1]");
    name_ok && given_port.is_none_or(|p| p == port.to_string())
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("ASCII header")
}

fn with_common(reply: Reply) -> Reply {
    reply
        .with_header(header("X-Content-Type-Options", "nosniff"))
        .with_header(header("Referrer-Policy", "no-referrer"))
        .with_header(header("X-Frame-Options", "DENY"))
}

fn error_reply(status: u16, code: Code, message: &str, hint: Option<&str>) -> Reply {
    let body = serde_json::json!({
        "ok": false,
        "error": { "code": code.as_str(), "message": message, "hint": hint, "detail": null },
    });
    json_reply(status, body.to_string().into_bytes(), None)
}

fn json_reply(status: u16, body: Vec<u8>, etag: Option<&str>) -> Reply {
    let mut reply = Response::from_data(body)
        .with_status_code(status)
        .with_header(header("Content-Type", "application/json; charset=utf-8"))
        .with_header(header("Cache-Control", "no-cache"));
    if let Some(etag) = etag {
        reply = reply.with_header(header("ETag", etag));
    }
    with_common(reply)
}

/// The HTTP status a refusal or a state problem answers with.
fn status_of(err: &Error) -> u16 {
    match err.code() {
        Code::InvalidInput | Code::AmbiguousId => 400,
        Code::TodoNotFound => 404,
        _ if err.exit_code() == 3 => 503,
        _ => 409,
    }
}

/// Answers `request`: `json` builds a JSON route's answer (given the
/// request's `If-None-Match`); with `loopback_port`, a `Host` that is not a
/// loopback name at that port is refused.
pub fn answer(
    request: &Request,
    json: &mut dyn FnMut(&Route, Option<&str>) -> Answer,
    loopback_port: Option<u16>,
) -> Reply {
    let find = |name: &'static str| {
        request
            .headers()
            .iter()
            .find(|h| h.field.equiv(name))
            .map(|h| h.value.as_str().to_owned())
    };
    if let (Some(port), Some(host)) = (loopback_port, find("Host")) {
        if !loopback_host(&host, port) {
            return error_reply(
                403,
                Code::InvalidInput,
                &format!("this dashboard answers only on loopback, not for host `{host}`"),
                Some("open it as http://127.0.0.1:<port>/, or start it with --bind"),
            );
        }
    }
    if *request.method() != Method::Get {
        let reply = error_reply(
            405,
            Code::InvalidInput,
            &format!(
                "{} is not allowed: the dashboard is read-only",
                request.method()
            ),
            Some("only GET"),
        );
        return reply.with_header(header("Allow", "GET"));
    }
    let Some(route) = route(request.url()) else {
        return error_reply(
            404,
            Code::InvalidInput,
            &format!("no such page: {}", request.url()),
            Some("/, /status.json, /dashboard.json, /diff/<commit>.json, /healthz"),
        );
    };
    if route == Route::Page {
        let nonce = nonce();
        let reply = Response::from_string(page(&nonce))
            .with_header(header("Content-Type", "text/html; charset=utf-8"))
            .with_header(header("Cache-Control", "no-store"))
            .with_header(header(
                "Content-Security-Policy",
                &content_security_policy(&nonce),
            ));
        return with_common(reply);
    }
    match json(&route, find("If-None-Match").as_deref()) {
        Answer::NotModified(etag) => with_common(
            Response::from_data(Vec::new())
                .with_status_code(304)
                .with_header(header("ETag", &etag)),
        ),
        Answer::Json { etag, body } => json_reply(200, body.to_vec(), Some(&etag)),
        Answer::Failed(err) => {
            let body = crate::render::error_json(&err, None)
                .to_string()
                .into_bytes();
            json_reply(status_of(&err), body, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/"), Some(Route::Page));
        assert_eq!(route("/status.json"), Some(Route::Status { goal: None }));
        assert_eq!(
            route("/status.json?goal=ops&x=1"),
            Some(Route::Status {
                goal: Some("ops".into())
            })
        );
        assert_eq!(
            route("/diff/0123abcd.json"),
            Some(Route::Diff {
                commit: "0123abcd".into()
            })
        );
        for missing in [
            "/diff/HEAD.json",
            "/diff/--upload-pack=x.json",
            "/diff/abc.json",
            "/diff/0123abcd",
            "/status",
            "/../etc/passwd",
            "/healthz/",
            "",
        ] {
            assert_eq!(route(missing), None, "{missing}");
        }
    }

    #[test]
    fn only_loopback_hosts() {
        for ok in [
            "127.0.0.1:8765",
            "localhost:8765",
            "LOCALHOST",
            "[::1]:8765",
            "127.0.0.1",
        ] {
            assert!(loopback_host(ok, 8765), "{ok}");
        }
        for bad in [
            "evil.example:8765",
            "127.0.0.1:80",
            "127.0.0.1.evil.example",
            "localhost.:8765",
            "10.0.0.1:8765",
            "",
        ] {
            assert!(!loopback_host(bad, 8765), "{bad}");
        }
    }
}
