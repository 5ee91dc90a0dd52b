//! The identity of a layer, `(kind, instance)` (R4), and how layer maps
//! are looked up by it without cloning. Apart from `context.rs` so that the
//! layers, the instance list and the errors can name an identity without
//! depending on the context that owns them.

use agent_core::{Instance, Kind};
use std::fmt;
use std::hash::Hash;

/// The identity of a data message: `(kind, instance)` (R4). `instance` is
/// `None` for the global layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The kind.
    pub kind: Kind,
    /// The instance; `None` is global.
    pub instance: Option<Instance>,
}

impl Identity {
    /// The global identity of `kind`.
    pub fn global(kind: Kind) -> Self {
        Identity {
            kind,
            instance: None,
        }
    }
}

impl Hash for Identity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Must agree with `IdentityRef`, which finds layers without cloning.
        IdentityRef::new(&self.kind, self.instance.as_ref()).hash(state);
    }
}

/// A borrowed [`Identity`], for looking layers up without allocating.
#[derive(Hash, Clone, Copy)]
pub(crate) struct IdentityRef<'a> {
    kind: &'a str,
    instance: Option<&'a str>,
}

impl<'a> IdentityRef<'a> {
    /// `identity`, borrowed.
    pub(crate) fn of(identity: &'a Identity) -> Self {
        IdentityRef::new(&identity.kind, identity.instance.as_ref())
    }

    pub(crate) fn new(kind: &'a Kind, instance: Option<&'a Instance>) -> Self {
        IdentityRef {
            kind: kind.as_str(),
            instance: instance.map(Instance::as_str),
        }
    }
}

impl<'a> From<&'a Identity> for IdentityRef<'a> {
    fn from(identity: &'a Identity) -> Self {
        IdentityRef::of(identity)
    }
}

impl IdentityRef<'_> {
    /// True when this names `identity`.
    pub(crate) fn equivalent_to(&self, key: &Identity) -> bool {
        // The instance first: among many instances of few kinds, it is
        // what tells two identities apart.
        self.instance == key.instance.as_ref().map(Instance::as_str)
            && self.kind == key.kind.as_str()
    }
}

impl fmt::Display for Identity {
    /// `kind` for a global layer, `kind@instance` for an instance layer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance {
            None => write!(f, "{}", self.kind),
            Some(instance) => write!(f, "{}@{instance}", self.kind),
        }
    }
}

/// The hasher of the maps keyed by identities, kinds and instance ids:
/// foldhash, seeded per map. Loading a context of many instances hashes
/// every message's identity at least twice, and SipHash (std's default)
/// was a tenth of that time; foldhash keeps a random seed, so keys chosen
/// by an input still cannot be aimed at one bucket ahead of time.
pub(crate) type Hasher = foldhash::fast::RandomState;
