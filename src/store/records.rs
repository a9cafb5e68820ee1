//! Host-local records under `.git/loopx/records/`: values this host keeps
//! about its own past (the leases its agents were granted, the `run` turns
//! it stopped or that failed, the git it checked, what a sync last saw of
//! its peers) that are never on the branch and must not expire with the
//! cache. They are appended to one journal (`store::journal`),
//! whose live entries are carried over when it starts over, so setting a
//! record creates no file.

use std::path::PathBuf;

use crate::store::journal::Journal;

/// The records of one repository on this host.
pub struct HostRecords {
    journal: Journal,
}

impl HostRecords {
    pub(in crate::store) fn new(dir: PathBuf) -> Self {
        HostRecords {
            journal: Journal::carrying(dir),
        }
    }

    /// The value last set for `key`, `None` when unset or cleared.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.journal.get(key).filter(|v| !v.is_empty())
    }

    /// The keys of the records under `prefix`.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        self.journal
            .entries()
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| k.starts_with(prefix))
            .collect()
    }

    /// Sets a record; an empty value clears it.
    pub fn set(&self, key: &str, value: &[u8]) {
        self.journal.append(key, value);
    }
}
