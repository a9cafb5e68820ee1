//! The accept loop and the table of open connections, each served on a
//! thread of its own by [`wire::serve_connection`].
//!
//! Invariants:
//! - the loop never stops listening: an accept that fails for want of file
//!   descriptors or memory closes the oldest connection waiting for a
//!   request and tries again, and when none waits, tries again after a
//!   pause that grows to half a second;
//! - at most [`MAX_CONNECTIONS`] connections are open, and once the process
//!   has run out of file descriptors, [`HEADROOM`] fewer than it held then,
//!   so that answering still has files to read the state with. One more
//!   closes the oldest connection waiting for a request; when every one is
//!   being answered, the new one is closed instead.

use std::collections::BTreeMap;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::wire::{self, Limits, Refused, Reply, Request};

/// The most connections open at once: far more than a few browsers use,
/// and a fraction of a usual limit of 1,024 open files.
pub const MAX_CONNECTIONS: usize = 256;

/// File descriptors left free once the process has run out of them.
const HEADROOM: usize = 16;

/// The fewest connections the table is ever shrunk to.
const MIN_CONNECTIONS: usize = 8;

struct Open {
    stream: Arc<TcpStream>,
    /// Waiting for a request (or refused, and closing): may be closed.
    waiting: bool,
}

struct Table {
    next: u64,
    cap: usize,
    /// By age: ids only grow.
    open: BTreeMap<u64, Open>,
}

impl Table {
    /// Closes the oldest connection waiting for a request; `false` when none is.
    fn close_oldest_waiting(&mut self) -> bool {
        let Some(id) = self.open.iter().find(|(_, o)| o.waiting).map(|(id, _)| *id) else {
            return false;
        };
        if let Some(open) = self.open.remove(&id) {
            // Its thread's read ends; the descriptor closes with the thread.
            let _ = open.stream.shutdown(Shutdown::Both);
        }
        true
    }
}

struct Connections(Mutex<Table>);

impl Connections {
    fn new() -> Self {
        Connections(Mutex::new(Table {
            next: 0,
            cap: MAX_CONNECTIONS,
            open: BTreeMap::new(),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `stream` into the table, making room if it is full; `None`
    /// (and `stream` closed) when every open connection is being answered.
    fn admit(&self, stream: TcpStream) -> Option<(u64, Arc<TcpStream>)> {
        let mut table = self.lock();
        while table.open.len() >= table.cap {
            if !table.close_oldest_waiting() {
                return None;
            }
        }
        let id = table.next;
        table.next += 1;
        let stream = Arc::new(stream);
        let open = Open {
            stream: stream.clone(),
            waiting: true,
        };
        table.open.insert(id, open);
        Some((id, stream))
    }

    fn set_waiting(&self, id: u64, waiting: bool) {
        if let Some(open) = self.lock().open.get_mut(&id) {
            open.waiting = waiting;
        }
    }

    fn leave(&self, id: u64) {
        self.lock().open.remove(&id);
    }

    /// After running out of file descriptors: from now on hold
    /// [`HEADROOM`] fewer connections than are open, closing waiting ones
    /// down to that. Whether any was closed.
    fn make_room(&self) -> bool {
        let mut table = self.lock();
        let fewer = table.open.len().saturating_sub(HEADROOM);
        table.cap = table.cap.min(fewer.max(MIN_CONNECTIONS));
        let mut closed = false;
        while table.open.len() >= table.cap && table.close_oldest_waiting() {
            closed = true;
        }
        closed
    }
}

/// Removes a connection from the table when its thread ends, however.
struct Leave<'a>(&'a Connections, u64);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// Whether an accept failed for want of file descriptors or memory.
fn out_of_resources(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    e.kind() == std::io::ErrorKind::OutOfMemory
        || matches!(
            Errno::from_io_error(e),
            Some(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM)
        )
}

/// Whether an accept failed for a reason the next accept does not have.
fn passing(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    )
}

/// Says what went wrong at most once a minute: a flood must not flood the log.
struct Warn(Option<Instant>);

impl Warn {
    fn warn(&mut self, what: &str, e: &std::io::Error) {
        if self
            .0
            .is_none_or(|last| last.elapsed() > Duration::from_secs(60))
        {
            self.0 = Some(Instant::now());
            tracing::warn!("serve: {what}: {e}; still listening");
        }
    }
}

/// Accepts connections on `listener` and serves each on its own thread,
/// forever. `answer` answers a request, `refusal` a head refused by the
/// `limits`.
pub fn run(
    listener: &TcpListener,
    limits: &Limits,
    answer: &(dyn Fn(&Request) -> Reply + Sync),
    refusal: &(dyn Fn(&Refused) -> Reply + Sync),
) {
    let connections = Connections::new();
    let connections = &connections;
    let mut warn = Warn(None);
    let mut pause = Duration::ZERO;
    let wait = |pause: &mut Duration| {
        *pause = (*pause * 2).clamp(Duration::from_millis(5), Duration::from_millis(500));
        std::thread::sleep(*pause);
    };
    std::thread::scope(|scope| loop {
        match listener.accept() {
            Ok((stream, _)) => {
                pause = Duration::ZERO;
                let Some((id, stream)) = connections.admit(stream) else {
                    continue;
                };
                let spawned = std::thread::Builder::new()
                    .name("serve-connection".into())
                    .spawn_scoped(scope, move || {
                        let _leave = Leave(connections, id);
                        let waiting = |w| connections.set_waiting(id, w);
                        wire::serve_connection(&stream, limits, &waiting, answer, refusal);
                    });
                if let Err(e) = spawned {
                    connections.leave(id);
                    warn.warn("cannot start a thread for a connection", &e);
                    wait(&mut pause);
                }
            }
            Err(e) if out_of_resources(&e) => {
                warn.warn("cannot accept a connection", &e);
                if connections.make_room() {
                    // The closed connections' threads end at once.
                    std::thread::sleep(Duration::from_millis(1));
                } else {
                    wait(&mut pause);
                }
            }
            // A connection reset while it was queued, an interrupted call.
            Err(e) if passing(&e) => {}
            Err(e) => {
                warn.warn("cannot accept a connection", &e);
                wait(&mut pause);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    /// `n` connections accepted from `listener`, with their clients.
    fn connect(listener: &TcpListener, n: usize) -> Vec<(TcpStream, TcpStream)> {
        let addr = listener.local_addr().unwrap();
        (0..n)
            .map(|_| {
                let client = TcpStream::connect(addr).unwrap();
                client
                    .set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                (client, listener.accept().unwrap().0)
            })
            .collect()
    }

    fn closed(client: &mut TcpStream) -> bool {
        matches!(client.read(&mut [0; 16]), Ok(0))
    }

    #[test]
    fn a_full_table_closes_its_oldest_waiting_connection_or_the_new_one() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Connections::new();
        connections.lock().cap = 2;
        let (mut clients, streams): (Vec<_>, Vec<_>) = connect(&listener, 4).into_iter().unzip();
        let mut streams = streams.into_iter();
        let first = connections.admit(streams.next().unwrap()).unwrap();
        let second = connections.admit(streams.next().unwrap()).unwrap();
        connections.set_waiting(first.0, false);
        let third = connections.admit(streams.next().unwrap()).unwrap();
        assert!(closed(&mut clients[1]), "the oldest waiting one is closed");
        assert!(!closed(&mut clients[0]), "one being answered stays");
        assert_eq!(connections.lock().open.len(), 2);
        connections.set_waiting(third.0, false);
        assert!(connections.admit(streams.next().unwrap()).is_none());
        connections.leave(first.0);
        connections.leave(second.0);
        assert_eq!(connections.lock().open.len(), 1);
    }

    #[test]
    fn running_out_of_descriptors_shrinks_the_table_below_what_was_open() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Connections::new();
        let pairs = connect(&listener, 30);
        for (_, stream) in &pairs {
            connections.admit(stream.try_clone().unwrap()).unwrap();
        }
        assert!(connections.make_room());
        let table = connections.lock();
        assert_eq!(table.cap, 30 - HEADROOM);
        let kept = 30 - HEADROOM - 1;
        assert_eq!(table.open.len(), kept, "room for the next");
        let newest: Vec<u64> = (30 - kept as u64..30).collect();
        assert!(
            table.open.keys().copied().eq(newest),
            "the oldest are closed"
        );
    }

    #[test]
    fn resource_errors_are_told_apart() {
        use rustix::io::Errno;
        let error = |e: Errno| std::io::Error::from_raw_os_error(e.raw_os_error());
        assert!(out_of_resources(&error(Errno::MFILE)));
        assert!(out_of_resources(&error(Errno::NFILE)));
        assert!(!out_of_resources(&error(Errno::CONNABORTED)));
        assert!(passing(&error(Errno::CONNABORTED)));
        assert!(passing(&error(Errno::INTR)));
    }
}
