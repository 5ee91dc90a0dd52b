//! [`Map`]: a JSON object's members in the order they were written (R3).

use std::hash::BuildHasher;

use ecow::EcoString;
use hashbrown::HashTable;
use thin_vec::ThinVec;

use super::Value;

/// A member's key: up to 15 bytes held inside the member itself, longer
/// ones on the heap. A million short keys would otherwise be a million
/// allocations of 16 to 32 bytes each.
pub(crate) type Key = EcoString;

/// Up to this many members an object is searched in order; past it, a
/// hash index over the members is kept beside them. Most objects in a log
/// are small, and a table for each would cost more than its members.
const INDEXED_FROM: usize = 9;

/// A JSON object: string keys in the order they were first written, each
/// once (a repeated key keeps its first position and its last value, as
/// serde_json's ordered map did).
///
/// The members are one allocation behind one pointer, which holds their
/// count and capacity too (a `ThinVec`: an object costs one allocation,
/// and an empty one none), each key of up to 15 bytes held inline in its
/// member; an object of more than eight also
/// keeps a hash index of them (4 bytes a slot), seeded per process
/// (foldhash), so keys chosen by an adversary cannot be made to collide
/// ahead of time.
///
/// ```
/// use agent_core::json::{Map, Value};
/// let mut map = Map::new();
/// map.insert("b".into(), Value::from(1));
/// map.insert("a".into(), Value::from(2));
/// assert_eq!(map.keys().collect::<Vec<_>>(), ["b", "a"]);
/// ```
#[derive(Clone, Default)]
pub struct Map(Members);

#[derive(Clone, Default)]
struct Members {
    entries: ThinVec<(Key, Value)>,
    /// Only past [`INDEXED_FROM`] members (and below `u32::MAX`).
    index: Option<Box<Index>>,
}

/// Positions in `entries`, hashed by key: `u32`, half the table a
/// `usize` would take.
#[derive(Clone, Default)]
struct Index {
    table: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl Members {
    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => {
                let entries = &self.entries;
                let hash = index.hasher.hash_one(key);
                let found = index.table.find(hash, |&i| entries[i as usize].0 == key);
                found.map(|&i| i as usize)
            }
            None => self.entries.iter().position(|(k, _)| k == key),
        }
    }

    fn reindex(&mut self) {
        if self.entries.len() < INDEXED_FROM || u32::try_from(self.entries.len()).is_err() {
            self.index = None;
            return;
        }
        let mut index = Box::new(Index {
            table: HashTable::with_capacity(self.entries.len()),
            hasher: foldhash::fast::RandomState::default(),
        });
        for at in 0..self.entries.len() {
            if !index.add(&self.entries, at) {
                self.index = None;
                return;
            }
        }
        self.index = Some(index);
    }

    fn push(&mut self, key: Key, value: Value) -> usize {
        let at = self.entries.len();
        self.entries.push((key, value));
        let indexed = match &mut self.index {
            Some(index) => index.add(&self.entries, at),
            None if self.entries.len() >= INDEXED_FROM => {
                self.reindex();
                true
            }
            None => true,
        };
        if !indexed {
            // Past `u32::MAX` members: searched in order from here.
            self.index = None;
        }
        at
    }
}

impl Index {
    /// Takes `entries[at]` out of the table.
    fn forget(&mut self, entries: &[(Key, Value)], at: usize) {
        let hash = self.hasher.hash_one(entries[at].0.as_str());
        if let Ok(slot) = self.table.find_entry(hash, |&j| j as usize == at) {
            slot.remove();
        }
    }

    /// `entries[from]` will be at `to` (a smaller position, so it fits):
    /// its slot says so.
    fn relocate(&mut self, entries: &[(Key, Value)], from: usize, to: u32) {
        let hash = self.hasher.hash_one(entries[from].0.as_str());
        if let Some(slot) = self.table.find_mut(hash, |&j| j as usize == from) {
            *slot = to;
        }
    }

    /// Indexes `entries[at]`, a key not yet in the table; false when `at`
    /// is past what a slot holds.
    fn add(&mut self, entries: &[(Key, Value)], at: usize) -> bool {
        let Ok(slot) = u32::try_from(at) else {
            return false;
        };
        let hasher = &self.hasher;
        let hash = hasher.hash_one(entries[at].0.as_str());
        self.table.insert_unique(hash, slot, |&j| {
            hasher.hash_one(entries[j as usize].0.as_str())
        });
        true
    }
}

impl Map {
    /// An empty object.
    pub fn new() -> Map {
        Map::default()
    }

    /// An empty object with room for `capacity` members.
    pub fn with_capacity(capacity: usize) -> Map {
        let mut map = Map::new();
        map.0.entries.reserve_exact(capacity);
        map
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.0.entries.len()
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.0.entries.is_empty()
    }

    /// The value at `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.position(key).map(|i| &self.0.entries[i].1)
    }

    /// The value at `key`, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let i = self.0.position(key)?;
        Some(&mut self.0.entries[i].1)
    }

    /// True when `key` is a member.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.position(key).is_some()
    }

    /// Sets `key` to `value`: a new key goes last, an existing one keeps
    /// its place. Returns the value it replaced.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.0.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.0.entries[i].1, value)),
            None => {
                self.0.push(Key::from(key), value);
                None
            }
        }
    }

    /// [`Map::insert`] for a key the reader already holds as a [`Key`].
    /// True when the key was there (its value is replaced).
    pub(crate) fn insert_key(&mut self, key: Key, value: Value) -> bool {
        match self.0.position(&key) {
            Some(i) => {
                self.0.entries[i].1 = value;
                true
            }
            None => {
                self.0.push(key, value);
                false
            }
        }
    }

    /// Removes `key` as serde_json's ordered map did: the last member
    /// takes its place ([`swap_remove`](Self::swap_remove)), so code moved
    /// from serde_json writes the same bytes. Returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.swap_remove(key)
    }

    /// Removes `key`; the last member moves into its place. Constant time.
    pub fn swap_remove(&mut self, key: &str) -> Option<Value> {
        let i = self.0.position(key)?;
        let last = self.0.entries.len() - 1;
        if let Some(index) = &mut self.0.index {
            index.forget(&self.0.entries, i);
            // An index exists only below `u32::MAX` members.
            if let (true, Ok(to)) = (i != last, u32::try_from(i)) {
                index.relocate(&self.0.entries, last, to);
            }
        }
        let (_, value) = self.0.entries.swap_remove(i);
        if self.0.entries.len() < INDEXED_FROM {
            self.0.index = None;
        }
        Some(value)
    }

    /// Removes `key`, keeping the order of the others (linear in the
    /// members after it).
    pub fn shift_remove(&mut self, key: &str) -> Option<Value> {
        let i = self.0.position(key)?;
        if let Some(index) = &mut self.0.index {
            index.forget(&self.0.entries, i);
            for position in index.table.iter_mut() {
                if *position as usize > i {
                    *position -= 1;
                }
            }
        }
        let (_, value) = self.0.entries.remove(i);
        if self.0.entries.len() < INDEXED_FROM {
            self.0.index = None;
        }
        Some(value)
    }

    /// The member at `key`, present or not, to fill in when missing (as
    /// serde_json's `entry(…).or_insert(…)`).
    pub fn entry(&mut self, key: impl Into<String>) -> Entry<'_> {
        Entry {
            map: self,
            key: key.into(),
        }
    }

    /// Keeps the members for which `keep` is true, in their order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut Value) -> bool) {
        let before = self.0.entries.len();
        self.0.entries.retain_mut(|(key, value)| keep(key, value));
        if self.0.entries.len() != before {
            self.0.reindex();
        }
    }

    /// Splits the members in two, each side in order: those for which
    /// `pred` is true, and the rest. Keys move; none is copied.
    pub fn partition(self, mut pred: impl FnMut(&str, &Value) -> bool) -> (Map, Map) {
        let (mut yes, mut no) = (Map::new(), Map::new());
        for (key, value) in self.0.entries {
            let side = if pred(&key, &value) {
                &mut yes
            } else {
                &mut no
            };
            // Keys of one map are distinct: no search needed.
            side.0.push(key, value);
        }
        (yes, no)
    }

    /// Moves every member of `other` into this map, in order, as
    /// [`insert`](Self::insert) would; `other` is left empty.
    pub fn append(&mut self, other: &mut Map) {
        for (key, value) in std::mem::take(&mut other.0.entries) {
            self.insert_key(key, value);
        }
        other.0.index = None;
    }

    /// The value at `key`, inserted by `make` first when missing.
    pub fn get_or_insert_with(&mut self, key: String, make: impl FnOnce() -> Value) -> &mut Value {
        let i = match self.0.position(&key) {
            Some(i) => i,
            None => self.0.push(Key::from(key), make()),
        };
        &mut self.0.entries[i].1
    }

    /// Gives back the room reserved for members not written (the reader
    /// does this as it closes an object).
    pub fn shrink_to_fit(&mut self) {
        self.0.entries.shrink_to_fit();
    }

    /// The members in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.0.entries.iter())
    }

    /// The members in order, values mutable.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(self.0.entries.iter_mut())
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.0.entries.iter().map(|(k, _)| k.as_str())
    }

    /// The values in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.0.entries.iter().map(|(_, v)| v)
    }

    /// The values in order, mutable.
    pub fn values_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = &mut Value> + ExactSizeIterator {
        self.0.entries.iter_mut().map(|(_, v)| v)
    }
}

/// `map["key"]`, as serde_json's map.
///
/// # Panics
///
/// When `key` is not in the map, as a `HashMap`'s index does; library code
/// uses [`Map::get`].
impl std::ops::Index<&str> for Map {
    type Output = Value;
    #[allow(clippy::panic)] // the contract of a map's `Index`
    fn index(&self, key: &str) -> &Value {
        match self.get(key) {
            Some(value) => value,
            None => panic!("key {key:?} not in the JSON object"),
        }
    }
}

/// A member of a [`Map`] by key, present or not ([`Map::entry`]).
#[derive(Debug)]
pub struct Entry<'a> {
    map: &'a mut Map,
    key: String,
}

impl<'a> Entry<'a> {
    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The member's value, `default` inserted first when missing.
    pub fn or_insert(self, default: Value) -> &'a mut Value {
        self.map.get_or_insert_with(self.key, || default)
    }

    /// The member's value, `make`'s inserted first when missing.
    pub fn or_insert_with(self, make: impl FnOnce() -> Value) -> &'a mut Value {
        self.map.get_or_insert_with(self.key, make)
    }
}

/// The members of a [`Map`] in order.
#[derive(Clone, Debug)]
pub struct Iter<'a>(std::slice::Iter<'a, (Key, Value)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.as_str(), v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k.as_str(), v))
    }
}
impl ExactSizeIterator for Iter<'_> {}

/// The members of a [`Map`] in order, values mutable.
#[derive(Debug)]
pub struct IterMut<'a>(std::slice::IterMut<'a, (Key, Value)>);

impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a str, &'a mut Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.as_str(), v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl ExactSizeIterator for IterMut<'_> {}

/// Equal when they hold the same members, in any order (as serde_json's
/// ordered map compared).
impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}
impl Eq for Map {}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl IntoIterator for Map {
    type Item = (String, Value);
    type IntoIter = IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        IntoIter(self.0.entries.into_iter())
    }
}

/// The members of a [`Map`] in order, owned.
#[derive(Debug)]
pub struct IntoIter(thin_vec::IntoIter<(Key, Value)>);

impl Iterator for IntoIter {
    type Item = (String, Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (String::from(k), v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (String::from(k), v))
    }
}
impl ExactSizeIterator for IntoIter {}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a str, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Map {
    type Item = (&'a str, &'a mut Value);
    type IntoIter = IterMut<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Map {
        let mut map = Map::new();
        map.extend(iter);
        map
    }
}

impl Extend<(String, Value)> for Map {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, iter: I) {
        for (key, value) in iter {
            self.insert(key, value);
        }
    }
}

impl<'a> FromIterator<(&'a str, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (&'a str, Value)>>(iter: I) -> Map {
        let mut map = Map::new();
        for (key, value) in iter {
            map.insert_key(Key::from(key), value);
        }
        map
    }
}
