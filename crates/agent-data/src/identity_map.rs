//! [`LayerMap`]: values keyed by layer identity, in order of insertion.
//!
//! A context of many instances holds one entry per layer: a million of
//! them for a million one-write instances, each inserted into memory not
//! touched before. So an entry is only its identity and its value, and
//! the hash table beside the entries holds 4-byte positions (not the
//! 8-byte position and 8-byte hash per entry of an `IndexMap`): loading
//! such a context writes a fifth less memory for its layers.

use crate::identity::{Hasher, Identity, IdentityRef};
use hashbrown::HashTable;
use std::fmt;
use std::hash::BuildHasher;
use std::ops::Range;

/// Values keyed by [`Identity`], in order of insertion, found by position
/// or by identity.
///
/// Positions are kept as `u32` in the table: four billion layers would
/// need hundreds of gigabytes of entries, out of reach of memory long
/// before (the log and the instance list count layers in `u32` too).
#[derive(Clone)]
pub(crate) struct LayerMap<T> {
    entries: Vec<(Identity, T)>,
    table: HashTable<u32>,
    hasher: Hasher,
}

impl<T> Default for LayerMap<T> {
    fn default() -> Self {
        LayerMap {
            entries: Vec::new(),
            table: HashTable::new(),
            hasher: Hasher::default(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for LayerMap<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<T> LayerMap<T> {
    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Room reserved, in entries: the larger of the entries' and the
    /// table's, so that room either holds unused is seen and given back.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity().max(self.table.capacity())
    }

    /// Makes room for `more` entries, if memory allows: a hint, so a
    /// refusal leaves the map as it was, to grow as it is filled.
    pub(crate) fn reserve(&mut self, more: usize) {
        if self.entries.try_reserve(more).is_err() {
            return;
        }
        let (entries, hasher) = (&self.entries, &self.hasher);
        // A refused table is left to grow as entries arrive.
        let _ = self
            .table
            .try_reserve(more, |&at| rehash(hasher, entries, at));
    }

    /// Gives back the room not used.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.table.shrink_to_fit(|&at| rehash(hasher, entries, at));
    }

    /// The hash of `probe` in this map, for [`LayerMap::find`] and
    /// [`LayerMap::push`].
    pub(crate) fn hash(&self, probe: &IdentityRef<'_>) -> u64 {
        self.hasher.hash_one(probe)
    }

    /// The position of `probe`, whose hash is `hash`.
    pub(crate) fn find(&self, hash: u64, probe: &IdentityRef<'_>) -> Option<usize> {
        let entries = &self.entries;
        self.table
            .find(hash, |&at| {
                entries
                    .get(at as usize)
                    .is_some_and(|(id, _)| probe.equivalent_to(id))
            })
            .map(|&at| at as usize)
    }

    /// The position of `probe`.
    pub(crate) fn position(&self, probe: &IdentityRef<'_>) -> Option<usize> {
        self.find(self.hash(probe), probe)
    }

    /// The value of `key`, an [`Identity`] or an [`IdentityRef`].
    pub(crate) fn get<'k>(&self, key: impl Into<IdentityRef<'k>>) -> Option<&T> {
        self.get_full(key).map(|(_, _, value)| value)
    }

    /// True when `key` has an entry.
    pub(crate) fn contains_key<'k>(&self, key: impl Into<IdentityRef<'k>>) -> bool {
        self.position(&key.into()).is_some()
    }

    /// The position, identity and value of `key`.
    pub(crate) fn get_full<'k>(
        &self,
        key: impl Into<IdentityRef<'k>>,
    ) -> Option<(usize, &Identity, &T)> {
        let at = self.position(&key.into())?;
        self.entries.get(at).map(|(id, value)| (at, id, value))
    }

    /// The identity and value at `at`.
    pub(crate) fn get_index(&self, at: usize) -> Option<(&Identity, &T)> {
        self.entries.get(at).map(|(id, value)| (id, value))
    }

    /// The identity and value at `at`, the value mutable.
    pub(crate) fn get_index_mut(&mut self, at: usize) -> Option<(&Identity, &mut T)> {
        self.entries.get_mut(at).map(|(id, value)| (&*id, value))
    }

    /// The values of the entries in `range`.
    pub(crate) fn values_in_mut(
        &mut self,
        range: Range<usize>,
    ) -> Option<impl Iterator<Item = &mut T>> {
        Some(
            self.entries
                .get_mut(range)?
                .iter_mut()
                .map(|(_, value)| value),
        )
    }

    /// Appends `identity` with `value`, `hash` being its hash; the caller
    /// knows it is absent. Its position.
    pub(crate) fn push(&mut self, hash: u64, identity: Identity, value: T) -> usize {
        let at = self.entries.len();
        let (entries, hasher) = (&self.entries, &self.hasher);
        // Saturates rather than fails: see the type's note on positions.
        let position = u32::try_from(at).unwrap_or(u32::MAX);
        self.table
            .insert_unique(hash, position, |&at| rehash(hasher, entries, at));
        self.entries.push((identity, value));
        at
    }

    /// The identities, in order.
    pub(crate) fn keys(&self) -> impl ExactSizeIterator<Item = &Identity> {
        self.entries.iter().map(|(id, _)| id)
    }

    /// The values, in order.
    pub(crate) fn values(&self) -> impl ExactSizeIterator<Item = &T> {
        self.entries.iter().map(|(_, value)| value)
    }

    /// The entries, in order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = (&Identity, &T)> {
        self.into_iter()
    }
}

impl<T: Default> LayerMap<T> {
    /// The value of `(kind, instance)`, inserted as the default if it is
    /// new; the identity is cloned only then.
    pub(crate) fn value_or_default(
        &mut self,
        kind: &agent_core::Kind,
        instance: Option<&agent_core::Instance>,
    ) -> &mut T {
        let probe = IdentityRef::new(kind, instance);
        let hash = self.hash(&probe);
        let at = match self.find(hash, &probe) {
            Some(at) => at,
            None => {
                let identity = Identity {
                    kind: kind.clone(),
                    instance: instance.cloned(),
                };
                self.push(hash, identity, T::default())
            }
        };
        // A position just found or pushed.
        &mut self.entries[at].1
    }
}

/// The hash of the entry at `at`, for the table to grow or shrink by.
fn rehash<T>(hasher: &Hasher, entries: &[(Identity, T)], at: u32) -> u64 {
    entries
        .get(at as usize)
        .map_or(0, |(id, _)| hasher.hash_one(IdentityRef::of(id)))
}

impl<'a, T> IntoIterator for &'a LayerMap<T> {
    type Item = (&'a Identity, &'a T);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Identity, T)>,
        fn(&'a (Identity, T)) -> (&'a Identity, &'a T),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(id, value)| (id, value))
    }
}
