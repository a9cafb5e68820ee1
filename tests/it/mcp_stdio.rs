//! `git loopx mcp` on raw pipes, fed lines no client library sends: one
//! that is not JSON, one that is not UTF-8 or nests past serde_json's
//! bound, one longer than 16 MiB. Each gets a JSON-RPC error, and the
//! session goes on; a long line is never held whole. Answers are
//! awaited, not timed: the bound (60 s) only keeps a broken server from
//! hanging the suite.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::env::TestEnv;

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(env: &TestEnv, repo: &Path) -> Server {
        let mut child = env
            .under_runtime_cmd(repo)
            .args(["mcp", "--agent", "agent-a"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("git loopx mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Server {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    fn send_bytes(&mut self, line: &[u8]) {
        self.stdin.write_all(line).expect("the server reads stdin");
        self.stdin.write_all(b"\n").expect("the server reads stdin");
    }

    fn request(&mut self, id: u64, method: &str, params: Value) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&request.to_string());
    }

    /// The next line the server writes, as JSON.
    #[track_caller]
    fn answer(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    fn initialize(&mut self) {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        });
        self.request(1, "initialize", params);
        let answer = self.answer();
        assert_eq!(answer["id"], 1, "{answer}");
        assert_eq!(answer["result"]["serverInfo"]["name"], "git-loopx");
        self.send(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#);
    }

    /// `ping` answers with its id: the session goes on.
    #[track_caller]
    fn ping(&mut self, id: u64) {
        self.request(id, "ping", json!({}));
        assert_eq!(
            self.answer(),
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        );
    }

    /// Closes stdin; the server ends as a finished session does.
    fn end(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

/// The error answering a line whose id could not be read.
#[track_caller]
fn unread(answer: &Value, code: i64) -> String {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
    answer["error"]["message"].as_str().unwrap().to_owned()
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error_and_the_session_goes_on() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["agent", "register", "agent-a"])
        .success();
    let mut server = Server::start(&env, &repo);
    server.send("this is not json");
    let said = unread(&server.answer(), -32700);
    assert!(said.starts_with("Parse error"), "{said}");
    server.initialize();
    server.send(r#"{"jsonrpc": "2.0", "id": 2, "method": "ping""#);
    unread(&server.answer(), -32700);
    server.ping(3);
    server.end();
}

/// Issue 47, item 9: lines that pass for JSON to a quick scan but that
/// rmcp's parser refuses, which rmcp then drops without a word (its
/// "unparsable input"): a string that is not UTF-8, a lone surrogate, a
/// number past `f64`, nesting past serde_json's bound of 127 levels
/// (100,000 deep, and a 16 MiB line of it). Each gets a parse error, the
/// stack holds, and the session goes on; nesting at the bound is served.
#[test]
fn lines_not_utf8_or_nested_past_the_bound_get_a_parse_error_and_the_session_goes_on() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["agent", "register", "agent-a"])
        .success();
    let mut server = Server::start(&env, &repo);
    server.initialize();

    let request = br#"{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "?"}}"#;
    let not_utf8: Vec<u8> = request
        .iter()
        .map(|&b| if b == b'?' { 0xff } else { b })
        .collect();
    server.send_bytes(&not_utf8);
    let said = unread(&server.answer(), -32700);
    assert!(said.contains("not UTF-8"), "{said}");
    server.ping(3);
    server.send_bytes(b"\xc3\x28 \xff");
    unread(&server.answer(), -32700);
    server.ping(4);

    let ping = |params: &str| {
        format!(r#"{{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {params}}}"#)
    };
    for params in [r#"{"x": "\ud800"}"#, r#"{"x": 1e999}"#] {
        server.send(&ping(params));
        let said = unread(&server.answer(), -32700);
        assert!(said.starts_with("Parse error"), "{params}: {said}");
        server.ping(6);
    }

    let deep = 100_000;
    server.send(&format!("{}{}", "[".repeat(deep), "]".repeat(deep)));
    let said = unread(&server.answer(), -32700);
    assert!(said.contains("more than 127 levels"), "{said}");
    server.ping(7);
    let objects = format!("{}0{}", r#"{"a": "#.repeat(deep), "}".repeat(deep));
    server.send(&ping(&objects));
    unread(&server.answer(), -32700);
    server.ping(8);
    // A line just under 16 MiB of it: read whole, refused all the same.
    let half = (16 << 20) / 2 - 1;
    server.send(&format!("{}{}", "[".repeat(half), "]".repeat(half)));
    unread(&server.answer(), -32700);
    server.ping(9);

    // At the bound (the envelope, its params and 125 arrays: 127 levels)
    // rmcp serves it; one level more, and it is refused, not dropped.
    let nested = |levels: usize| {
        let x = format!("{}0{}", "[".repeat(levels), "]".repeat(levels));
        ping(&format!(r#"{{"x": {x}}}"#))
    };
    server.send(&nested(126));
    unread(&server.answer(), -32700);
    server.send(&nested(125));
    assert_eq!(
        server.answer(),
        json!({"jsonrpc": "2.0", "id": 5, "result": {}})
    );
    server.end();
}

#[test]
fn a_line_over_16_mib_is_answered_without_being_held_and_the_session_goes_on() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["agent", "register", "agent-a"])
        .success();
    let mut server = Server::start(&env, &repo);
    server.initialize();

    // 17 MiB: a ping padded past the bound.
    let pad = "x".repeat(17 << 20);
    server.request(2, "ping", json!({"pad": pad}));
    drop(pad);
    let said = unread(&server.answer(), -32600);
    assert!(said.contains("16 MiB"), "{said}");
    server.ping(3);

    // 160 MiB, written a MiB at a time: held whole, it would be 160 MiB
    // of the server's memory; read through, it is at most the bound.
    let chunk = vec![b'x'; 1 << 20];
    server.stdin.write_all(br#"{"pad": ""#).unwrap();
    for _ in 0..160 {
        server.stdin.write_all(&chunk).unwrap();
    }
    server.send("\"}");
    unread(&server.answer(), -32600);
    server.ping(4);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id()));
    if let Ok(status) = status {
        let peak: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status");
        eprintln!("the server's peak resident memory: {} MiB", peak >> 10);
        assert!(peak < 100 << 10, "peak resident memory {peak} kB");
    }
    server.end();
}
