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
}

impl Objects {
    /// Adds an object (once per id) and returns its id.
    pub fn add(&mut self, kind: Kind, data: Vec<u8>) -> [u8; 20] {
        let id = object_id(kind, &data);
        if !self.entries.iter().any(|(known, _, _)| *known == id) {
            self.entries.push((id, kind, data));
        }
        id
    }

    /// Writes the objects as `pack-<checksum>.{pack,idx}` into `pack_dir`
    /// (`objects/pack`) and returns the path of the index.
    pub fn write(&self, pack_dir: &Path) -> io::Result<PathBuf> {
        let (pack, idx, checksum) = self.encode()?;
        let name = format!("pack-{}", hex(&checksum));
        put(pack_dir, &format!("{name}.pack"), &pack)?;
        put(pack_dir, &format!("{name}.idx"), &idx)
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

/// Writes `bytes` beside `name` and renames it into place, read-only as git
/// keeps its packs. A file already there has the same name, so the same bytes.
fn put(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let target = dir.join(name);
    // Not ending in `.idx`: a reader listing the directory must not take a
    // half-written index for a pack's.
    let tmp = dir.join(format!(
        "tmp_loopx_{}_{}",
        std::process::id(),
        name.replace('.', "_")
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o444);
    let written = options
        .open(&tmp)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| target)
}

fn sha1(bytes: &[u8]) -> [u8; 20] {
    sha1_smol::Sha1::from(bytes).digest().bytes()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// CRC-32 (IEEE 802.3, reflected), as a pack index records per entry.
fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !bytes.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
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
