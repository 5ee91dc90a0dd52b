//! [`Map`]: a JSON object's members in the order they were written (R3).

use std::hash::BuildHasher;

use ecow::EcoString;
use hashbrown::HashTable;
use thin_vec::ThinVec;

use super::Value;
use super::held::Held;

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
/// use agent_json::{Map, Value};
/// let mut map = Map::new();
/// map.insert("b".into(), Value::from(1));
/// map.insert("a".into(), Value::from(2));
/// assert_eq!(map.keys().collect::<Vec<_>>(), ["b", "a"]);
/// ```
///
/// An object the reader found nested 16 or more containers deep is kept
/// as its text until something asks for its members (D85: held objects): the methods
/// below read it then, once, and behave exactly as for any other object.
#[derive(Clone, Default)]
pub struct Map(Members);

/// An object's members, or (`entries` empty) the text of a held one.
#[derive(Clone, Default)]
pub(crate) struct Members {
    entries: ThinVec<(Key, Value)>,
    /// `None` for up to [`INDEXED_FROM`] members.
    extra: Option<Box<Extra>>,
}

/// What an object keeps beside its members, when anything.
#[derive(Clone)]
enum Extra {
    /// Past [`INDEXED_FROM`] members (and below `u32::MAX`).
    Index(Index),
    /// Members not read yet ([`Held`]); `entries` is empty.
    Held(Held<Members>),
}

/// Positions in `entries`, hashed by key: `u32`, half the table a
/// `usize` would take.
#[derive(Clone, Default)]
struct Index {
    table: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl Members {
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, key: &str) -> Option<usize> {
        match self.extra.as_deref() {
            Some(Extra::Index(index)) => {
                let entries = &self.entries;
                let hash = index.hasher.hash_one(key);
                let found = index.table.find(hash, |&i| entries[i as usize].0 == key);
                found.map(|&i| i as usize)
            }
            _ => self.entries.iter().position(|(k, _)| k == key),
        }
    }

    fn reindex(&mut self) {
        self.extra = None;
        if self.entries.len() < INDEXED_FROM || u32::try_from(self.entries.len()).is_err() {
            return;
        }
        let mut index = Index {
            table: HashTable::with_capacity(self.entries.len()),
            hasher: foldhash::fast::RandomState::default(),
        };
        for at in 0..self.entries.len() {
            if !index.add(&self.entries, at) {
                return;
            }
        }
        self.extra = Some(Box::new(Extra::Index(index)));
    }

    fn push(&mut self, key: Key, value: Value) -> usize {
        let at = self.entries.len();
        self.entries.push((key, value));
        let entries = &self.entries;
        let indexed = match self.extra.as_deref_mut() {
            Some(Extra::Index(index)) => index.add(entries, at),
            // Members are pushed only once read (`Map::members_mut`).
            Some(Extra::Held(_)) => true,
            None if entries.len() >= INDEXED_FROM => {
                self.reindex();
                true
            }
            None => true,
        };
        if !indexed {
            // Past `u32::MAX` members: searched in order from here.
            self.extra = None;
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

    /// An object held as its text `{…}`, which the reader has just read as
    /// a nonempty object `depth` containers deep (`None`: not known),
    /// `compact` or not (D85: held objects).
    pub(crate) fn held(text: &str, compact: bool, depth: Option<usize>) -> Map {
        Map(Members {
            entries: ThinVec::new(),
            extra: Some(Box::new(Extra::Held(Held::new(text, compact, depth)))),
        })
    }

    /// How deep a held object nests, itself the first; `None` for any
    /// other object, and for a held one holding a repeated key.
    pub(crate) fn held_depth(&self) -> Option<usize> {
        self.held_part().and_then(Held::depth)
    }

    /// A held object's compact text and depth, while it is unread.
    pub(crate) fn compact_text(&self) -> Option<(&str, usize)> {
        self.held_part().and_then(Held::compact_text)
    }

    /// The members, a held object's read first.
    pub(crate) fn into_members(mut self) -> Members {
        match self.0.extra.take().map(|extra| *extra) {
            Some(Extra::Held(held)) => held.into_members(),
            extra => {
                self.0.extra = extra.map(Box::new);
                self.0
            }
        }
    }

    fn held_part(&self) -> Option<&Held<Members>> {
        match self.0.extra.as_deref() {
            Some(Extra::Held(held)) => Some(held),
            _ => None,
        }
    }

    /// A held object's members read into an object of their own, when
    /// they have not been read in place: for a writer that drops them
    /// once written (D85: held objects). `None` for any other object.
    pub(crate) fn read_apart(&self) -> Option<Map> {
        self.held_part().and_then(Held::read_apart).map(Map)
    }

    /// True for a held object whose members have not been read.
    pub(crate) fn is_unread(&self) -> bool {
        self.held_part().is_some_and(|held| held.is_unread())
    }

    /// The members, a held object's read first (and kept).
    fn members(&self) -> &Members {
        match self.held_part() {
            Some(held) => held.members(),
            None => &self.0,
        }
    }

    /// The members to change: a held object becomes an ordinary one.
    fn members_mut(&mut self) -> &mut Members {
        if self.held_part().is_some() {
            self.0 = std::mem::take(self).into_members();
        }
        &mut self.0
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.members().entries.len()
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        match self.held_part() {
            Some(held) => held.is_empty(),
            None => self.0.entries.is_empty(),
        }
    }

    /// The value at `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        let members = self.members();
        members.position(key).map(|i| &members.entries[i].1)
    }

    /// The value at `key`, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let members = self.members_mut();
        let i = members.position(key)?;
        Some(&mut members.entries[i].1)
    }

    /// True when `key` is a member.
    pub fn contains_key(&self, key: &str) -> bool {
        self.members().position(key).is_some()
    }

    /// Sets `key` to `value`: a new key goes last, an existing one keeps
    /// its place. Returns the value it replaced.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        let members = self.members_mut();
        match members.position(&key) {
            Some(i) => Some(std::mem::replace(&mut members.entries[i].1, value)),
            None => {
                members.push(Key::from(key), value);
                None
            }
        }
    }

    /// [`Map::insert`] for a key the reader already holds as a [`Key`].
    /// True when the key was there (its value is replaced).
    pub(crate) fn insert_key(&mut self, key: Key, value: Value) -> bool {
        let members = self.members_mut();
        match members.position(&key) {
            Some(i) => {
                members.entries[i].1 = value;
                true
            }
            None => {
                members.push(key, value);
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
        let members = self.members_mut();
        let i = members.position(key)?;
        let last = members.entries.len() - 1;
        if let Some(Extra::Index(index)) = members.extra.as_deref_mut() {
            index.forget(&members.entries, i);
            // An index exists only below `u32::MAX` members.
            if let (true, Ok(to)) = (i != last, u32::try_from(i)) {
                index.relocate(&members.entries, last, to);
            }
        }
        let (_, value) = members.entries.swap_remove(i);
        if members.entries.len() < INDEXED_FROM {
            members.extra = None;
        }
        Some(value)
    }

    /// Removes `key`, keeping the order of the others (linear in the
    /// members after it).
    pub fn shift_remove(&mut self, key: &str) -> Option<Value> {
        let members = self.members_mut();
        let i = members.position(key)?;
        if let Some(Extra::Index(index)) = members.extra.as_deref_mut() {
            index.forget(&members.entries, i);
            for position in index.table.iter_mut() {
                if *position as usize > i {
                    *position -= 1;
                }
            }
        }
        let (_, value) = members.entries.remove(i);
        if members.entries.len() < INDEXED_FROM {
            members.extra = None;
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
        let members = self.members_mut();
        let before = members.entries.len();
        members.entries.retain_mut(|(key, value)| keep(key, value));
        if members.entries.len() != before {
            members.reindex();
        }
    }

    /// Splits the members in two, each side in order: those for which
    /// `pred` is true, and the rest. Keys move; none is copied.
    pub fn partition(self, mut pred: impl FnMut(&str, &Value) -> bool) -> (Map, Map) {
        let (mut yes, mut no) = (Map::new(), Map::new());
        for (key, value) in self.into_members().entries {
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
        for (key, value) in std::mem::take(other.members_mut()).entries {
            self.insert_key(key, value);
        }
    }

    /// The value at `key`, inserted by `make` first when missing.
    pub fn get_or_insert_with(&mut self, key: String, make: impl FnOnce() -> Value) -> &mut Value {
        let members = self.members_mut();
        let i = match members.position(&key) {
            Some(i) => i,
            None => members.push(Key::from(key), make()),
        };
        &mut members.entries[i].1
    }

    /// Gives back the room reserved for members not written (the reader
    /// does this as it closes an object).
    pub fn shrink_to_fit(&mut self) {
        // A held object has no room to give back, and is left unread.
        if self.held_part().is_none() {
            self.0.entries.shrink_to_fit();
        }
    }

    /// The members in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.members().entries.iter())
    }

    /// The members in order, values mutable.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(self.members_mut().entries.iter_mut())
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.members().entries.iter().map(|(k, _)| k.as_str())
    }

    /// The values in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.members().entries.iter().map(|(_, v)| v)
    }

    /// The values in order, mutable.
    pub fn values_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = &mut Value> + ExactSizeIterator {
        self.members_mut().entries.iter_mut().map(|(_, v)| v)
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
        IntoIter(self.into_members().entries.into_iter())
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
