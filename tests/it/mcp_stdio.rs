//! `git loopx mcp` on raw pipes, fed lines no client library sends: one
//! that is not JSON, one longer than 16 MiB. Each gets a JSON-RPC error,
//! and the session goes on; a long line is never held whole. Answers are
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
        writeln!(self.stdin, "{line}").expect("the server reads stdin");
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
