//! stdin and stdout, as rmcp's transport, behind a line filter: rmcp reads
//! only lines that are JSON, and every other line is answered.
//!
//! rmcp ignores a line that is not JSON, and drops a line longer than its
//! bound, without a word (so do the other SDKs, lest two peers answer each
//! other's noise forever), and a client that sent one waits forever. Here:
//! - a line that is not JSON gets a JSON-RPC parse error (`-32700`, `"id":
//!   null`, the parser's words in the message), and the session goes on;
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
            match serde_json::from_slice::<serde::de::IgnoredAny>(text) {
                Ok(_) if rmcp.write_all(&line).await.is_ok() => continue,
                Ok(_) => return,
                Err(e) => error(-32700, format!("Parse error: not JSON: {e}")),
            }
        };
        if answers.send(answer).is_err() {
            return;
        }
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
