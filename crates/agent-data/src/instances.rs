//! The instance ids of a context in order of first appearance (R2), kept
//! without a copy of their own: each is the one its first layer's key holds.
//! A context of many instances would otherwise hold every id twice, in the
//! layer map and in the list.

use crate::layer::Layer;
use agent_core::{Instance, Kind};
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// The layer map the positions below point into.
pub(crate) type Layers = crate::identity_map::LayerMap<Layer>;

/// Instance ids in order of first appearance, as positions of layers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Instances {
    /// For each instance in order, the position of its first layer in the
    /// layer map. `u32` as in the log: four billion layers are out of reach
    /// of memory.
    first: Vec<u32>,
    /// The same positions, found by the instance id; built only once
    /// instance layers of a second kind appear. Until then the layer map
    /// answers alone: an id without a layer of the one kind that has
    /// instance layers has no layer at all.
    table: Option<HashTable<u32>>,
    /// The kind of every instance layer while `table` is not built.
    kind: Option<Kind>,
    hasher: crate::identity::Hasher,
}

impl Instances {
    /// The instance `id` as a layer key of a kind other than `kind` holds
    /// it, if one has it; the caller knows `(kind, id)` has no layer.
    pub(crate) fn find<'a>(
        &mut self,
        layers: &'a Layers,
        kind: &Kind,
        id: &str,
    ) -> Option<&'a Instance> {
        let table = match &mut self.table {
            Some(table) => table,
            None if self.kind.as_ref().is_none_or(|only| only == kind) => return None,
            None => self.table.insert(build(&self.first, layers, &self.hasher)),
        };
        let hash = self.hasher.hash_one(id);
        table
            .find(hash, |&at| {
                instance(layers, at).is_some_and(|x| x.as_str() == id)
            })
            .and_then(|&at| instance(layers, at))
    }

    /// Records the instance of the layer at `position`, the first layer
    /// to have it (the caller knows it is new).
    pub(crate) fn insert(&mut self, layers: &Layers, position: usize) {
        let Some((identity, _)) = layers.get_index(position) else {
            return;
        };
        let Some(id) = &identity.instance else {
            return;
        };
        self.first.push(code(position));
        let table = match &mut self.table {
            Some(table) => table,
            None => {
                match &self.kind {
                    None => self.kind = Some(identity.kind.clone()),
                    Some(only) if *only != identity.kind => {
                        self.table = Some(build(&self.first, layers, &self.hasher));
                    }
                    Some(_) => {}
                }
                return;
            }
        };
        let hasher = &self.hasher;
        let rehash = |&at: &u32| instance(layers, at).map_or(0, |x| hasher.hash_one(x.as_str()));
        table.insert_unique(hasher.hash_one(id.as_str()), code(position), rehash);
    }

    /// The instances in order.
    pub(crate) fn iter<'a>(&'a self, layers: &'a Layers) -> Iter<'a> {
        Iter {
            first: self.first.iter(),
            layers,
        }
    }
}

/// The table of the instances at `first`.
fn build(first: &[u32], layers: &Layers, hasher: &crate::identity::Hasher) -> HashTable<u32> {
    let rehash = |&at: &u32| instance(layers, at).map_or(0, |x| hasher.hash_one(x.as_str()));
    let mut table = HashTable::with_capacity(first.len());
    for &at in first {
        table.insert_unique(rehash(&at), at, rehash);
    }
    table
}

/// A layer position as stored here.
fn code(position: usize) -> u32 {
    u32::try_from(position).unwrap_or(u32::MAX)
}

/// The instance of the layer at `at`.
fn instance(layers: &Layers, at: u32) -> Option<&Instance> {
    layers.get_index(at as usize)?.0.instance.as_ref()
}

/// The instances of a context in order ([`Instances::iter`]).
pub(crate) struct Iter<'a> {
    first: std::slice::Iter<'a, u32>,
    layers: &'a Layers,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Instance;

    fn next(&mut self) -> Option<&'a Instance> {
        // Every position recorded names a layer with an instance.
        self.first.find_map(|&at| instance(self.layers, at))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.first.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}
