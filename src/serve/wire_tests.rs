//! Tests of `wire`: heads, bodies, and connections within their bounds.

use super::*;
use std::net::TcpListener;

#[test]
fn heads_parse_when_complete() {
    let head = b"GET /healthz?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: b\r\n\r\nrest";
    let (request, n) = parse(head).unwrap().unwrap();
    assert_eq!(n, head.len() - 4);
    assert_eq!(
        (
            request.method.as_str(),
            request.target.as_str(),
            request.minor
        ),
        ("GET", "/healthz?x=1", 1)
    );
    assert_eq!(request.header("host"), Some("127.0.0.1"));
    assert!(request.keeps_alive());
    assert!(parse(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap().is_none());
    assert_eq!(parse(b"\x01 / HTTP/1.1\r\n\r\n").unwrap_err().status, 400);
    assert_eq!(parse(b"GET / HTTP/2.0\r\n\r\n").unwrap_err().status, 505);
    let many = format!(
        "GET / HTTP/1.1\r\n{}\r\n",
        "X: y\r\n".repeat(MAX_HEADERS + 1)
    );
    assert_eq!(parse(many.as_bytes()).unwrap_err().status, 431);
    let old = parse(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap().0;
    assert!(!old.keeps_alive());
    let closing = parse(b"GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n");
    assert!(!closing.unwrap().unwrap().0.keeps_alive());
}

#[test]
fn body_lengths() {
    let limits = Limits::default();
    let length = |headers: &str| {
        let head = format!("POST / HTTP/1.1\r\n{headers}\r\n");
        body_length(&parse(head.as_bytes()).unwrap().unwrap().0, &limits).map_err(|r| r.status)
    };
    assert_eq!(length(""), Ok(0));
    assert_eq!(length("Content-Length: 12\r\n"), Ok(12));
    assert_eq!(
        length("Content-Length: 12\r\ncontent-length: 12\r\n"),
        Ok(12)
    );
    assert_eq!(length("Content-Length: 65536\r\n"), Ok(65536));
    assert_eq!(length("Content-Length: 65537\r\n"), Err(413));
    assert_eq!(length("Content-Length: 1000000000000\r\n"), Err(413));
    assert_eq!(
        length("Content-Length: 99999999999999999999999\r\n"),
        Err(400)
    );
    assert_eq!(length("Content-Length: +1\r\n"), Err(400));
    assert_eq!(
        length("Content-Length: 1\r\nContent-Length: 2\r\n"),
        Err(400)
    );
    assert_eq!(length("Transfer-Encoding: chunked\r\n"), Err(501));
}

/// A server of one connection with `limits`, answering every request
/// with its target; and a client connected to it.
fn pair(limits: Limits) -> (TcpStream, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let answer = |r: &Request| Reply {
            status: 200,
            headers: vec![],
            body: Arc::new(r.target.clone().into_bytes()),
        };
        let refusal = |r: &Refused| Reply {
            status: r.status,
            headers: vec![],
            body: Arc::new(r.why.as_bytes().to_vec()),
        };
        serve_connection(&stream, &limits, &|_| {}, &answer, &refusal);
    });
    (client, server)
}

fn read_all(client: &mut TcpStream) -> String {
    let mut answer = String::new();
    let _ = client.read_to_string(&mut answer);
    answer
}

#[test]
fn a_connection_answers_requests_one_after_another_then_closes() {
    let (mut client, server) = pair(Limits::default());
    // Two at once (pipelined), the first with a body to skip.
    client
        .write_all(b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyzGET /b HTTP/1.1\r\n\r\n")
        .unwrap();
    client
        .write_all(b"HEAD /cc HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let answer = read_all(&mut client);
    server.join().unwrap();
    let statuses: Vec<&str> = answer.matches("HTTP/1.1 200 OK").collect();
    assert_eq!(statuses.len(), 3, "{answer}");
    assert!(answer.contains("Content-Length: 2\r\n"), "{answer}");
    assert!(
        answer.ends_with("Content-Length: 3\r\nConnection: close\r\n\r\n"),
        "{answer}"
    );
    assert!(
        answer.contains("\r\n\r\n/a") && answer.contains("\r\n\r\n/b"),
        "{answer}"
    );
}

#[test]
fn a_silent_connection_is_closed_after_the_idle_time() {
    let limits = Limits {
        idle: Duration::from_millis(200),
        ..Limits::default()
    };
    let (mut client, server) = pair(limits);
    let start = Instant::now();
    assert_eq!(read_all(&mut client), "", "closed without an answer");
    server.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_head_sent_too_slowly_is_408() {
    let limits = Limits {
        head_time: Duration::from_millis(300),
        ..Limits::default()
    };
    let (mut client, server) = pair(limits);
    client.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    // One byte at a time, each well within the idle time.
    for _ in 0..40 {
        if client.write_all(b"X").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let answer = read_all(&mut client);
    server.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
}

#[test]
fn heads_past_the_bounds_are_refused_and_the_answer_arrives() {
    let limits = Limits {
        line: 64,
        head: 256,
        linger: Duration::from_millis(200),
        ..Limits::default()
    };
    for (request, status) in [
        (format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(100)), "414"),
        (
            format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(300)),
            "431",
        ),
        (
            format!("GET / HTTP/1.1\r\n{}\r\n", "X: a\r\n".repeat(60)),
            "431",
        ),
        (
            "GET / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n".to_owned(),
            "413",
        ),
    ] {
        let (mut client, server) = pair(limits.clone());
        // More than the server reads: it drops the rest to answer.
        client.write_all(request.as_bytes()).unwrap();
        let _ = client.write_all(&[b'a'; 64 << 10]);
        let answer = read_all(&mut client);
        server.join().unwrap();
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{request:.40}: {answer}"
        );
        assert!(answer.contains("Connection: close\r\n"), "{answer}");
    }
}
