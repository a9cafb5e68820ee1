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
    pub bytes: Arc<Vec<u8>>,
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

/// An entry as loaded: its key is a range of the source too, so loading
/// ten thousand entries allocates one vector, not ten thousand keys.
struct Loaded<T> {
    key: (u32, u32),
    slot: Slot<T>,
}

/// Reads go through [`Tracked::get`], [`Tracked::values`] and friends;
/// writes go through [`Tracked::get_mut`], [`Tracked::insert`] and
/// [`Tracked::remove`], which mark the key dirty.
///
/// Entries live in one of two places: `loaded` (sorted by key, as the source
/// listed them) or `added` (keys that were not loaded); no key is in both.
/// `loaded` is never written after the load: every copy of the map shares
/// it, and a write to a loaded key goes to `over`. A copy costs what was
/// written, not what was loaded, and maps copied from one load tell what
/// differs between them without comparing every entry
/// ([`Tracked::written_since_one_load`]).
pub struct Tracked<T: Facts> {
    loaded: Arc<Vec<Loaded<T>>>,
    /// The loaded positions written since the load: the new entry, or
    /// `None` once removed.
    over: BTreeMap<usize, Option<Slot<T>>>,
    /// How many of `over` are removals.
    gone: usize,
    added: BTreeMap<String, Slot<T>>,
    dirty: BTreeSet<String>,
    source: Option<Source<T>>,
}

impl<T: Facts + Clone> Clone for Tracked<T> {
    fn clone(&self) -> Self {
        Tracked {
            loaded: self.loaded.clone(),
            over: self.over.clone(),
            gone: self.gone,
            added: self.added.clone(),
            dirty: self.dirty.clone(),
            source: self.source.clone(),
        }
    }
}

impl<T: Facts> Default for Tracked<T> {
    fn default() -> Self {
        Tracked {
            loaded: Arc::default(),
            over: BTreeMap::new(),
            gone: 0,
            added: BTreeMap::new(),
            dirty: BTreeSet::new(),
            source: None,
        }
    }
}

/// Two iterators of (key, value) in ascending key order, and no key in
/// both, as one in ascending key order.
fn in_key_order<K: Ord, V>(
    a: impl Iterator<Item = (K, V)>,
    b: impl Iterator<Item = (K, V)>,
) -> impl Iterator<Item = (K, V)> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if x.0 < y.0 => a.next(),
        (Some(_), None) => a.next(),
        _ => b.next(),
    })
}

fn span(r: Range<usize>) -> (u32, u32) {
    let at = u32::try_from(r.start).expect("a source is under 4 GiB");
    let len = u32::try_from(r.end - r.start).expect("a source is under 4 GiB");
    (at, len)
}

impl<T: Facts> Tracked<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// A map whose keys and entries stay encoded in `source` until read:
    /// `entries` gives the byte ranges of each key (strictly ascending,
    /// UTF-8) and of its entity.
    pub fn lazy(
        source: Source<T>,
        entries: impl IntoIterator<Item = (Range<usize>, Range<usize>)>,
    ) -> Self {
        let loaded: Vec<Loaded<T>> = entries
            .into_iter()
            .map(|(key, value)| Loaded {
                key: span(key),
                slot: Slot {
                    value: OnceLock::new(),
                    raw: Some(span(value)),
                },
            })
            .collect();
        let map = Tracked {
            loaded: Arc::new(loaded),
            source: Some(source),
            ..Tracked::default()
        };
        debug_assert!(map
            .loaded
            .windows(2)
            .all(|w| map.bytes(w[0].key) < map.bytes(w[1].key)));
        map
    }

    fn bytes(&self, (at, len): (u32, u32)) -> &[u8] {
        let source = self.source.as_ref().expect("a loaded entry has a source");
        &source.bytes[at as usize..(at + len) as usize]
    }

    fn key(&self, i: usize) -> &str {
        std::str::from_utf8(self.bytes(self.loaded[i].key))
            .expect("BUG: a checked source holds UTF-8 keys")
    }

    /// Where `key` is (or was) among the loaded entries.
    fn position(&self, key: &str) -> Option<usize> {
        // Bytes compare as their UTF-8 strings do, without checking them.
        self.loaded
            .binary_search_by(|e| self.bytes(e.key).cmp(key.as_bytes()))
            .ok()
    }

    /// The entry at a loaded position as it is now (`None`: removed).
    fn at(&self, i: usize) -> Option<&Slot<T>> {
        match self.over.get(&i) {
            Some(over) => over.as_ref(),
            None => Some(&self.loaded[i].slot),
        }
    }

    fn slot(&self, key: &str) -> Option<&Slot<T>> {
        match self.position(key) {
            Some(i) => self.at(i),
            None => self.added.get(key),
        }
    }

    fn value<'a>(&'a self, slot: &'a Slot<T>) -> &'a T {
        slot.value.get_or_init(|| {
            let raw = slot.raw.expect("an undecoded entry has its bytes");
            let source = self.source.as_ref().expect("a lazy entry has a source");
            Box::new(
                (source.decode)(self.bytes(raw)).expect("BUG: a checked source failed to decode"),
            )
        })
    }

    /// The loaded positions still present, with their entries as they are
    /// now, in key order: one walk over `loaded` beside one over `over`.
    fn loaded_now(&self) -> impl Iterator<Item = (usize, &Slot<T>)> + '_ {
        let mut over = self.over.iter().peekable();
        self.loaded.iter().enumerate().filter_map(move |(i, e)| {
            match over.next_if(|(j, _)| **j == i) {
                Some((_, now)) => now.as_ref().map(|slot| (i, slot)),
                None => Some((i, &e.slot)),
            }
        })
    }

    /// Every entry in key order: a merge of the loaded and the added ones.
    fn entries(&self) -> impl Iterator<Item = (&str, &Slot<T>)> + '_ {
        let loaded = self.loaded_now().map(|(i, slot)| (self.key(i), slot));
        let added = self.added.iter().map(|(k, slot)| (k.as_str(), slot));
        in_key_order(loaded, added)
    }

    pub fn get(&self, key: &str) -> Option<&T> {
        self.slot(key).map(|slot| self.value(slot))
    }

    /// The encoded bytes of `key`'s entity as loaded, if it has not been
    /// written since (so an encoder can copy them instead of re-encoding).
    pub fn encoded(&self, key: &str) -> Option<&[u8]> {
        let raw = self.slot(key)?.raw?;
        Some(self.bytes(raw))
    }

    /// Takes the value out of a slot that is leaving the map.
    fn take(&self, slot: Slot<T>) -> T {
        self.value(&slot);
        *slot.value.into_inner().expect("decoded just now")
    }
}

impl<T: Facts + Clone> Tracked<T> {
    pub fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        match self.position(key) {
            Some(i) => {
                if !self.over.contains_key(&i) {
                    // The loaded entry is shared: the write goes to a copy.
                    let value = self.value(&self.loaded[i].slot).clone();
                    self.over.insert(i, Some(Slot::new(value)));
                }
                self.over.get(&i)?.as_ref()?;
            }
            None => {
                self.added.get(key)?;
            }
        }
        if !self.dirty.contains(key) {
            self.dirty.insert(key.to_owned());
        }
        let slot = match self.position(key) {
            Some(i) => self.over.get_mut(&i)?.as_mut()?,
            None => self.added.get_mut(key)?,
        };
        // Written and added entries were made from values (`Slot::new`),
        // so this one is decoded; it may change now, and has no bytes.
        slot.raw = None;
        slot.value.get_mut().map(|b| &mut **b)
    }

    /// A loaded position's entry as a value of its own, leaving the shared
    /// load as it is.
    fn own(&self, i: usize, was: Option<Option<Slot<T>>>) -> Option<T> {
        match was {
            Some(Some(slot)) => Some(self.take(slot)),
            Some(None) => None,
            None => Some(self.value(&self.loaded[i].slot).clone()),
        }
    }

    pub fn insert(&mut self, key: String, value: T) -> Option<T> {
        self.dirty.insert(key.clone());
        let Some(i) = self.position(&key) else {
            let old = self.added.insert(key, Slot::new(value))?;
            return Some(self.take(old));
        };
        let was = self.over.insert(i, Some(Slot::new(value)));
        if matches!(was, Some(None)) {
            self.gone -= 1;
        }
        self.own(i, was)
    }

    pub fn remove(&mut self, key: &str) -> Option<T> {
        self.dirty.insert(key.to_owned());
        let Some(i) = self.position(key) else {
            let old = self.added.remove(key)?;
            return Some(self.take(old));
        };
        let was = self.over.insert(i, None);
        if !matches!(was, Some(None)) {
            self.gone += 1;
        }
        self.own(i, was)
    }
}

impl<T: Facts> Tracked<T> {
    pub fn contains_key(&self, key: &str) -> bool {
        self.slot(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.loaded.len() - self.gone + self.added.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys in ascending order; decodes nothing.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.entries().map(|(k, _)| k)
    }

    /// Entries in key order (each decoded on the way).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> + '_ {
        self.entries().map(|(k, slot)| (k, self.value(slot)))
    }

    pub fn values(&self) -> impl Iterator<Item = &T> + '_ {
        self.entries().map(|(_, slot)| self.value(slot))
    }

    fn facts_of<'a>(&'a self, slot: &'a Slot<T>) -> T::Of<'a> {
        if let Some(value) = slot.value.get() {
            return value.facts();
        }
        let raw = slot.raw.expect("an undecoded entry has its bytes");
        let source = self.source.as_ref().expect("a lazy entry has a source");
        (source.facts)(self.bytes(raw)).expect("BUG: a checked source failed to decode")
    }

    /// The facts of `key`'s entity; decodes nothing.
    pub fn facts(&self, key: &str) -> Option<T::Of<'_>> {
        self.slot(key).map(|slot| self.facts_of(slot))
    }

    /// The facts of every entity, in key order; decodes nothing.
    pub fn all_facts(&self) -> impl Iterator<Item = T::Of<'_>> + '_ {
        self.entries().map(|(_, slot)| self.facts_of(slot))
    }

    /// The entries not as loaded — inserted or changed since — in key order:
    /// the ones a check of the whole must look at, since what was loaded
    /// was checked before it was cached.
    pub fn written(&self) -> impl Iterator<Item = (&str, &T)> + '_ {
        let loaded = self
            .over
            .iter()
            .filter_map(|(&i, now)| now.as_ref().map(|slot| (self.key(i), slot)));
        let added = self
            .added
            .iter()
            .filter(|(_, slot)| slot.raw.is_none())
            .map(|(k, slot)| (k.as_str(), slot));
        in_key_order(loaded, added).map(|(k, slot)| (k, self.value(slot)))
    }

    /// Every key in order with its encoded bytes as loaded (`None` once
    /// written); decodes nothing.
    pub fn raw_entries(&self) -> impl Iterator<Item = (&str, Option<&[u8]>)> + '_ {
        self.raw_entries_by_bytes().map(|(k, raw)| {
            (
                std::str::from_utf8(k).expect("BUG: a checked source holds UTF-8 keys"),
                raw,
            )
        })
    }

    /// [`Tracked::raw_entries`] with each key as its bytes: for a walk
    /// that compares keys (as their strings compare) over many entries,
    /// without checking each one's UTF-8.
    pub fn raw_entries_by_bytes(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
        let raw = |slot: &Slot<T>| slot.raw.map(|raw| self.bytes(raw));
        let loaded = self
            .loaded_now()
            .map(move |(i, slot)| (self.bytes(self.loaded[i].key), raw(slot)));
        let added = self
            .added
            .iter()
            .map(move |(k, slot)| (k.as_bytes(), raw(slot)));
        in_key_order(loaded, added)
    }

    /// The keys that may differ among `maps`, when all of them are copies
    /// of one load (else `None`: compare every entry): every key one of
    /// them wrote or removed since, or added (so perhaps a key that all
    /// of them removed). What none of them touched is still the shared
    /// entry as loaded, the same in all.
    pub fn written_since_one_load(maps: &[&Tracked<T>]) -> Option<Vec<String>> {
        let first = maps.first()?;
        if first.loaded.is_empty() || !maps.iter().all(|m| Arc::ptr_eq(&m.loaded, &first.loaded)) {
            return None;
        }
        let positions: BTreeSet<usize> = maps.iter().flat_map(|m| m.over.keys().copied()).collect();
        let mut keys: Vec<String> = positions
            .into_iter()
            .map(|i| first.key(i).to_owned())
            .chain(maps.iter().flat_map(|m| m.added.keys().cloned()))
            .collect();
        keys.sort();
        keys.dedup();
        Some(keys)
    }

    /// Whether `key` was written since the load.
    pub fn is_dirty(&self, key: &str) -> bool {
        self.dirty.contains(key)
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
            added: map.into_iter().map(|(k, v)| (k, Slot::new(v))).collect(),
            ..Tracked::default()
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
    type Item = (&'a str, &'a T);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a T)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// What the merge and the file diff need of a map of entities, so they work
/// on plain maps (agents) and tracked ones (todos, runs) alike.
pub trait Entities<T> {
    fn entity(&self, key: &str) -> Option<&T>;
    fn entity_keys(&self) -> Box<dyn Iterator<Item = &str> + '_>;
    /// The entity's encoded bytes as loaded, where the map keeps them.
    fn entity_raw(&self, _key: &str) -> Option<&[u8]> {
        None
    }
}

/// Whether `key` is the same in `a` and `b` (absent from both counts): by
/// their encoded bytes when both keep them, which decodes nothing, else by
/// value. The encoding is a function of the value, so equal bytes are
/// equal values.
pub fn same<T: PartialEq>(
    a: Option<&dyn Entities<T>>,
    b: Option<&dyn Entities<T>>,
    key: &str,
) -> bool {
    let raws = (
        a.and_then(|m| m.entity_raw(key)),
        b.and_then(|m| m.entity_raw(key)),
    );
    if let (Some(x), Some(y)) = raws {
        if x == y {
            return true;
        }
    }
    a.and_then(|a| a.entity(key)) == b.and_then(|b| b.entity(key))
}

impl<T> Entities<T> for BTreeMap<String, T> {
    fn entity(&self, key: &str) -> Option<&T> {
        self.get(key)
    }

    fn entity_keys(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        Box::new(self.keys().map(String::as_str))
    }
}

impl<T: Facts> Entities<T> for Tracked<T> {
    fn entity(&self, key: &str) -> Option<&T> {
        self.get(key)
    }

    fn entity_keys(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        Box::new(self.keys())
    }

    fn entity_raw(&self, key: &str) -> Option<&[u8]> {
        self.encoded(key)
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
        // Keys "a", "c", "e"; values "one", "two", "three".
        let bytes = Arc::new(b"aceonetwothree".to_vec());
        Tracked::lazy(
            Source {
                bytes,
                decode,
                facts: |b| Some(b.len()),
            },
            [(0..1, 3..6), (1..2, 6..9), (2..3, 9..14)],
        )
    }

    fn pairs(t: &Tracked<String>) -> Vec<(&str, &str)> {
        t.iter().map(|(k, v)| (k, v.as_str())).collect()
    }

    #[test]
    fn lazy_entries_read_like_decoded_ones() {
        let eager: Tracked<String> = [("a", "one"), ("c", "two"), ("e", "three")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let mut l = lazy();
        assert_eq!(l.all_facts().collect::<Vec<_>>(), [3, 3, 5]);
        assert_eq!(l.encoded("e"), Some(&b"three"[..]));
        assert_eq!(l, eager);
        assert_eq!(l["c"], "two");
        assert!(l.dirty().is_empty());
        l.get_mut("e").unwrap().push('!');
        assert_eq!(l.encoded("e"), None, "written entries are re-encoded");
        assert_eq!(
            l.facts("e"),
            Some(6),
            "a written entry's facts are its value's"
        );
        assert_eq!(l.remove("a").as_deref(), Some("one"));
        assert_eq!(l.remove("a"), None);
        assert!(!l.contains_key("a"));
        assert_eq!(l.insert("c".into(), "2".into()).as_deref(), Some("two"));
        let dirty: Vec<&str> = l.dirty().iter().map(String::as_str).collect();
        assert_eq!(dirty, ["a", "c", "e"]);
        assert_eq!(pairs(&l), [("c", "2"), ("e", "three!")]);
        assert_eq!(l.len(), 2);
        assert_eq!(l.clone(), l);
    }

    #[test]
    fn added_keys_merge_in_order_with_loaded_ones() {
        let mut l = lazy();
        assert_eq!(l.insert("d".into(), "new".into()), None);
        assert_eq!(l.insert("0".into(), "first".into()), None);
        assert_eq!(l.insert("z".into(), "last".into()), None);
        l.remove("c");
        assert_eq!(
            l.insert("c".into(), "back".into()),
            None,
            "a removed key comes back"
        );
        assert_eq!(
            pairs(&l),
            [
                ("0", "first"),
                ("a", "one"),
                ("c", "back"),
                ("d", "new"),
                ("e", "three"),
                ("z", "last")
            ]
        );
        assert_eq!(l.keys().count(), l.len());
        assert_eq!(l.remove("d").as_deref(), Some("new"));
        assert_eq!(l.get_mut("z").map(|v| v.len()), Some(4));
        assert_eq!(l.len(), 5);
        assert_eq!(l.all_facts().collect::<Vec<_>>(), [5, 3, 4, 5, 4]);
    }

    fn apply(l: &mut Tracked<String>, op: &Op) {
        let key = |k: u8| ["0", "a", "b", "c", "d", "e", "f", "z"][k as usize].to_owned();
        match op {
            Op::Insert(k, v) => {
                l.insert(key(*k), v.clone());
            }
            Op::Remove(k) => {
                l.remove(&key(*k));
            }
            Op::Append(k) => {
                if let Some(v) = l.get_mut(&key(*k)) {
                    v.push('!');
                }
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, String),
        Remove(u8),
        Append(u8),
    }

    use proptest::prelude::*;

    proptest! {
        /// Whatever is written, a loaded map reads like a plain sorted map.
        #[test]
        fn a_loaded_map_behaves_like_a_btree_map(ops in proptest::collection::vec(
            prop_oneof![
                (0u8..8, "[a-z]{0,3}").prop_map(|(k, v)| Op::Insert(k, v)),
                (0u8..8).prop_map(Op::Remove),
                (0u8..8).prop_map(Op::Append),
            ],
            0..24,
        )) {
            let key = |k: u8| ["0", "a", "b", "c", "d", "e", "f", "z"][k as usize].to_owned();
            let mut l = lazy();
            let mut model: BTreeMap<String, String> =
                [("a", "one"), ("c", "two"), ("e", "three")]
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        prop_assert_eq!(l.insert(key(k), v.clone()), model.insert(key(k), v));
                    }
                    Op::Remove(k) => prop_assert_eq!(l.remove(&key(k)), model.remove(&key(k))),
                    Op::Append(k) => {
                        if let Some(v) = l.get_mut(&key(k)) {
                            v.push('!');
                        }
                        if let Some(v) = model.get_mut(&key(k)) {
                            v.push('!');
                        }
                    }
                }
                let want: Vec<(&str, &str)> =
                    model.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                prop_assert_eq!(pairs(&l), want);
                prop_assert_eq!(l.len(), model.len());
                for k in 0..8 {
                    prop_assert_eq!(l.contains_key(&key(k)), model.contains_key(&key(k)));
                    prop_assert_eq!(l.facts(&key(k)), model.get(&key(k)).map(String::len));
                }
            }
        }

        /// Copies of one load, each written its own way: the keys they may
        /// differ at, told from what each wrote, are the keys a walk over
        /// every entry finds not the same as loaded in all of them (and
        /// perhaps keys that all of them removed).
        #[test]
        fn copies_of_one_load_tell_where_they_differ(
            ops in proptest::collection::vec((0usize..3, 0u8..8, "[a-z]{0,2}", 0u8..3), 0..12),
        ) {
            let l = lazy();
            let mut copies = [l.clone(), l.clone(), l];
            for (who, k, v, kind) in ops {
                let op = match kind {
                    0 => Op::Insert(k, v),
                    1 => Op::Remove(k),
                    _ => Op::Append(k),
                };
                apply(&mut copies[who], &op);
            }
            let mut seen: BTreeMap<String, Vec<Option<Vec<u8>>>> = BTreeMap::new();
            for c in &copies {
                for (k, raw) in c.raw_entries() {
                    seen.entry(k.to_owned()).or_default().push(raw.map(<[u8]>::to_vec));
                }
            }
            let walked: Vec<String> = seen
                .into_iter()
                .filter(|(_, raws)| {
                    !(raws.len() == 3 && raws[0].is_some() && raws.iter().all(|r| *r == raws[0]))
                })
                .map(|(k, _)| k)
                .collect();
            let refs: Vec<&Tracked<String>> = copies.iter().collect();
            // Besides, it may name a key all of them removed.
            let told = Tracked::written_since_one_load(&refs).map(|keys| {
                keys.into_iter()
                    .filter(|k| copies.iter().any(|c| c.contains_key(k)))
                    .collect::<Vec<_>>()
            });
            prop_assert_eq!(told, Some(walked));
            prop_assert_eq!(Tracked::written_since_one_load(&[&copies[0], &lazy()]), None);
        }
    }
}
