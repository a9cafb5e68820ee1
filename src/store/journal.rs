//! An append-only file of small host-local cache entries (the parsed-state
//! cache's deltas, see [`crate::store::cache`]).
//!
//! A writeback used to leave its delta as a file of its own: one more file
//! creation while holding the writer lock, and file creations are what a
//! write costs on a busy disk. Appending a record to one file creates
//! nothing. Records are framed and checksummed:
//!
//! ```text
//! "LXJ1" | key length u32 LE | value length u32 LE | crc32(key ++ value) u32 LE | key | value
//! ```
//!
//! Each record is one `write` on a file opened for appending, so writers on
//! one host never interleave; a reader takes only whole records whose
//! checksum holds, and skips anything else (a writer that died mid-record).
//! A long-lived reader keeps what it parsed and reads only what was appended
//! since. Past [`ROTATE_BYTES`] the file is renamed to `journal.old` (one
//! generation is kept, so a chain of deltas survives the switch) and a new
//! one starts. Like the rest of the cache it is disposable: a missing or
//! damaged journal only means reading git.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::path::PathBuf;

const MAGIC: &[u8; 4] = b"LXJ1";
const HEADER: usize = 16;

/// Size past which the journal starts over (about 130 deltas: a chain is
/// at most 48 long, and a command reads both generations whole).
pub const ROTATE_BYTES: u64 = 64 * 1024;

/// The journal under a cache directory, and what this process read of it.
pub struct Journal {
    dir: PathBuf,
    view: RefCell<View>,
    /// Whether live entries are carried into the new file when it starts
    /// over (for records that must outlast two generations).
    carry: bool,
    /// Size past which the file starts over.
    rotate: u64,
}

#[derive(Default)]
struct View {
    /// Identity of the file read (inode), and how far it was parsed.
    file: Option<u64>,
    parsed: u64,
    entries: HashMap<String, Vec<u8>>,
}

impl Journal {
    pub fn new(dir: PathBuf) -> Self {
        Journal {
            dir,
            view: RefCell::default(),
            carry: false,
            rotate: ROTATE_BYTES,
        }
    }

    /// A journal that starts over past `rotate` bytes instead of
    /// [`ROTATE_BYTES`], for larger records read only when needed.
    pub fn sized(dir: PathBuf, rotate: u64) -> Self {
        Journal {
            rotate,
            ..Journal::new(dir)
        }
    }

    /// Every key with a non-empty value, and that value.
    pub fn entries(&self) -> Vec<(String, Vec<u8>)> {
        self.refresh();
        let view = self.view.borrow();
        view.entries
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Forgets every entry: both generations are removed.
    pub fn clear(&self) {
        for name in ["journal", "journal.old"] {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
        *self.view.borrow_mut() = View::default();
    }

    /// A journal whose entries live until overwritten or emptied: when it
    /// starts over, the writer that rotates it appends every entry it knows
    /// with a non-empty value to the new file.
    pub fn carrying(dir: PathBuf) -> Self {
        Journal {
            carry: true,
            ..Journal::new(dir)
        }
    }

    fn current(&self) -> PathBuf {
        self.dir.join("journal")
    }

    /// The value last appended under `key`, if any.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.refresh();
        self.view.borrow().entries.get(key).cloned()
    }

    /// The value of a key that is never appended twice with different
    /// values (the cache's deltas, keyed by commit): what was read before
    /// is answered without looking at the file again.
    pub fn get_settled(&self, key: &str) -> Option<Vec<u8>> {
        if let Some(value) = self.view.borrow().entries.get(key) {
            return Some(value.clone());
        }
        self.get(key)
    }

    /// Appends `key` → `value`; failures are ignored (it is a cache, or a
    /// record whose loss is tolerated).
    pub fn append(&self, key: &str, value: &[u8]) {
        let Some(record) = framed(key, value) else {
            return;
        };
        if std::fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.current())
            .and_then(|mut file| {
                file.write_all(&record)?;
                file.metadata()
            });
        if appended.is_ok_and(|m| m.len() > self.rotate) {
            let live: Vec<Vec<u8>> = if self.carry {
                self.refresh();
                let view = self.view.borrow();
                view.entries
                    .iter()
                    .filter(|(_, v)| !v.is_empty())
                    .filter_map(|(k, v)| framed(k, v))
                    .collect()
            } else {
                Vec::new()
            };
            let _ = std::fs::rename(self.current(), self.dir.join("journal.old"));
            if !live.is_empty() {
                let _ = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.current())
                    .and_then(|mut file| file.write_all(&live.concat()));
            }
        }
    }

    /// Reads what was appended since the last look, or everything again
    /// when the file was rotated.
    fn refresh(&self) {
        let Ok(meta) = std::fs::metadata(self.current()) else {
            return;
        };
        let identity = inode(&meta);
        let mut view = self.view.borrow_mut();
        if view.file != Some(identity) || meta.len() < view.parsed {
            *view = View::default();
            if let Ok(old) = std::fs::read(self.dir.join("journal.old")) {
                parse(&old, &mut view.entries);
            }
            view.file = Some(identity);
        }
        if meta.len() == view.parsed {
            return;
        }
        let mut tail = Vec::new();
        let read = std::fs::File::open(self.current()).and_then(|mut file| {
            file.seek(std::io::SeekFrom::Start(view.parsed))?;
            file.read_to_end(&mut tail)
        });
        if read.is_ok() {
            let used = parse(&tail, &mut view.entries);
            view.parsed += used as u64;
        }
    }
}

/// One framed record (see the module docs), if its lengths fit.
fn framed(key: &str, value: &[u8]) -> Option<Vec<u8>> {
    let key_len = u32::try_from(key.len()).ok()?;
    let value_len = u32::try_from(value.len()).ok()?;
    let mut record = Vec::with_capacity(HEADER + key.len() + value.len());
    record.extend_from_slice(MAGIC);
    record.extend_from_slice(&key_len.to_le_bytes());
    record.extend_from_slice(&value_len.to_le_bytes());
    record.extend_from_slice(&[0; 4]);
    record.extend_from_slice(key.as_bytes());
    record.extend_from_slice(value);
    let crc = crc32fast::hash(&record[HEADER..]);
    record[12..16].copy_from_slice(&crc.to_le_bytes());
    Some(record)
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(meta: &std::fs::Metadata) -> u64 {
    meta.created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Adds the whole, intact records of `buf` to `entries`; returns how many
/// bytes are settled (up to the end of the last whole record, or past
/// garbage that whole records follow), so an incomplete tail is read again.
fn parse(buf: &[u8], entries: &mut HashMap<String, Vec<u8>>) -> usize {
    let mut at = 0;
    let mut settled = 0;
    while at + HEADER <= buf.len() {
        match record(buf, at) {
            Record::Whole { key, value, end } => {
                entries.insert(key.to_owned(), value.to_vec());
                at = end;
                settled = end;
            }
            // Either still being written (read it again later), or torn by
            // a writer that died: then whole records follow, so skip it.
            Record::Short
                if !(at + 1..buf.len()).any(|i| matches!(record(buf, i), Record::Whole { .. })) =>
            {
                break;
            }
            Record::Short | Record::Garbage => at += 1,
        }
    }
    settled
}

enum Record<'a> {
    Whole {
        key: &'a str,
        value: &'a [u8],
        end: usize,
    },
    Short,
    Garbage,
}

fn record(buf: &[u8], at: usize) -> Record<'_> {
    if buf.len() < at + HEADER || &buf[at..at + 4] != MAGIC {
        return Record::Garbage;
    }
    let field = |i: usize| u32::from_le_bytes(buf[at + i..at + i + 4].try_into().expect("4 bytes"));
    let (key_len, value_len, crc) = (field(4) as usize, field(8) as usize, field(12));
    let end = at + HEADER + key_len + value_len;
    if end > buf.len() {
        return Record::Short;
    }
    let body = &buf[at + HEADER..end];
    match std::str::from_utf8(&body[..key_len]) {
        Ok(key) if crc32fast::hash(body) == crc => Record::Whole {
            key,
            value: &body[key_len..],
            end,
        },
        _ => Record::Garbage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_are_read_back_also_by_a_reader_that_read_before() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, reader) = (
            Journal::new(dir.path().to_owned()),
            Journal::new(dir.path().to_owned()),
        );
        assert_eq!(reader.get("a"), None);
        writer.append("a", b"one");
        assert_eq!(reader.get("a").as_deref(), Some(&b"one"[..]));
        writer.append("b", b"two");
        writer.append("a", b"three");
        assert_eq!(reader.get("b").as_deref(), Some(&b"two"[..]));
        assert_eq!(reader.get("a").as_deref(), Some(&b"three"[..]));
    }

    #[test]
    fn torn_and_damaged_records_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path().to_owned());
        journal.append("a", b"one");
        // A writer that died mid-record, then a damaged record, then more.
        let path = dir.path().join("journal");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&bytes.clone()[..10]);
        let mut damaged = bytes.clone()[..bytes.len() - 10].to_vec();
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        bytes.extend_from_slice(&damaged);
        std::fs::write(&path, &bytes).unwrap();
        journal.append("b", b"two");
        let fresh = Journal::new(dir.path().to_owned());
        assert_eq!(fresh.get("a").as_deref(), Some(&b"one"[..]));
        assert_eq!(fresh.get("b").as_deref(), Some(&b"two"[..]));
    }

    #[test]
    fn rotation_keeps_one_generation() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path().to_owned());
        let big = vec![7u8; ROTATE_BYTES as usize];
        journal.append("first", b"1");
        journal.append("big", &big);
        journal.append("after", b"2");
        assert!(dir.path().join("journal.old").exists());
        let fresh = Journal::new(dir.path().to_owned());
        assert_eq!(fresh.get("first").as_deref(), Some(&b"1"[..]));
        assert_eq!(fresh.get("after").as_deref(), Some(&b"2"[..]));
        // The reader that saw the old file sees the new one too.
        journal.append("later", b"3");
        assert_eq!(fresh.get("later").as_deref(), Some(&b"3"[..]));
    }

    #[test]
    fn a_carrying_journal_keeps_live_entries_through_rotations() {
        let big = vec![7u8; ROTATE_BYTES as usize];
        let run = |journal: &Journal| {
            journal.append("live", b"1");
            journal.append("gone", b"2");
            journal.append("gone", b"");
            for _ in 0..3 {
                journal.append("pad", &big);
                journal.append("pad", b"");
            }
        };
        let (plain, carrying) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        run(&Journal::new(plain.path().to_owned()));
        run(&Journal::carrying(carrying.path().to_owned()));
        assert_eq!(Journal::new(plain.path().to_owned()).get("live"), None);
        let fresh = Journal::new(carrying.path().to_owned());
        assert_eq!(fresh.get("live").as_deref(), Some(&b"1"[..]));
        assert!(fresh.get("gone").is_none_or(|v| v.is_empty()));
        assert!(fresh.get("pad").is_none_or(|v| v.is_empty()));
    }
}
