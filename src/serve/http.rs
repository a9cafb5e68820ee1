//! Requests to routes and answers to replies: what the dashboard says in
//! HTTP (methods, `Host`, status codes, headers). Reading requests from and
//! writing replies to a connection is [`super::wire`]'s.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::wire::{Refused, Reply, Request};
use super::{Answer, Answering, Route};
use crate::model::Code;
use crate::ops::answer::Ask;
use crate::Error;

/// The page, with `nonce` marking its own script and style: one
/// repository's dashboard, or (`all_repos`) the page of every repository.
pub fn page(nonce: &str, all_repos: bool) -> String {
    let page = match all_repos {
        false => include_str!("page.html"),
        true => include_str!("repos.html"),
    };
    page.replace("{{NONCE}}", nonce)
}

/// Where a page of its own (the report) takes its style's nonce.
pub const NONCE_MARK: &str = "{{NONCE}}";

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

/// The route `url` names on a server of every repository (`serve
/// --all-repos`), or `None` (404).
fn route_all_repos(url: &str) -> Option<Route> {
    match url.split_once('?').map_or(url, |(path, _)| path) {
        "/" | "/index.html" => Some(Route::Page),
        "/repos.json" => Some(Route::Repos),
        "/healthz" => Some(Route::Health),
        _ => None,
    }
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
        "/report.html" => Some(Route::Report {
            since: param("since")
                .and_then(|s| decode(&s))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "24h".to_owned()),
        }),
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

/// `%XX` and `+` decoded, as a form's query carries text; `None` when not
/// UTF-8 or a `%` is not followed by two hex digits.
fn decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.bytes();
    while let Some(b) = rest.next() {
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = [rest.next()?, rest.next()?];
                bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
            }
            b => bytes.push(b),
        }
    }
    String::from_utf8(bytes).ok()
}

/// `POST /answer?id=…&action=…[&goal=…][&note=…]`: its arguments, or why
/// not.
fn answer_args(url: &str) -> Result<Ask, String> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if path != "/answer" {
        return Err(format!("no such page to POST to: {path}"));
    }
    let mut args = Ask {
        goal: None,
        id: String::new(),
        action: String::new(),
        note: None,
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value).ok_or_else(|| format!("`{key}` is not URL-encoded UTF-8"))?;
        match key {
            "goal" if !value.is_empty() => args.goal = Some(value),
            "goal" => {}
            "id" => args.id = value,
            "action" => args.action = value,
            "note" if !value.trim().is_empty() => args.note = Some(value),
            "note" => {}
            _ => return Err(format!("`{key}` is not an argument of /answer")),
        }
    }
    if args.id.is_empty() || args.action.is_empty() {
        return Err("/answer needs id and action".into());
    }
    Ok(args)
}

/// Whether `origin` (an `Origin` header) is this server's own page: `http`,
/// a loopback name of it, its port.
fn own_origin(origin: &str, bound: SocketAddr) -> bool {
    origin
        .strip_prefix("http://")
        .is_some_and(|host| !host.contains('/') && loopback_host(host, bound))
}

/// Compares without stopping at the first difference.
fn same_key(given: &str, key: &str) -> bool {
    given.len() == key.len()
        && given
            .bytes()
            .zip(key.bytes())
            .fold(0u8, |d, (a, b)| d | (a ^ b))
            == 0
}

/// A `POST`: only `/answer`, only with answering on, from the page's own
/// origin, with the launch's key; then the route, or the refusal.
fn answer_route(
    request: &Request,
    answering: &Answering,
    bound: Option<SocketAddr>,
) -> Result<Route, Reply> {
    let refuse = |status, code, message: &str, hint: &str| {
        Err(error_reply(status, code, message, Some(hint)))
    };
    // `POST /answer/key`: whether this page's key is this launch's (the
    // page asks once, so a page left open from an earlier launch says so
    // instead of showing buttons that will be refused). Answers nothing.
    let checking_key = request.target == "/answer/key";
    let args = match answer_args(&request.target) {
        _ if checking_key => Ask {
            goal: None,
            id: String::new(),
            action: String::new(),
            note: None,
        },
        Ok(args) => args,
        Err(why) if why.starts_with("no such page") => {
            return Err(error_reply(
                405,
                Code::InvalidInput,
                &why,
                Some("only /answer takes a POST"),
            )
            .with_header("Allow", "GET, HEAD"))
        }
        Err(why) => {
            return refuse(
                400,
                Code::InvalidInput,
                &why,
                "the page's buttons send these",
            )
        }
    };
    let key =
        match answering {
            Answering::Off(why) => return refuse(
                403,
                Code::PersonOnly,
                &format!("this dashboard does not answer: {why}"),
                "a person answers with `git loopx gate resolve`, or from a `serve` they started",
            ),
            Answering::On { key, .. } => key,
        };
    let origin = request.header("Origin").unwrap_or_default();
    if !bound.is_some_and(|b| own_origin(origin, b)) {
        return refuse(
            403,
            Code::InvalidInput,
            &format!(
                "an answer comes only from this dashboard's own page, not from origin `{origin}`"
            ),
            "answer from the page `git loopx serve` printed",
        );
    }
    if !same_key(request.header("X-Loopx-Key").unwrap_or_default(), key) {
        return refuse(
            403,
            Code::InvalidInput,
            "an answer needs this launch's key",
            "open the URL `git loopx serve` printed (it carries ?key=…)",
        );
    }
    if checking_key {
        return Err(json_reply(
            200,
            Arc::new(br#"{"ok":true,"key":"this launch's"}"#.to_vec()),
            None,
        ));
    }
    Ok(Route::Answer(args))
}

/// Whether `host` (a `Host` header) names this server on loopback at its
/// port: `127.0.0.1`, `localhost`, `[::1]`, or the address it is bound to.
pub fn loopback_host(host: &str, bound: SocketAddr) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let (name, given_port) = match host.rsplit_once(':') {
        Some((name, p)) if !name.ends_with(':') && p.bytes().all(|b| b.is_ascii_digit()) => {
            (name.to_owned(), Some(p.to_owned()))
        }
        _ => (host.clone(), None),
    };
    let own = match bound.ip() {
        IpAddr::V4(ip) => ip.to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let name_ok = matches!(name.as_str(), "127.0.0.1" | "localhost" | "[::1]") || name == own;
    name_ok && given_port.is_none_or(|p| p == bound.port().to_string())
}

/// A reply with the headers every answer carries.
fn reply(status: u16, body: Arc<Vec<u8>>) -> Reply {
    Reply {
        status,
        headers: vec![
            ("X-Content-Type-Options", "nosniff".into()),
            ("Referrer-Policy", "no-referrer".into()),
            ("X-Frame-Options", "DENY".into()),
        ],
        body,
    }
}

fn json_reply(status: u16, body: Arc<Vec<u8>>, etag: Option<&str>) -> Reply {
    let reply = reply(status, body)
        .with_header("Content-Type", "application/json; charset=utf-8")
        .with_header("Cache-Control", "no-cache");
    match etag {
        Some(etag) => reply.with_header("ETag", etag),
        None => reply,
    }
}

fn error_reply(status: u16, code: Code, message: &str, hint: Option<&str>) -> Reply {
    let body = serde_json::json!({
        "ok": false,
        "error": { "code": code.as_str(), "message": message, "hint": hint, "detail": null },
    });
    json_reply(status, Arc::new(body.to_string().into_bytes()), None)
}

/// The answer to a request head the connection refused (its bounds, its
/// framing): the same JSON error object as any other refusal.
pub fn refusal(refused: &Refused) -> Reply {
    let hint = match refused.status {
        413 | 501 => Some("the dashboard takes no request body: GET its pages"),
        414 | 431 => Some("the dashboard's requests are short: GET /, /dashboard.json"),
        _ => None,
    };
    error_reply(refused.status, Code::InvalidInput, refused.why, hint)
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

/// Answers `request` (a `HEAD` as its `GET`: the writer leaves the body
/// out). `json` builds a JSON route's answer, given the request's
/// `If-None-Match`; with `check_host`, the address the server is bound to,
/// a `Host` that is not a loopback name of it is refused.
pub fn answer(
    request: &Request,
    json: &mut dyn FnMut(&Route, Option<&str>) -> Answer,
    check_host: Option<SocketAddr>,
    all_repos: bool,
    answering: &Answering,
) -> Reply {
    if let (Some(bound), Some(host)) = (check_host, request.header("Host")) {
        if !loopback_host(host, bound) {
            return error_reply(
                403,
                Code::InvalidInput,
                &format!("this dashboard answers only on loopback, not for host `{host}`"),
                Some("open it as http://127.0.0.1:<port>/, or start it with --bind"),
            );
        }
    }
    if request.method == "POST" && !all_repos {
        let route = match answer_route(request, answering, check_host) {
            Ok(route) => route,
            Err(refused) => return refused,
        };
        return match json(&route, None) {
            Answer::Json { body, .. } => json_reply(200, body, None),
            Answer::NotModified(_) | Answer::Page(_) => unreachable!("an answer is JSON"),
            Answer::Failed(err) => {
                let body = crate::render::error_json(&err, None)
                    .to_string()
                    .into_bytes();
                json_reply(status_of(&err), Arc::new(body), None)
            }
        };
    }
    if !matches!(request.method.as_str(), "GET" | "HEAD") {
        let reply = error_reply(
            405,
            Code::InvalidInput,
            &format!(
                "{} is not allowed: the dashboard only reads, and answers by POST /answer",
                request.method
            ),
            Some("GET (and HEAD); POST /answer from the page"),
        );
        return reply.with_header("Allow", "GET, HEAD, POST");
    }
    let found = match all_repos {
        false => route(&request.target),
        true => route_all_repos(&request.target),
    };
    let Some(route) = found else {
        let routes = match all_repos {
            false => {
                "/, /status.json, /dashboard.json, /diff/<commit>.json, /report.html, /healthz"
            }
            true => "/, /repos.json, /healthz (this server shows every repository)",
        };
        return error_reply(
            404,
            Code::InvalidInput,
            &format!("no such page: {}", request.target),
            Some(routes),
        );
    };
    if route == Route::Page {
        let nonce = nonce();
        return reply(200, Arc::new(page(&nonce, all_repos).into_bytes()))
            .with_header("Content-Type", "text/html; charset=utf-8")
            .with_header("Cache-Control", "no-store")
            .with_header("Content-Security-Policy", content_security_policy(&nonce));
    }
    match json(&route, request.header("If-None-Match")) {
        Answer::NotModified(etag) => reply(304, Arc::default()).with_header("ETag", etag),
        Answer::Page(body) => {
            let nonce = nonce();
            let page = String::from_utf8_lossy(&body).replacen(NONCE_MARK, &nonce, 1);
            reply(200, Arc::new(page.into_bytes()))
                .with_header("Content-Type", "text/html; charset=utf-8")
                .with_header("Cache-Control", "no-store")
                .with_header(
                    "Content-Security-Policy",
                    format!(
                        "default-src 'none'; style-src 'nonce-{nonce}'; frame-ancestors 'none'"
                    ),
                )
        }
        Answer::Json { etag, body } => json_reply(200, body, Some(&etag)),
        Answer::Failed(err) => {
            let body = crate::render::error_json(&err, None)
                .to_string()
                .into_bytes();
            json_reply(status_of(&err), Arc::new(body), None)
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
        let bound = SocketAddr::from(([127, 0, 0, 1], 8765));
        for ok in [
            "127.0.0.1:8765",
            "localhost:8765",
            "LOCALHOST",
            "[::1]:8765",
            "127.0.0.1",
        ] {
            assert!(loopback_host(ok, bound), "{ok}");
        }
        for bad in [
            "evil.example:8765",
            "127.0.0.1:80",
            "127.0.0.1.evil.example",
            "localhost.:8765",
            "10.0.0.1:8765",
            "127.0.0.2:8765",
            "",
        ] {
            assert!(!loopback_host(bad, bound), "{bad}");
        }
    }

    #[test]
    fn the_address_it_is_bound_to_is_a_loopback_host_too() {
        let other = SocketAddr::from(([127, 0, 0, 2], 8765));
        assert!(loopback_host("127.0.0.2:8765", other));
        assert!(loopback_host("127.0.0.2", other));
        assert!(loopback_host("127.0.0.1:8765", other));
        assert!(!loopback_host("127.0.0.3:8765", other));
        assert!(!loopback_host("127.0.0.2:8766", other));
        let v6 = SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 1], 8765));
        assert!(loopback_host("[::1]:8765", v6));
        assert!(!loopback_host("[::2]:8765", v6));
    }
}
