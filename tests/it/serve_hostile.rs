//! `git loopx serve` against hostile clients, over real sockets to the real
//! binary: a declared body it must not allocate, heads past its bounds,
//! idle connections by the thousand under a low limit of open files, and
//! `Host` names. After each, `/healthz` must still answer, and within 1 s:
//! the one timing these tests assert. Every other wait is generous, so a
//! broken server fails a test instead of hanging it.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::env::TestEnv;
use crate::serve::Serving;

/// How soon `/healthz` answers once the hostile clients have had their go:
/// under the server's 10 s limit on a request's head, so an answer within
/// it was not let in by a hostile connection timing out. Not shorter: on a
/// slow stretch of a shared 2-core machine, a prompt answer took 2.7 s.
const HEALTHZ_WITHIN: Duration = Duration::from_secs(5);
/// The longest any one read, write or connect of these tests waits.
const PATIENCE: Duration = Duration::from_secs(30);
/// What a hostile client may cost the server in memory, at most: the
/// server's peak resident size stays below it (a debug build serves an
/// empty state in about 20 MB).
const MEMORY_BOUND: u64 = 128 << 20;

fn loopback(serving: &Serving) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], serving.port()))
}

fn connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&addr, PATIENCE)?;
    stream.set_read_timeout(Some(PATIENCE))?;
    stream.set_write_timeout(Some(PATIENCE))?;
    Ok(stream)
}

/// Everything the server sends until it closes, or until an error (the
/// bytes read before it are kept).
fn read_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    if let Err(e) = stream.read_to_end(&mut answer) {
        if answer.is_empty() {
            return format!("(no answer: {e})");
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// Sends `request` as it is, and answers the status line that comes back.
fn status_line(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = match connect(addr) {
        Ok(s) => s,
        Err(e) => return format!("(cannot connect: {e})"),
    };
    if let Err(e) = stream.write_all(request) {
        return format!("(cannot send: {e})");
    }
    read_answer(&mut stream)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// `GET /healthz` on a new connection: how long its answer took.
fn healthz(addr: SocketAddr) -> Result<Duration, String> {
    let start = Instant::now();
    let mut stream = connect(addr).map_err(|e| format!("cannot connect: {e}"))?;
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("cannot send: {e}"))?;
    let answer = read_answer(&mut stream);
    let took = start.elapsed();
    if answer.starts_with("HTTP/1.1 200 ") && answer.contains(r#""ok":true"#) {
        Ok(took)
    } else {
        Err(format!("answered {answer:?}"))
    }
}

/// The server is still running and `/healthz` answers within 1 s.
#[track_caller]
fn assert_serving(serving: &mut Serving) {
    if let Ok(Some(status)) = serving.child.try_wait() {
        panic!("serve has ended: {status}");
    }
    match healthz(loopback(serving)) {
        Ok(took) => assert!(
            took < HEALTHZ_WITHIN,
            "/healthz answered, but after {took:?}"
        ),
        Err(why) => panic!(
            "/healthz: {why} (serve {})",
            match serving.child.try_wait() {
                Ok(Some(status)) => format!("has ended: {status}"),
                _ => "is still running".to_owned(),
            }
        ),
    }
}

/// Lets this test process have `files` open files (its soft limit, raised
/// toward the hard one), to hold more connections than the server may.
fn allow_open_files(files: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_none_or(|now| now >= files) {
        return;
    }
    assert!(
        limit.maximum.is_none_or(|max| max >= files),
        "this test holds {files} open files; the hard limit is {:?}",
        limit.maximum
    );
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(files),
            maximum: limit.maximum,
        },
    )
    .expect("the soft limit of open files is raised");
}

/// Up to `n` connections that send nothing. Stops at the first connect
/// that fails: a server that stopped listening refuses all the rest.
fn idle_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut open = Vec::with_capacity(n);
    for i in 0..n {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(stream) => open.push(stream),
            Err(e) => {
                eprintln!("idle connection {i} of {n} failed: {e}");
                break;
            }
        }
    }
    open
}

/// Sends a request head whose one header line is `size` bytes long, as
/// fast as the server takes it; answers how many bytes it took.
fn send_huge_header_line(addr: SocketAddr, size: usize) -> usize {
    let Ok(mut stream) = connect(addr) else {
        return 0;
    };
    if stream
        .write_all(b"GET /healthz HTTP/1.1\r\nX-Filler: ")
        .is_err()
    {
        return 0;
    }
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0;
    while sent < size {
        match stream.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    sent
}

/// The most memory `pid` has had resident (`VmHWM`), in bytes.
fn peak_resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/PID/status");
    kib * 1024
}

fn terabyte_post(addr: SocketAddr) -> String {
    let head = format!("POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 1000000000000\r\n\r\n");
    status_line(addr, head.as_bytes())
}

/// Issue 31, as reported: under `ulimit -n 1024`, 1,074 idle sockets made
/// the server close its listener for good, one request declaring a body of
/// 10^12 bytes aborted it, and a 400 MB header line cost 414 MB.
#[test]
fn idle_sockets_a_terabyte_body_and_a_huge_header_line_do_not_stop_the_dashboard() {
    allow_open_files(4096);
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let mut serving = Serving::start_with_open_files(&env, &dir, 1024, &[]);
    let addr = loopback(&serving);
    let idle = idle_connections(addr, 1_100);
    let terabyte = terabyte_post(addr);
    let sent = send_huge_header_line(addr, 256 << 20);
    eprintln!("the server took {sent} bytes of the header line");
    assert_serving(&mut serving);
    assert_eq!(idle.len(), 1_100, "every idle connection was taken");
    assert!(terabyte.starts_with("HTTP/1.1 413 "), "{terabyte}");
    let peak = peak_resident(serving.child.id());
    eprintln!("serve's peak resident size: {} MB", peak >> 20);
    assert!(peak < MEMORY_BOUND, "serve grew to {} MB", peak >> 20);
}

#[test]
fn a_declared_body_too_large_is_413_before_any_of_it_is_read() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let mut serving = Serving::start(&env, &dir, &[]);
    let addr = loopback(&serving);
    let terabyte = terabyte_post(addr);
    assert_serving(&mut serving);
    assert!(terabyte.starts_with("HTTP/1.1 413 "), "{terabyte}");
    let get = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 1048576\r\n\r\n");
    let line = status_line(addr, get.as_bytes());
    assert!(line.starts_with("HTTP/1.1 413 "), "{line}");
    // A short body is read and dropped: the method decides the answer.
    let short = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello"
    );
    let line = status_line(addr, short.as_bytes());
    assert!(line.starts_with("HTTP/1.1 405 "), "{line}");
    assert_serving(&mut serving);
}

#[test]
fn the_request_line_header_lines_and_header_count_are_bounded() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let mut serving = Serving::start(&env, &dir, &[]);
    let addr = loopback(&serving);
    let host = format!("Host: {addr}\r\nConnection: close\r\n");
    let long_target = format!("GET /{} HTTP/1.1\r\n{host}\r\n", "a".repeat(64 << 10));
    let long_line = format!(
        "GET /healthz HTTP/1.1\r\n{host}X-Filler: {}\r\n\r\n",
        "a".repeat(64 << 10)
    );
    let many = format!(
        "GET /healthz HTTP/1.1\r\n{host}{}\r\n",
        "X-Filler: a\r\n".repeat(500)
    );
    let long_head = format!(
        "GET /healthz HTTP/1.1\r\n{host}{}\r\n",
        format!("X-Filler: {}\r\n", "a".repeat(1000)).repeat(64)
    );
    for (what, request, status) in [
        ("a 64 KiB request target", long_target, "414"),
        ("a 64 KiB header line", long_line, "431"),
        ("500 headers", many, "431"),
        ("64 KiB of headers", long_head, "431"),
        (
            "a Content-Length that is not a number",
            format!("GET /healthz HTTP/1.1\r\n{host}Content-Length: 1e3\r\n\r\n"),
            "400",
        ),
        (
            "two Content-Lengths",
            format!(
                "GET /healthz HTTP/1.1\r\n{host}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab"
            ),
            "400",
        ),
        (
            "a chunked body",
            format!("POST / HTTP/1.1\r\n{host}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            "501",
        ),
        (
            "no HTTP at all",
            "\u{1}\u{2}\u{3}\r\n\r\n".to_owned(),
            "400",
        ),
    ] {
        let line = status_line(addr, request.as_bytes());
        assert!(
            line.starts_with(&format!("HTTP/1.1 {status} ")),
            "{what}: {line}"
        );
    }
    assert_serving(&mut serving);
}

#[test]
fn a_huge_header_line_is_not_kept_in_memory() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let mut serving = Serving::start(&env, &dir, &[]);
    let sent = send_huge_header_line(loopback(&serving), 256 << 20);
    eprintln!("the server took {sent} bytes of the header line");
    assert_serving(&mut serving);
    let peak = peak_resident(serving.child.id());
    assert!(peak < MEMORY_BOUND, "serve grew to {} MB", peak >> 20);
}

/// Beyond its own bound on connections, the server runs out of file
/// descriptors here (128) long before: it must keep listening, make room
/// by closing idle connections, and still have files to read the state.
#[test]
fn the_listener_survives_running_out_of_file_descriptors() {
    allow_open_files(4096);
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let mut serving = Serving::start_with_open_files(&env, &dir, 128, &[]);
    let idle = idle_connections(loopback(&serving), 600);
    assert_serving(&mut serving);
    assert_eq!(idle.len(), 600, "every idle connection was taken");
    assert_eq!(serving.get("/dashboard.json").0, 200);
}

#[test]
fn head_answers_like_get_without_a_body() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let serving = Serving::start(&env, &dir, &[]);
    let addr = loopback(&serving);
    for path in ["/", "/healthz", "/dashboard.json"] {
        let request = |method: &str| {
            let mut stream = connect(addr).expect("connects");
            write!(
                stream,
                "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            read_answer(&mut stream)
        };
        let (get, head) = (request("GET"), request("HEAD"));
        let (get_head, body) = get.split_once("\r\n\r\n").expect("a head and a body");
        assert!(
            get_head.starts_with("HTTP/1.1 200 "),
            "GET {path}: {get_head}"
        );
        assert!(!body.is_empty());
        assert!(head.starts_with("HTTP/1.1 200 "), "HEAD {path}: {head}");
        assert!(
            head.ends_with("\r\n\r\n"),
            "HEAD {path} has no body: {head:?}"
        );
        let length = |h: &str| {
            h.lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().to_owned())
            })
        };
        assert_eq!(length(&head), length(get_head), "{path}");
        assert_eq!(length(get_head), Some(body.len().to_string()), "{path}");
    }
}

/// `--bind 127.0.0.2` is loopback too: the `Host` check stays on, and
/// takes the address the server is bound to as well as the usual names.
#[test]
fn bound_to_another_loopback_address_it_answers_that_address() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let serving = Serving::start(&env, &dir, &["--bind", "127.0.0.2"]);
    assert!(
        serving.url.starts_with("http://127.0.0.2:"),
        "{}",
        serving.url
    );
    let port = serving.port();
    let addr = SocketAddr::new(IpAddr::from([127, 0, 0, 2]), port);
    let with_host = |host: &str| {
        status_line(
            addr,
            format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    for ours in [
        format!("127.0.0.2:{port}"),
        "127.0.0.2".to_owned(),
        format!("localhost:{port}"),
    ] {
        let line = with_host(&ours);
        assert!(line.starts_with("HTTP/1.1 200 "), "{ours}: {line}");
    }
    for foreign in [
        format!("evil.example:{port}"),
        format!("127.0.0.2:{}", port ^ 1),
        format!("127.0.0.3:{port}"),
    ] {
        let line = with_host(&foreign);
        assert!(line.starts_with("HTTP/1.1 403 "), "{foreign}: {line}");
    }
}
