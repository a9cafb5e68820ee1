//! Syncing what a writeback writes to the disk, as the repository's git
//! config asks git to sync its own files.
//!
//! git decides per component (`core.fsync`): loose objects, packs and their
//! indexes, references. Its default syncs packs and their indexes, and
//! neither loose objects nor refs; a list such as `committed`, `all`, or
//! `reference,-pack` changes that, and the legacy `core.fsyncObjectFiles`
//! adds loose objects when `core.fsync` is unset. A writeback writes loose
//! objects and moves a ref, as `git commit` does, so by default it syncs
//! what `git commit` syncs: nothing. `core.fsync=committed` syncs both, the
//! objects before the ref names them (its cost is in `docs/performance.md`).
//!
//! `core.fsyncMethod` says how: `fsync` (the default) flushes the file and
//! the disk's cache; `writeout-only` only asks the kernel to write the pages
//! out (we use `fdatasync`, a little stronger, for want of
//! `sync_file_range`); `batch` is git's way of flushing many loose objects
//! at once, and is `fsync` here (a writeback writes a handful of files).
//!
//! A synced file is synced before it is named, and the directory it is
//! named in after, so that a crash leaves either no file or a whole one.

use std::fs::File;
use std::io;
use std::path::Path;

/// What to sync, read from git config (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durability {
    pub loose_objects: bool,
    pub packs: bool,
    pub refs: bool,
    pub method: Method,
}

/// `core.fsyncMethod`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Fsync,
    WriteoutOnly,
    Batch,
}

impl Default for Durability {
    /// git's default: packs and their indexes.
    fn default() -> Self {
        Durability {
            loose_objects: false,
            packs: true,
            refs: false,
            method: Method::Fsync,
        }
    }
}

impl Durability {
    /// Nothing synced (`core.fsync=none`).
    pub const NONE: Durability = Durability {
        loose_objects: false,
        packs: false,
        refs: false,
        method: Method::Fsync,
    };

    /// From `core.fsync`, `core.fsyncObjectFiles` and `core.fsyncMethod`,
    /// as git reads them: the list starts from the default, `-x` takes a
    /// component out, `none` starts from nothing. Unknown names are ignored
    /// (git warns and ignores them too).
    pub fn from_config(
        fsync: Option<&str>,
        object_files: Option<bool>,
        method: Option<&str>,
    ) -> Self {
        let mut d = Durability::default();
        match fsync {
            Some(list) => {
                let (mut plus, mut minus) = (Durability::NONE, Durability::NONE);
                for token in list.split(',').map(str::trim) {
                    let (set, name) = match token.strip_prefix('-') {
                        Some(name) => (&mut minus, name),
                        None => (&mut plus, token),
                    };
                    match name {
                        "none" => {
                            d = Durability::NONE;
                            plus = Durability::NONE;
                            minus = Durability::NONE;
                        }
                        "loose-object" => set.loose_objects = true,
                        "pack" | "pack-metadata" | "derived-metadata" => set.packs = true,
                        "objects" => (set.loose_objects, set.packs) = (true, true),
                        "reference" => set.refs = true,
                        "committed" | "added" | "all" => {
                            (set.loose_objects, set.packs, set.refs) = (true, true, true)
                        }
                        _ => {}
                    }
                }
                d.loose_objects = (d.loose_objects && !minus.loose_objects) || plus.loose_objects;
                d.packs = (d.packs && !minus.packs) || plus.packs;
                d.refs = (d.refs && !minus.refs) || plus.refs;
            }
            None => d.loose_objects = object_files.unwrap_or(false),
        }
        d.method = match method {
            Some("writeout-only") => Method::WriteoutOnly,
            Some("batch") => Method::Batch,
            _ => Method::Fsync,
        };
        d
    }

    /// Syncs `file` (named `path`) when `wanted`. Each sync is logged at
    /// trace level under the target `loopx::fsync` (`LOOPX_LOG`), which is
    /// how the tests see them.
    pub fn sync(&self, wanted: bool, file: &File, path: &Path) -> io::Result<()> {
        if !wanted {
            return Ok(());
        }
        tracing::trace!(target: "loopx::fsync", "sync {}", path.display());
        match self.method {
            Method::WriteoutOnly => file.sync_data(),
            Method::Fsync | Method::Batch => file.sync_all(),
        }
    }

    /// Syncs the file at `path` when `wanted`.
    pub fn sync_path(&self, wanted: bool, path: &Path) -> io::Result<()> {
        if !wanted {
            return Ok(());
        }
        self.sync(true, &File::open(path)?, path)
    }

    /// Syncs the directory holding `path` (a name just given) when `wanted`.
    pub fn sync_parent(&self, wanted: bool, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(dir) if wanted => self.sync(true, &File::open(dir)?, dir),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &str) -> (bool, bool, bool) {
        let d = Durability::from_config(Some(list), None, None);
        (d.loose_objects, d.packs, d.refs)
    }

    #[test]
    fn core_fsync_is_read_as_git_reads_it() {
        // Unset: git's default, packs only (a writeback writes none).
        assert_eq!(
            Durability::from_config(None, None, None),
            Durability::default()
        );
        assert_eq!(parse("pack"), (false, true, false));
        let d = Durability::from_config(None, Some(true), Some("batch"));
        assert_eq!((d.loose_objects, d.packs, d.refs), (true, true, false));
        assert_eq!(d.method, Method::Batch);
        assert_eq!(parse("none"), (false, false, false));
        assert_eq!(parse("all"), (true, true, true));
        assert_eq!(parse("committed"), (true, true, true));
        assert_eq!(parse("reference"), (false, true, true));
        assert_eq!(parse("none,reference"), (false, false, true));
        // As in git, a component named both ways stays in.
        assert_eq!(parse("objects,-pack"), (true, true, false));
        assert_eq!(parse("-pack,-pack-metadata"), (false, false, false));
        assert_eq!(parse("loose-object, reference"), (true, true, true));
        // core.fsyncObjectFiles is ignored once core.fsync is set.
        let d = Durability::from_config(Some("none"), Some(true), Some("writeout-only"));
        assert_eq!((d.loose_objects, d.method), (false, Method::WriteoutOnly));
    }
}
