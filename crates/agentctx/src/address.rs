//! Where a stored context lives, as a typed argument.

use crate::Result;
use agent_store::Store;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Where a [`StoredContext`](crate::StoredContext) lives: a file, or a
/// context in PostgreSQL. What [`StoredContext::open`] and
/// [`StoredContext::open_existing`] take, built from what an application
/// holds:
///
/// - a [`Path`] or [`PathBuf`] is a file context, whatever its text — a
///   file named `postgres:x` is a file;
/// - text (`&str`, `String`) is read as the `agentctx` commands read an
///   address: a `postgres://…?context=NAME` URL is a context in PostgreSQL
///   (with the `postgres` feature), anything else a file path, and text
///   that looks like a mistyped URL (`POSTGRES://…`, `postgres:/…`) is
///   refused rather than taken for a new file.
///
/// `Debug` and `Display` leave a URL's password out.
///
/// ```
/// use agentctx::Address;
/// use std::path::{Path, PathBuf};
///
/// let file = Address::from(PathBuf::from("runs/task.jsonl"));
/// assert_eq!(file.to_string(), "runs/task.jsonl");
/// assert_eq!(Address::from(Path::new("postgres:x")).to_string(), "postgres:x");
/// let url = Address::from("postgres://me:secret@db/app?context=task");
/// assert_eq!(url.to_string(), "postgres://me@db/app?context=task");
/// ```
///
/// [`StoredContext::open`]: crate::StoredContext::open
/// [`StoredContext::open_existing`]: crate::StoredContext::open_existing
#[derive(Clone, PartialEq, Eq)]
pub struct Address(Inner);

#[derive(Clone)]
enum Inner {
    /// A file, by its path.
    File(PathBuf),
    /// Text read as the commands read an address: a URL or a path.
    Text(String),
    /// A context in this process's memory
    /// ([`StoredContext::in_memory`](crate::StoredContext::in_memory)).
    Memory(agent_store::MemoryStore),
    /// A context in PostgreSQL, on a pool's connections, by its name.
    #[cfg(feature = "postgres")]
    Pooled(agent_store::PgPool, String),
}

/// Two addresses are equal when they name the same context: the same path
/// or text, or the same context in memory.
impl PartialEq for Inner {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Inner::File(a), Inner::File(b)) => a == b,
            (Inner::Text(a), Inner::Text(b)) => a == b,
            (Inner::Memory(a), Inner::Memory(b)) => a.same_context(b),
            #[cfg(feature = "postgres")]
            (Inner::Pooled(a, x), Inner::Pooled(b, y)) => a.same_pool(b) && x == y,
            _ => false,
        }
    }
}

impl Eq for Inner {}

impl Address {
    /// The context `name` in the database of `pool`, opened on the pool's
    /// connections: the contexts of a process then hold at most the pool's
    /// size of server connections between them, each only during a call
    /// (D114: a pool per process).
    ///
    /// ```no_run
    /// use agentctx::{Address, StoredContext};
    /// use agentctx::store::PgPool;
    ///
    /// let pool = PgPool::open("postgres://root@127.0.0.1:5432/test", 8)?;
    /// let mut conversations = Vec::new();
    /// for i in 0..1000 {
    ///     // A thousand contexts open, at most eight connections.
    ///     conversations.push(StoredContext::open(Address::in_pool(&pool, format!("chat-{i}")))?);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "postgres")]
    pub fn in_pool(pool: &agent_store::PgPool, name: impl Into<String>) -> Self {
        Address(Inner::Pooled(pool.clone(), name.into()))
    }

    /// The address of a context in memory.
    pub(crate) fn memory(store: agent_store::MemoryStore) -> Self {
        Address(Inner::Memory(store))
    }

    /// Opens the store this address names (for a context in memory, a
    /// new handle that has read nothing, as a file opened again would be).
    pub(crate) fn store(&self) -> Result<Box<dyn Store + Send>> {
        Ok(match &self.0 {
            Inner::File(path) => Box::new(agent_store::FileStore::open(path)?),
            Inner::Text(text) => agent_store::open(text)?,
            Inner::Memory(store) => Box::new(store.handle()),
            #[cfg(feature = "postgres")]
            Inner::Pooled(pool, name) => Box::new(pool.store(name)?),
        })
    }

    /// The address as shown: a path, or a URL without its password.
    fn shown(&self) -> Cow<'_, str> {
        match &self.0 {
            Inner::File(path) => path.to_string_lossy(),
            // Mistyped URLs too (`POSTGRES://…`, `postgresql:…`): text that
            // is no URL at all comes back as it is.
            Inner::Text(text) => Cow::Owned(agent_store::without_password(text)),
            Inner::Memory(store) => Cow::Borrowed(store.name()),
            #[cfg(feature = "postgres")]
            Inner::Pooled(pool, name) => Cow::Owned(pool.shown(name)),
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl std::fmt::Debug for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.0 {
            Inner::File(_) => "File",
            Inner::Text(_) => "Text",
            Inner::Memory(_) => "Memory",
            #[cfg(feature = "postgres")]
            Inner::Pooled(..) => "Pooled",
        };
        f.debug_tuple(kind).field(&self.shown()).finish()
    }
}

impl From<&Path> for Address {
    fn from(path: &Path) -> Self {
        Address(Inner::File(path.to_owned()))
    }
}

impl From<PathBuf> for Address {
    fn from(path: PathBuf) -> Self {
        Address(Inner::File(path))
    }
}

impl From<&PathBuf> for Address {
    fn from(path: &PathBuf) -> Self {
        Address(Inner::File(path.clone()))
    }
}

impl From<&str> for Address {
    fn from(text: &str) -> Self {
        Address(Inner::Text(text.to_owned()))
    }
}

impl From<String> for Address {
    fn from(text: String) -> Self {
        Address(Inner::Text(text))
    }
}

impl From<&String> for Address {
    fn from(text: &String) -> Self {
        Address(Inner::Text(text.clone()))
    }
}

// `open(&path.to_string_lossy())` compiled when `open` took `&str` (by
// deref); a generic argument does not deref, so the borrow is named here.
// For a path that is not UTF-8 the lossy text names another file: pass the
// path itself (`open(&path)`), as the docs of `Address` say.
impl From<&Cow<'_, str>> for Address {
    fn from(text: &Cow<'_, str>) -> Self {
        Address(Inner::Text(text.as_ref().to_owned()))
    }
}

impl From<Cow<'_, str>> for Address {
    fn from(text: Cow<'_, str>) -> Self {
        Address(Inner::Text(text.into_owned()))
    }
}

impl From<&Address> for Address {
    fn from(address: &Address) -> Self {
        address.clone()
    }
}
