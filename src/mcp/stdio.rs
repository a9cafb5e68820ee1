//! stdin and stdout, as rmcp's transport, behind a line filter: rmcp reads
//! only lines that are JSON, and every other line is answered.
//!
//! rmcp ignores a line that is not JSON, and drops a line longer than its
//! bound, without a word (so do the other SDKs, lest two peers answer each
//! other's noise forever), and a client that sent one waits forever. Here:
//! - a line that is not JSON gets a JSON-RPC parse error (`-32700`, `"id":
//!   null`, the parser's words in the message), and the session goes on;
//!   so does one rmcp's parser would refuse though a quick scan passes it
//!   (a string not UTF-8, a lone surrogate, a number past `f64`, nesting
//!   past [`MAX_DEPTH`]): rmcp drops those without a word too;
//! - a line longer than [`MAX_LINE`] is never held whole: its first
//!   [`MAX_LINE`] bytes are read, it gets an invalid request error
//!   (`-32600`, `"id": null`: its id is in what was not read), the rest of
//!   it is read and dropped as it comes, and the session goes on;
//! - a blank line is skipped, as rmcp skips it.
//!
//! An answer of ours is JSON, so a peer that echoes it back is answered by
//! rmcp, not by us: no storm. Invariants: the filter holds at most one line
//! of [`MAX_LINE`] bytes; stdout carries whole lines only (rmcp's and ours
//! never interleave); every answer is written before the server exits.

use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _};
use tokio::io::{AsyncWrite, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The longest line read, its newline included: rmcp's own bound (16 MiB).
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

type Answers = mpsc::UnboundedSender<Vec<u8>>;

/// The transport to hand rmcp (what it reads, where it writes), and the
/// task writing stdout, which ends once rmcp has let go of the transport.
pub fn stdio() -> ((DuplexStream, DuplexStream), tokio::task::JoinHandle<()>) {
    let (rmcp_in, filtered) = tokio::io::duplex(64 * 1024);
    let (rmcp_out, written) = tokio::io::duplex(64 * 1024);
    let (answers, answered) = mpsc::unbounded_channel();
    tokio::spawn(filter(tokio::io::stdin(), filtered, answers));
    let writer = tokio::spawn(write(written, answered, tokio::io::stdout()));
    ((rmcp_in, rmcp_out), writer)
}

/// Reads `input` a line at a time, at most [`MAX_LINE`] bytes of it, and
/// passes on the lines that are JSON; answers the others.
async fn filter(input: impl AsyncRead + Unpin, mut rmcp: DuplexStream, answers: Answers) {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    while read_line(&mut input, &mut line).await {
        let answer = if line.len() == MAX_LINE && !line.ends_with(b"\n") {
            while !line.ends_with(b"\n") && read_line(&mut input, &mut line).await {}
            let mib = MAX_LINE >> 20;
            error(
                -32600,
                format!("Invalid Request: a message is at most {mib} MiB; this one was not read"),
            )
        } else {
            let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
            if text.trim_ascii().is_empty() {
                continue;
            }
            match check(text) {
                Ok(()) if rmcp.write_all(&line).await.is_ok() => continue,
                Ok(()) => return,
                Err(e) => error(-32700, format!("Parse error: {e}")),
            }
        };
        if answers.send(answer).is_err() {
            return;
        }
    }
}

/// How deep a message may nest: serde_json's recursion limit (128) refuses
/// the 128th level of arrays and objects, in rmcp's parser as in ours.
pub const MAX_DEPTH: usize = 127;

/// Whether rmcp's parser will read `text` as JSON, and if not, why: it is
/// UTF-8, and serde_json parses it whole — every string decoded (a lone
/// surrogate is refused), every number in range, at most [`MAX_DEPTH`]
/// levels deep — building nothing. (`IgnoredAny` would not do: it skips
/// strings without decoding them, and nesting without a limit.)
fn check(text: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    match serde_json::from_str::<Wellformed>(text) {
        Ok(Wellformed) => Ok(()),
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            Err(format!("nested more than {MAX_DEPTH} levels deep: {e}"))
        }
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// Any JSON value, read to the end and kept nowhere.
struct Wellformed;

impl<'de> serde::Deserialize<'de> for Wellformed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Wellformed)
    }
}

impl<'de> serde::de::Visitor<'de> for Wellformed {
    type Value = Wellformed;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(Wellformed)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(Wellformed)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(Wellformed)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(Wellformed)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(Wellformed)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(Wellformed)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while let Some(Wellformed) = seq.next_element()? {}
        Ok(Wellformed)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        while let Some((Wellformed, Wellformed)) = map.next_entry()? {}
        Ok(Wellformed)
    }
}

/// Reads the next line into `line`, or its first [`MAX_LINE`] bytes; false
/// at the end of the input.
async fn read_line(input: &mut (impl AsyncBufRead + Unpin), line: &mut Vec<u8>) -> bool {
    line.clear();
    let read = input.take(MAX_LINE as u64).read_until(b'\n', line).await;
    matches!(read, Ok(1..))
}

/// A JSON-RPC error answering a message whose id is unknown.
fn error(code: i32, message: String) -> Vec<u8> {
    let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut line = error.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Writes rmcp's lines and the filter's answers to `out`, each whole,
/// until rmcp is done; then the answers still queued.
async fn write(
    rmcp: DuplexStream,
    mut answers: mpsc::UnboundedReceiver<Vec<u8>>,
    mut out: impl AsyncWrite + Unpin,
) {
    let mut rmcp = BufReader::new(rmcp);
    let mut line = Vec::new();
    loop {
        // A read cut short by an answer keeps what it read in `line`.
        let next = tokio::select! {
            biased;
            Some(answer) = answers.recv() => answer,
            read = rmcp.read_until(b'\n', &mut line) => match read {
                Ok(1..) => std::mem::take(&mut line),
                _ => break,
            },
        };
        if out.write_all(&next).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
    while let Ok(answer) = answers.try_recv() {
        let _ = out.write_all(&answer).await;
    }
    let _ = out.flush().await;
}
