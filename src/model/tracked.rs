//! A map of entities that remembers which keys were written, so a
//! transaction encodes and commits only what its mutation touched instead of
//! comparing (and copying) every todo of a large state; and that may hold its
//! entities still encoded, decoding each on first access, so a command that
//! touches one todo of ten thousand decodes one.
//!
//! Invariants: a key is marked dirty by every write ([`Tracked::get_mut`],
//! [`Tracked::insert`], [`Tracked::remove`]) and only by a write; an encoded
//! entry decodes to the value that was encoded (the source vouches for its
//! bytes, see [`Source`]), so laziness never changes what a reader sees.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Index, Range};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An entity with a borrowed summary of the few fields that scans over
/// every entry read (which todos are ready, which runs count against the
/// quota). A summary is taken from a decoded value, or straight from the
/// entity's encoded bytes: a scan of ten thousand entries then decodes none.
pub trait Facts {
    type Of<'a>
    where
        Self: 'a;
    fn facts(&self) -> Self::Of<'_>;
}

/// Encoded entities shared by the entries of a lazily loaded map, and the
/// functions that decode one whole or read its facts. Whoever builds a lazy
/// map must have checked the bytes first: a decode that fails afterwards is
/// a bug, not bad data.
pub struct Source<T: Facts> {
    pub bytes: Arc<[u8]>,
    pub decode: fn(&[u8]) -> Option<T>,
    pub facts: for<'a> fn(&'a [u8]) -> Option<T::Of<'a>>,
}

impl<T: Facts> Clone for Source<T> {
    fn clone(&self) -> Self {
        Source {
            bytes: self.bytes.clone(),
            decode: self.decode,
            facts: self.facts,
        }
    }
}

struct Slot<T> {
    value: OnceLock<Box<T>>,
    /// Where the encoded entity lies in the source, until decoded.
    raw: Option<(u32, u32)>,
}

impl<T: Clone> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Slot {
            value: self.value.clone(),
            raw: self.raw,
        }
    }
}

impl<T> Slot<T> {
    fn new(value: T) -> Self {
        Slot {
            value: OnceLock::from(Box::new(value)),
            raw: None,
        }
    }
}

/// Reads go through [`Tracked::get`], [`Tracked::values`] and friends;
/// writes go through [`Tracked::get_mut`], [`Tracked::insert`] and
/// [`Tracked::remove`], which mark the key dirty.
pub struct Tracked<T: Facts> {
    map: BTreeMap<String, Slot<T>>,
    dirty: BTreeSet<String>,
    source: Option<Source<T>>,
}

impl<T: Facts + Clone> Clone for Tracked<T> {
    fn clone(&self) -> Self {
        Tracked {
            map: self.map.clone(),
            dirty: self.dirty.clone(),
            source: self.source.clone(),
        }
    }
}

impl<T: Facts> Default for Tracked<T> {
    fn default() -> Self {
        Tracked {
            map: BTreeMap::new(),
            dirty: BTreeSet::new(),
            source: None,
        }
    }
}

impl<T: Facts> Tracked<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// A map whose entries stay encoded in `source` until read: `entries`
    /// gives each key (ascending) and the byte range of its entity.
    pub fn lazy(
        source: Source<T>,
        entries: impl IntoIterator<Item = (String, Range<usize>)>,
    ) -> Self {
        let map = entries
            .into_iter()
            .map(|(key, r)| {
                let slot = Slot {
                    value: OnceLock::new(),
                    raw: Some((r.start as u32, (r.end - r.start) as u32)),
                };
                (key, slot)
            })
            .collect();
        Tracked {
            map,
            dirty: BTreeSet::new(),
            source: Some(source),
        }
    }

    fn value<'a>(&'a self, slot: &'a Slot<T>) -> &'a T {
        slot.value.get_or_init(|| {
            let (at, len) = slot.raw.expect("an undecoded entry has its bytes");
            let source = self.source.as_ref().expect("a lazy entry has a source");
            let bytes = &source.bytes[at as usize..(at + len) as usize];
            Box::new((source.decode)(bytes).expect("BUG: a checked source failed to decode"))
        })
    }

    pub fn get(&self, key: &str) -> Option<&T> {
        self.map.get(key).map(|slot| self.value(slot))
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        let slot = self.map.get(key)?;
        self.value(slot);
        if !self.dirty.contains(key) {
            self.dirty.insert(key.to_owned());
        }
        let slot = self.map.get_mut(key)?;
        // The value may change now: its old bytes no longer describe it.
        slot.raw = None;
        slot.value.get_mut().map(|b| &mut **b)
    }

    /// The encoded bytes of `key`'s entity as loaded, if it has not been
    /// written since (so an encoder can copy them instead of re-encoding).
    pub fn encoded(&self, key: &str) -> Option<&[u8]> {
        let (at, len) = self.map.get(key)?.raw?;
        let source = self.source.as_ref()?;
        source.bytes.get(at as usize..(at + len) as usize)
    }

    pub fn insert(&mut self, key: String, value: T) -> Option<T> {
        self.dirty.insert(key.clone());
        let old = self.map.insert(key, Slot::new(value))?;
        self.value(&old);
        old.value.into_inner().map(|b| *b)
    }

    pub fn remove(&mut self, key: &str) -> Option<T> {
        self.dirty.insert(key.to_owned());
        let old = self.map.remove(key)?;
        self.value(&old);
        old.value.into_inner().map(|b| *b)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Keys in ascending order; decodes nothing.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + '_ {
        self.map.keys()
    }

    /// Entries in key order (each decoded on the way).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &T)> + '_ {
        self.map.iter().map(|(k, slot)| (k, self.value(slot)))
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.map.values().map(|slot| self.value(slot))
    }

    fn facts_of<'a>(&'a self, slot: &'a Slot<T>) -> T::Of<'a> {
        if let Some(value) = slot.value.get() {
            return value.facts();
        }
        let (at, len) = slot.raw.expect("an undecoded entry has its bytes");
        let source = self.source.as_ref().expect("a lazy entry has a source");
        let bytes = &source.bytes[at as usize..(at + len) as usize];
        (source.facts)(bytes).expect("BUG: a checked source failed to decode")
    }

    /// The facts of `key`'s entity; decodes nothing.
    pub fn facts(&self, key: &str) -> Option<T::Of<'_>> {
        self.map.get(key).map(|slot| self.facts_of(slot))
    }

    /// The facts of every entity, in key order; decodes nothing.
    pub fn all_facts(&self) -> impl DoubleEndedIterator<Item = T::Of<'_>> + '_ {
        self.map.values().map(|slot| self.facts_of(slot))
    }

    /// Keys written since the last [`Tracked::clean`].
    pub fn dirty(&self) -> &BTreeSet<String> {
        &self.dirty
    }

    /// Forgets which keys were written (after a load, say).
    pub fn clean(&mut self) {
        self.dirty.clear();
    }
}

impl<T: Facts> Index<&str> for Tracked<T> {
    type Output = T;

    fn index(&self, key: &str) -> &T {
        self.get(key).expect("no entry for key")
    }
}

impl<T: Facts> Index<&String> for Tracked<T> {
    type Output = T;

    fn index(&self, key: &String) -> &T {
        &self[key.as_str()]
    }
}

impl<T: Facts> From<BTreeMap<String, T>> for Tracked<T> {
    fn from(map: BTreeMap<String, T>) -> Self {
        Tracked {
            map: map.into_iter().map(|(k, v)| (k, Slot::new(v))).collect(),
            dirty: BTreeSet::new(),
            source: None,
        }
    }
}

impl<T: Facts> FromIterator<(String, T)> for Tracked<T> {
    fn from_iter<I: IntoIterator<Item = (String, T)>>(iter: I) -> Self {
        BTreeMap::from_iter(iter).into()
    }
}

/// Equality is of contents; what was written, and what is still encoded,
/// is bookkeeping.
impl<T: Facts + PartialEq> PartialEq for Tracked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<T: Facts + std::fmt::Debug> std::fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<T: Facts + Serialize> Serialize for Tracked<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de, T: Facts + Deserialize<'de>> Deserialize<'de> for Tracked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BTreeMap::deserialize(d).map(Into::into)
    }
}

impl<'a, T: Facts> IntoIterator for &'a Tracked<T> {
    type Item = (&'a String, &'a T);
    type IntoIter = Box<dyn Iterator<Item = (&'a String, &'a T)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// What the merge and the file diff need of a map of entities, so they work
/// on plain maps (agents) and tracked ones (todos, runs) alike.
pub trait Entities<T> {
    fn entity(&self, key: &str) -> Option<&T>;
    fn entity_keys(&self) -> Box<dyn Iterator<Item = &String> + '_>;
}

impl<T> Entities<T> for BTreeMap<String, T> {
    fn entity(&self, key: &str) -> Option<&T> {
        self.get(key)
    }

    fn entity_keys(&self) -> Box<dyn Iterator<Item = &String> + '_> {
        Box::new(self.keys())
    }
}

impl<T: Facts> Entities<T> for Tracked<T> {
    fn entity(&self, key: &str) -> Option<&T> {
        self.get(key)
    }

    fn entity_keys(&self) -> Box<dyn Iterator<Item = &String> + '_> {
        Box::new(self.keys())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Facts for String {
        type Of<'a> = usize;
        fn facts(&self) -> usize {
            self.len()
        }
    }

    fn decode(b: &[u8]) -> Option<String> {
        std::str::from_utf8(b).ok().map(str::to_owned)
    }

    fn lazy() -> Tracked<String> {
        let bytes: Arc<[u8]> = Arc::from(&b"onetwothree"[..]);
        Tracked::lazy(
            Source {
                bytes,
                decode,
                facts: |b| Some(b.len()),
            },
            [
                ("a".to_owned(), 0..3),
                ("b".to_owned(), 3..6),
                ("c".to_owned(), 6..11),
            ],
        )
    }

    #[test]
    fn lazy_entries_read_like_decoded_ones() {
        let eager: Tracked<String> = [("a", "one"), ("b", "two"), ("c", "three")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let mut l = lazy();
        assert_eq!(l.all_facts().collect::<Vec<_>>(), [3, 3, 5]);
        assert_eq!(l.encoded("c"), Some(&b"three"[..]));
        assert_eq!(l, eager);
        assert_eq!(l["b"], "two");
        assert!(l.dirty().is_empty());
        l.get_mut("c").unwrap().push('!');
        assert_eq!(l.encoded("c"), None, "written entries are re-encoded");
        assert_eq!(
            l.facts("c"),
            Some(6),
            "facts of a written entry are its value's"
        );
        assert_eq!(l.remove("a").as_deref(), Some("one"));
        assert_eq!(l.insert("b".into(), "2".into()).as_deref(), Some("two"));
        let dirty: Vec<&str> = l.dirty().iter().map(String::as_str).collect();
        assert_eq!(dirty, ["a", "b", "c"]);
        let all: Vec<(&str, &str)> = l.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(all, [("b", "2"), ("c", "three!")]);
        assert_eq!(l.clone(), l);
    }
}
