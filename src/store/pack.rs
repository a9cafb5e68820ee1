//! A writeback's objects as one small pack, instead of one loose file each.
//!
//! A writeback adds about seven objects (a blob, the trees on its path, the
//! commit). As loose objects that is seven file creations and up to seven
//! fan-out directories, and on a busy ext4 a file creation costs from 20 µs
//! to close to a millisecond: the files, not the CPU, set how many writes a
//! second one host can commit. Written as one pack they are two files, a
//! `.pack` and its `.idx`, whatever the count.
//!
//! The format is git's own (pack version 2, index version 2; see git's
//! `Documentation/gitformat-pack.txt`): every object stored whole, deflated,
//! never as a delta. The pack is written before its index and both are
//! renamed into place, so a reader that finds the index finds a complete
//! pack. Small packs pile up; [`crate::git_cmd::repack_detached`] rolls them
//! up in the background.
//!
//! Only SHA-1 repositories (git's default) are written this way; the caller
//! falls back to loose objects elsewhere.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use crate::store::blank::Blank;
use crate::store::durable::Durability;

/// Git's object kinds, with their type codes in a pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Commit = 1,
    Tree = 2,
    Blob = 3,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Commit => "commit",
            Kind::Tree => "tree",
            Kind::Blob => "blob",
        }
    }
}

/// A pack read whole into memory, to find objects in without going through
/// the repository's object store: a long-lived gix store rescans
/// `objects/pack` and snapshots every index for each object that a new pack
/// holds, and under contention every other writer's commit is a new pack.
/// Writers load the packs the parsed-state cache names for the commits they
/// replay (see `store::cache`), find the tip's trees there, and fall back to
/// the object store for the rest. Only whole objects are read (a deltified
/// entry is "not here"), and an object is only returned when its bytes hash
/// to the id asked for.
pub struct Loaded {
    idx: Vec<u8>,
    pack: Vec<u8>,
}

impl Loaded {
    /// Reads `<stem>.idx` and `<stem>.pack` from `pack_dir`.
    pub fn open(pack_dir: &Path, stem: &str) -> io::Result<Self> {
        let idx = std::fs::read(pack_dir.join(format!("{stem}.idx")))?;
        let pack = std::fs::read(pack_dir.join(format!("{stem}.pack")))?;
        if idx.len() < 8 + 1024 + 40 || idx[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
            return Err(io::Error::other(format!(
                "{stem}.idx is not a version 2 pack index"
            )));
        }
        let loaded = Loaded { idx, pack };
        if loaded.idx.len() < 8 + 1024 + loaded.count() * 28 + 40 {
            return Err(io::Error::other(format!("{stem}.idx is truncated")));
        }
        Ok(loaded)
    }

    fn be32(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.idx[at..at + 4].try_into().expect("four bytes"))
    }

    fn count(&self) -> usize {
        self.be32(8 + 255 * 4) as usize
    }

    /// The object `id`, if this pack holds it whole.
    pub fn find(&self, id: &[u8; 20]) -> Option<(Kind, Vec<u8>)> {
        let n = self.count();
        let first = usize::from(id[0]);
        let mut lo = if first == 0 {
            0
        } else {
            self.be32(8 + (first - 1) * 4) as usize
        };
        let mut hi = (self.be32(8 + first * 4) as usize).min(n);
        let ids = 8 + 1024;
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.idx[ids + mid * 20..ids + mid * 20 + 20].cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.entry(mid, n, id),
            }
        }
        None
    }

    /// The id at position `i` of the index.
    fn id_at(&self, i: usize) -> Option<[u8; 20]> {
        let at = 8 + 1024 + i * 20;
        self.idx.get(at..at + 20)?.try_into().ok()
    }

    /// The ids of the pack's objects, with their positions in the index.
    pub fn ids(&self) -> impl Iterator<Item = (u32, [u8; 20])> + '_ {
        (0..self.count()).filter_map(|i| Some((u32::try_from(i).ok()?, self.id_at(i)?)))
    }

    /// The object at position `i` of the index, if held whole (its bytes
    /// hash to the id the index gives).
    pub fn at(&self, i: u32) -> Option<(Kind, Vec<u8>)> {
        let (n, i) = (self.count(), i as usize);
        (i < n).then(|| self.entry(i, n, &self.id_at(i)?))?
    }

    /// The bytes the pack and its index take in memory.
    pub fn bytes_held(&self) -> usize {
        self.idx.len() + self.pack.len()
    }

    fn entry(&self, i: usize, n: usize, id: &[u8; 20]) -> Option<(Kind, Vec<u8>)> {
        let offset = self.be32(8 + 1024 + n * 24 + i * 4);
        if offset & 0x8000_0000 != 0 {
            return None;
        }
        let mut at = offset as usize;
        let mut byte = *self.pack.get(at)?;
        let kind = match (byte >> 4) & 7 {
            1 => Kind::Commit,
            2 => Kind::Tree,
            3 => Kind::Blob,
            _ => return None,
        };
        let mut size = u64::from(byte & 0x0f);
        let mut shift = 4;
        while byte & 0x80 != 0 {
            at += 1;
            byte = *self.pack.get(at)?;
            size |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if shift > 60 {
                return None;
            }
        }
        let mut data = vec![0u8; usize::try_from(size).ok()?];
        let mut inflate = gix::zlib::Inflate::default();
        let (status, _, written) = inflate.once(self.pack.get(at + 1..)?, &mut data).ok()?;
        let whole = status == gix::zlib::Status::StreamEnd && written == data.len();
        (whole && object_id(kind, &data) == *id).then_some((kind, data))
    }
}

/// The SHA-1 object id git gives `data` stored as a `kind`.
pub fn object_id(kind: Kind, data: &[u8]) -> [u8; 20] {
    let mut hasher = sha1_smol::Sha1::new();
    hasher.update(kind.name().as_bytes());
    hasher.update(b" ");
    hasher.update(data.len().to_string().as_bytes());
    hasher.update(b"\0");
    hasher.update(data);
    hasher.digest().bytes()
}

/// Objects gathered for one pack.
#[derive(Default)]
pub struct Objects {
    entries: Vec<([u8; 20], Kind, Vec<u8>)>,
    /// Ids added so far: a bulk write (an import, a merge) adds thousands.
    known: std::collections::HashSet<[u8; 20]>,
}

impl Objects {
    /// Adds an object (once per id) and returns its id.
    pub fn add(&mut self, kind: Kind, data: Vec<u8>) -> [u8; 20] {
        let id = object_id(kind, &data);
        if self.known.insert(id) {
            self.entries.push((id, kind, data));
        }
        id
    }

    /// The objects gathered so far, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8; 20], Kind, &[u8])> {
        self.entries
            .iter()
            .map(|(id, kind, data)| (id, *kind, data.as_slice()))
    }

    /// Writes the objects as `pack-<checksum>.{pack,idx}` into `pack_dir`
    /// (`objects/pack`) and returns the file stem, `pack-<checksum>`.
    ///
    /// The pack is written kept (a `.keep` file beside it, as `git
    /// receive-pack` does for a pushed pack until its refs are updated):
    /// until a ref reaches its objects they are unreachable, and a `git
    /// repack -a -d` running meanwhile would drop them. The caller
    /// [`unkeep`]s it once the ref has moved (or the move failed).
    ///
    /// The `.keep` is not created afresh each time: `spare`, a file the
    /// previous writeback left (under `.git/loopx/`), is renamed into place
    /// and back, which costs no new inode; without one, it is created.
    ///
    /// `blanks`, when given, are the two files to fill (see [`Blank`]).
    /// Both files are synced before they are named, and the directory
    /// after, when git config asks for packs to be (see `store::durable`).
    pub fn write(
        &self,
        pack_dir: &Path,
        spare: &Path,
        blanks: Option<(Blank, Blank)>,
        durability: &Durability,
    ) -> io::Result<String> {
        let (pack, idx, checksum) = self.encode()?;
        let (blank_pack, blank_idx) = blanks.map_or((None, None), |(p, i)| (Some(p), Some(i)));
        let name = format!("pack-{}", hex(&checksum));
        let keep = pack_dir.join(format!("{name}.keep"));
        if std::fs::rename(spare, &keep).is_err() {
            std::fs::write(&keep, b"git-loopx: writeback in progress\n")?;
        }
        let written = put(
            pack_dir,
            &format!("{name}.pack"),
            &pack,
            blank_pack,
            durability,
        )
        .and_then(|_| {
            put(
                pack_dir,
                &format!("{name}.idx"),
                &idx,
                blank_idx,
                durability,
            )
        })
        .and_then(|idx| durability.sync_parent(durability.packs, &idx));
        if let Err(e) = written {
            unkeep(pack_dir, &name, spare);
            return Err(e);
        }
        Ok(name)
    }

    /// The bytes of the pack, of its index, and the pack's checksum.
    fn encode(&self) -> io::Result<(Vec<u8>, Vec<u8>, [u8; 20])> {
        let mut pack =
            Vec::with_capacity(256 + self.entries.iter().map(|e| e.2.len()).sum::<usize>());
        pack.extend_from_slice(b"PACK");
        pack.extend_from_slice(&2u32.to_be_bytes());
        pack.extend_from_slice(
            &u32::try_from(self.entries.len())
                .map_err(io::Error::other)?
                .to_be_bytes(),
        );
        // (id, crc32 of the entry's bytes, offset of the entry)
        let mut index: Vec<([u8; 20], u32, u64)> = Vec::with_capacity(self.entries.len());
        let mut deflate =
            gix::zlib::stream::deflate::Compress::new(gix::zlib::Compression::BEST_SPEED);
        for (id, kind, data) in &self.entries {
            let offset = pack.len() as u64;
            entry_header(&mut pack, *kind, data.len() as u64);
            deflate.reset();
            deflate_into(&mut deflate, data, &mut pack)?;
            index.push((*id, crc32(&pack[offset as usize..]), offset));
        }
        let checksum = sha1(&pack);
        pack.extend_from_slice(&checksum);

        index.sort_unstable_by_key(|e| e.0);
        let mut idx = Vec::with_capacity(8 + 1024 + index.len() * 28 + 40);
        idx.extend_from_slice(&[0xff, b't', b'O', b'c']);
        idx.extend_from_slice(&2u32.to_be_bytes());
        for first in 0..=255u8 {
            let upto = index.partition_point(|(id, _, _)| id[0] <= first) as u32;
            idx.extend_from_slice(&upto.to_be_bytes());
        }
        for (id, _, _) in &index {
            idx.extend_from_slice(id);
        }
        for (_, crc, _) in &index {
            idx.extend_from_slice(&crc.to_be_bytes());
        }
        for (_, _, offset) in &index {
            // One writeback's pack is far below 2 GiB; no large-offset table.
            let small = u32::try_from(*offset)
                .ok()
                .filter(|o| o & 0x8000_0000 == 0)
                .ok_or_else(|| io::Error::other("pack entry beyond 2 GiB"))?;
            idx.extend_from_slice(&small.to_be_bytes());
        }
        idx.extend_from_slice(&checksum);
        let own = sha1(&idx);
        idx.extend_from_slice(&own);
        Ok((pack, idx, checksum))
    }
}

/// Appends the zlib stream of `data` to `out`.
fn deflate_into(
    deflate: &mut gix::zlib::stream::deflate::Compress,
    data: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    use gix::zlib::{stream::deflate::FlushCompress, Status};
    let mut chunk = [0u8; 8192];
    loop {
        let consumed = deflate.total_in() as usize;
        let before = deflate.total_out();
        let status = deflate
            .compress(&data[consumed..], &mut chunk, FlushCompress::Finish)
            .map_err(io::Error::other)?;
        out.extend_from_slice(&chunk[..(deflate.total_out() - before) as usize]);
        match status {
            Status::StreamEnd => return Ok(()),
            Status::Ok | Status::BufError => {}
        }
    }
}

/// Removes the `.keep` of a pack [`Objects::write`] wrote, back to `spare`.
pub fn unkeep(pack_dir: &Path, stem: &str, spare: &Path) {
    let keep = pack_dir.join(format!("{stem}.keep"));
    if std::fs::rename(&keep, spare).is_err() {
        let _ = std::fs::remove_file(keep);
    }
}

/// An entry's header: the type and the inflated size, 4 bits then 7 a byte.
fn entry_header(out: &mut Vec<u8>, kind: Kind, size: u64) {
    let mut byte = ((kind as u8) << 4) | (size & 0x0f) as u8;
    let mut rest = size >> 4;
    while rest != 0 {
        out.push(byte | 0x80);
        byte = (rest & 0x7f) as u8;
        rest >>= 7;
    }
    out.push(byte);
}

/// Writes `bytes` into a blank and names it `name`, read-only as git
/// keeps its packs. A file already there has the same name, so the same bytes.
fn put(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    blank: Option<Blank>,
    durability: &Durability,
) -> io::Result<PathBuf> {
    let target = dir.join(name);
    let mut blank = match blank {
        Some(blank) => blank,
        None => Blank::create(dir, 0o444)?,
    };
    let written = blank.file().write_all(bytes);
    if let Err(e) = written.and_then(|()| durability.sync(durability.packs, blank.file(), &target))
    {
        blank.discard();
        return Err(e);
    }
    match blank.put_at(&target) {
        Ok(()) => Ok(target),
        // An unnamed file that could not be named: once more, named.
        Err(_) => {
            let mut named = Blank::create_named(dir, 0o444)?;
            named.file().write_all(bytes)?;
            durability.sync(durability.packs, named.file(), &target)?;
            named.put_at(&target).map(|()| target)
        }
    }
}

fn sha1(bytes: &[u8]) -> [u8; 20] {
    sha1_smol::Sha1::from(bytes).digest().bytes()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// CRC-32 (IEEE 802.3, reflected), as a pack index records per entry (and
/// the journal per record; `crc32fast` uses the CPU's carry-less multiply).
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_of_the_check_string() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn ids_are_gits() {
        // `git hash-object --stdin </dev/null` and `git mktree </dev/null`
        assert_eq!(
            hex(&object_id(Kind::Blob, b"")),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            hex(&object_id(Kind::Tree, b"")),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }

    #[test]
    fn a_written_pack_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut objects = Objects::default();
        let big: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let a = objects.add(Kind::Blob, b"hello".to_vec());
        let b = objects.add(Kind::Tree, Vec::new());
        let c = objects.add(Kind::Blob, big.clone());
        let spare = dir.path().join("spare");
        let blanks = (
            Blank::create(dir.path(), 0o444).unwrap(),
            Blank::create(dir.path(), 0o444).unwrap(),
        );
        let stem = objects
            .write(dir.path(), &spare, Some(blanks), &Durability::default())
            .unwrap();
        assert!(dir.path().join(format!("{stem}.keep")).exists());
        unkeep(dir.path(), &stem, &spare);
        assert!(!dir.path().join(format!("{stem}.keep")).exists() && spare.exists());
        let loaded = Loaded::open(dir.path(), &stem).unwrap();
        assert_eq!(loaded.find(&a), Some((Kind::Blob, b"hello".to_vec())));
        assert_eq!(loaded.find(&b), Some((Kind::Tree, Vec::new())));
        assert_eq!(loaded.find(&c), Some((Kind::Blob, big)));
        assert_eq!(loaded.find(&object_id(Kind::Blob, b"absent")), None);
        let all: Vec<_> = loaded
            .ids()
            .map(|(i, id)| (id, loaded.at(i).unwrap().0))
            .collect();
        assert_eq!(all.len(), 3, "every object of the pack: {all:?}");
        assert!(all.contains(&(b, Kind::Tree)));
        assert_eq!(loaded.at(3), None);
    }

    #[test]
    fn entry_headers() {
        let mut out = Vec::new();
        entry_header(&mut out, Kind::Blob, 15);
        assert_eq!(out, [0x3f]);
        out.clear();
        entry_header(&mut out, Kind::Commit, 16);
        assert_eq!(out, [0x90, 0x01]);
        out.clear();
        entry_header(&mut out, Kind::Tree, 1000);
        assert_eq!(out, [0xa8, 0x3e]);
    }
}
