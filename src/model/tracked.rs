//! A map of entities that remembers which keys were written, so a
//! transaction encodes and commits only what its mutation touched instead of
//! comparing (and copying) every todo of a large state.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Reads go through `Deref` to the map; writes go through [`Tracked::get_mut`],
/// [`Tracked::insert`] and [`Tracked::remove`], which mark the key dirty.
#[derive(Clone, Debug)]
pub struct Tracked<T> {
    map: BTreeMap<String, T>,
    dirty: BTreeSet<String>,
}

impl<T> Default for Tracked<T> {
    fn default() -> Self {
        Tracked {
            map: BTreeMap::new(),
            dirty: BTreeSet::new(),
        }
    }
}

impl<T> Tracked<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        let value = self.map.get_mut(key)?;
        if !self.dirty.contains(key) {
            self.dirty.insert(key.to_owned());
        }
        Some(value)
    }

    pub fn insert(&mut self, key: String, value: T) -> Option<T> {
        self.dirty.insert(key.clone());
        self.map.insert(key, value)
    }

    pub fn remove(&mut self, key: &str) -> Option<T> {
        self.dirty.insert(key.to_owned());
        self.map.remove(key)
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

impl<T> Deref for Tracked<T> {
    type Target = BTreeMap<String, T>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl<T> From<BTreeMap<String, T>> for Tracked<T> {
    fn from(map: BTreeMap<String, T>) -> Self {
        Tracked {
            map,
            dirty: BTreeSet::new(),
        }
    }
}

impl<T> FromIterator<(String, T)> for Tracked<T> {
    fn from_iter<I: IntoIterator<Item = (String, T)>>(iter: I) -> Self {
        BTreeMap::from_iter(iter).into()
    }
}

/// Equality is of contents; what was written is bookkeeping.
impl<T: PartialEq> PartialEq for Tracked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.map == other.map
    }
}

impl<T: Serialize> Serialize for Tracked<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.map.serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tracked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BTreeMap::deserialize(d).map(Into::into)
    }
}

impl<'a, T> IntoIterator for &'a Tracked<T> {
    type Item = (&'a String, &'a T);
    type IntoIter = std::collections::btree_map::Iter<'a, String, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.map.iter()
    }
}
