//! HTTP/1.1 on one connection: request heads read within fixed bounds,
//! bodies dropped, answers written, the connection kept for the next
//! request. Parsing a head is `httparse`'s; every bound is ours.
//!
//! Invariants:
//! - nothing is allocated from what a client declares: a head is read into
//!   one buffer of [`Limits::head`] bytes, allocated once per connection,
//!   with at most [`MAX_HEADERS`] headers; a body is never kept, only read
//!   and dropped, and only up to [`Limits::body`] bytes (a longer one is
//!   413 before any of it is read);
//! - every read and write has a deadline: a connection silent for
//!   [`Limits::idle`] between requests, slower than [`Limits::head_time`]
//!   to send a head, or not taking its answer within [`Limits::write`] is
//!   closed;
//! - a refused head closes the connection (where the next request would
//!   start is unknown), after its answer and a bounded wait for the client
//!   to read it.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most headers a request may have (431 beyond).
pub const MAX_HEADERS: usize = 100;

/// The bounds every connection is served within.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The longest request line (414 beyond).
    pub line: usize,
    /// The longest head: request line and headers (431 beyond).
    pub head: usize,
    /// The longest body read (and dropped); a longer one is 413.
    pub body: u64,
    /// How long a connection may wait for its next request.
    pub idle: Duration,
    /// How long a head may take to arrive once it has begun.
    pub head_time: Duration,
    /// How long one write may wait for the client to take bytes.
    pub write: Duration,
    /// How long a refused connection is kept for its client to read the
    /// answer, reading and dropping what it still sends.
    pub linger: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // A note the page sends may be 2,000 characters of any
            // script, each percent-encoded as up to nine bytes.
            line: 24 << 10,
            head: 32 << 10,
            body: 64 << 10,
            idle: Duration::from_secs(30),
            head_time: Duration::from_secs(10),
            write: Duration::from_secs(30),
            linger: Duration::from_secs(1),
        }
    }
}

/// One request's head. Header names keep the client's case.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the client will send another request on this connection.
    fn keeps_alive(&self) -> bool {
        let close = self
            .all("Connection")
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("close"));
        self.minor >= 1 && !close
    }
}

/// An answer: status, headers, body. `Content-Length`, `Date` and
/// `Connection` are the writer's.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Arc<Vec<u8>>,
}

impl Reply {
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }
}

/// A head the server will not take, and why: its answer, then the
/// connection closes.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub why: &'static str,
}

const fn refused(status: u16, why: &'static str) -> Refused {
    Refused { status, why }
}

/// What reading the next head came to.
#[derive(Debug)]
enum Next {
    Request(Request),
    Refused(Refused),
    /// The client closed, went silent, or the connection failed.
    Gone,
}

/// The bytes of one connection not yet consumed: a head being read, or the
/// start of the next one behind a body.
struct Buffer {
    bytes: Vec<u8>,
    filled: usize,
}

impl Buffer {
    fn consume(&mut self, n: usize) {
        self.bytes.copy_within(n..self.filled, 0);
        self.filled -= n;
    }
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Reads into `buf` until `deadline`: the number of bytes read (0: the
/// client closed), or the error (a timeout included).
fn read_until(stream: &TcpStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<usize> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        match (&*stream).read(buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            read => return read,
        }
    }
}

/// The head at the start of `bytes`, with its length; `Ok(None)` while it is
/// incomplete.
pub fn parse(bytes: &[u8]) -> Result<Option<(Request, usize)>, Refused> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    match head.parse(bytes) {
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(n)) => {
            let request = Request {
                method: head.method.unwrap_or_default().to_owned(),
                target: head.path.unwrap_or_default().to_owned(),
                minor: head.version.unwrap_or_default(),
                headers: head
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect(),
            };
            Ok(Some((request, n)))
        }
        Err(httparse::Error::TooManyHeaders) => {
            Err(refused(431, "a request may have at most 100 headers"))
        }
        Err(httparse::Error::Version) => Err(refused(505, "only HTTP/1.0 and HTTP/1.1")),
        Err(_) => Err(refused(400, "this is not an HTTP request")),
    }
}

/// Reads the next head, within `limits`.
fn next_head(stream: &TcpStream, buf: &mut Buffer, limits: &Limits) -> Next {
    let mut deadline = Instant::now() + limits.idle;
    let mut begun = false;
    loop {
        if buf.filled > 0 && !begun {
            begun = true;
            deadline = Instant::now() + limits.head_time;
        }
        let held = &buf.bytes[..buf.filled];
        let line = held.iter().position(|&b| b == b'\n').unwrap_or(held.len());
        if line >= limits.line {
            return Next::Refused(refused(414, "the request line is too long"));
        }
        match parse(held) {
            Ok(Some((request, n))) => {
                buf.consume(n);
                return Next::Request(request);
            }
            Err(refused) => return Next::Refused(refused),
            Ok(None) => {}
        }
        if buf.filled == buf.bytes.len() {
            return Next::Refused(refused(431, "the request's headers are too long"));
        }
        match read_until(stream, &mut buf.bytes[buf.filled..], deadline) {
            Ok(0) => return Next::Gone,
            Ok(n) => buf.filled += n,
            Err(e) if timed_out(&e) && begun => {
                return Next::Refused(refused(408, "the request took too long to arrive"))
            }
            Err(_) => return Next::Gone,
        }
    }
}

/// How long the body of `request` says it is.
fn body_length(request: &Request, limits: &Limits) -> Result<u64, Refused> {
    if request.header("Transfer-Encoding").is_some() {
        return Err(refused(501, "a body in a transfer coding is not read"));
    }
    let mut length = None;
    for value in request.all("Content-Length") {
        let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
        let n = digits
            .then(|| value.parse::<u64>().ok())
            .flatten()
            .ok_or(refused(400, "Content-Length is not a number"))?;
        if length.is_some_and(|l| l != n) {
            return Err(refused(400, "two different Content-Lengths"));
        }
        length = Some(n);
    }
    match length.unwrap_or(0) {
        n if n > limits.body => Err(refused(413, "a request body is at most 64 KiB")),
        n => Ok(n),
    }
}

/// Reads and drops `length` bytes of body, those in `buf` first. `false`
/// when the client does not send them in time.
fn skip_body(stream: &TcpStream, buf: &mut Buffer, length: u64, limits: &Limits) -> bool {
    let held = buf
        .filled
        .min(usize::try_from(length).unwrap_or(usize::MAX));
    buf.consume(held);
    let mut left = length - held as u64;
    let deadline = Instant::now() + limits.head_time;
    let mut scratch = [0u8; 4096];
    while left > 0 {
        let want = scratch
            .len()
            .min(usize::try_from(left).unwrap_or(usize::MAX));
        match read_until(stream, &mut scratch[..want], deadline) {
            Ok(0) | Err(_) => return false,
            Ok(n) => left -= n as u64,
        }
    }
    true
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Writes `reply`; its body only when `with_body`.
fn write_reply(
    stream: &TcpStream,
    reply: &Reply,
    with_body: bool,
    close: bool,
) -> std::io::Result<()> {
    use std::fmt::Write as _;
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    let date = chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S GMT");
    let _ = write!(head, "Date: {date}\r\n");
    for (name, value) in &reply.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if reply.status != 304 {
        let _ = write!(head, "Content-Length: {}\r\n", reply.body.len());
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = stream;
    out.write_all(head.as_bytes())?;
    if with_body && reply.status != 304 {
        out.write_all(&reply.body)?;
    }
    out.flush()
}

/// Closes after a refusal: no more answers, and what the client still
/// sends is read and dropped for a moment, so that the answer reaches it
/// instead of being lost to a reset.
fn close_after_refusal(stream: &TcpStream, limits: &Limits) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + limits.linger;
    let mut scratch = [0u8; 4096];
    let mut budget: usize = 1 << 20;
    while budget > 0 {
        match read_until(stream, &mut scratch, deadline) {
            Ok(0) | Err(_) => break,
            Ok(n) => budget = budget.saturating_sub(n),
        }
    }
}

/// Serves `stream` until the client closes it, goes silent, is refused or
/// is closed from outside. `waiting(true)` says the connection waits for a
/// request (it may then be closed to make room), `waiting(false)` that it
/// is being answered. `answer` answers a request; `refusal` turns a
/// refused head into an answer.
pub fn serve_connection(
    stream: &TcpStream,
    limits: &Limits,
    waiting: &dyn Fn(bool),
    answer: &dyn Fn(&Request) -> Reply,
    refusal: &dyn Fn(&Refused) -> Reply,
) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(limits.write));
    let mut buf = Buffer {
        bytes: vec![0; limits.head],
        filled: 0,
    };
    loop {
        waiting(true);
        let refused = match next_head(stream, &mut buf, limits) {
            Next::Gone => return,
            Next::Refused(refused) => refused,
            Next::Request(request) => match body_length(&request, limits) {
                Err(refused) => refused,
                Ok(length) => {
                    if !skip_body(stream, &mut buf, length, limits) {
                        return;
                    }
                    waiting(false);
                    let reply = answer(&request);
                    let keep = request.keeps_alive();
                    let with_body = request.method != "HEAD";
                    if write_reply(stream, &reply, with_body, !keep).is_err() || !keep {
                        return;
                    }
                    continue;
                }
            },
        };
        if write_reply(stream, &refusal(&refused), true, true).is_ok() {
            close_after_refusal(stream, limits);
        }
        return;
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
