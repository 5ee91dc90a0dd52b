//! [`MemoryStore`]: a context kept in this process's memory, behind the
//! same [`Store`] seam as a file — compare-and-append, catching up with
//! other handles' appends, idempotency keys — for tests, and for programs
//! that want a store's behaviour without a file.

use crate::retry::retry_on_conflict;
use crate::{AppendKey, Error, KeyedOutcome, Result, Store};
use agent_data::{Context, Format, Loaded, Position, Prepared};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

/// A context in memory, shared by every handle cloned from one
/// [`MemoryStore::new`] as a file is shared by the processes that open it:
/// each handle remembers how far it has read, an append lands only at the
/// length it was validated against ([`Error::Conflict`] otherwise), and
/// [`Store::commit`] catches up and validates again. The log is kept as
/// JSONL text, one line per message, exactly as a JSONL file holds it, and
/// every read parses it as a file's would be. Appends made with a key
/// ([`Store::commit_once`]) land once; keys are kept as long as the store.
/// Nothing is written anywhere: the context ends with the last handle.
///
/// ```
/// use agent_data::{Context, Message};
/// use agent_store::{MemoryStore, Store};
/// use agent_core::json;
///
/// let mut store = MemoryStore::new("scratch");
/// let mut other = store.clone(); // a second writer on the same context
/// let (mut mine, mut theirs) = (Context::new(), Context::new());
/// let note = |n: i64| Message::from_value(json!({"type": "state", "data": {"n": n}}));
/// store.commit(&mut mine, &note(1)?)?;
/// other.commit(&mut theirs, &note(2)?)?; // caught up with the first, then appended
/// assert_eq!(theirs.len(), 2);
/// assert_eq!(store.load()?.context.read(&"†state.n".parse()?, None), Some(&json!(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct MemoryStore {
    name: String,
    shared: Arc<Mutex<Shared>>,
    /// Messages this handle has read (the context it works with has as
    /// many).
    seen: usize,
}

/// What every handle of one store sees.
#[derive(Debug, Default)]
struct Shared {
    /// False until the first append: reading a context never written is
    /// an error, as reading a missing file is.
    created: bool,
    /// The log as JSONL, one line per message, each ending in a newline.
    text: String,
    /// Where each message's line ends in `text` (after its newline).
    ends: Vec<usize>,
    /// Every key an append was made with, and what that append wrote.
    keys: HashMap<AppendKey, Range<usize>>,
}

impl MemoryStore {
    /// A new, empty context named `name` (for messages). It does not exist
    /// until the first append: [`Store::load`] of it is
    /// [`Error::Missing`].
    pub fn new(name: impl Into<String>) -> Self {
        MemoryStore {
            name: name.into(),
            shared: Arc::default(),
            seen: 0,
        }
    }

    /// Another handle on the same context that has read nothing yet, as a
    /// second process opening the same file would be.
    pub fn handle(&self) -> Self {
        MemoryStore {
            name: self.name.clone(),
            shared: Arc::clone(&self.shared),
            seen: 0,
        }
    }

    /// True when `self` and `other` are handles on the same context.
    pub fn same_context(&self, other: &MemoryStore) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The shared log. A handle that panicked while holding it left it as
    /// it was before its append (an append changes it only once all its
    /// checks passed), so a poisoned lock is taken as it is.
    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends `prepared` under `key` (when given) if the log still has
    /// `prepared.base()` messages and no append with `key` landed.
    fn append_keyed(&mut self, prepared: &Prepared<'_>, key: Option<&AppendKey>) -> Result<()> {
        let name = self.name.clone();
        let mut shared = self.shared();
        let current = shared.ends.len();
        let landed = key.is_some_and(|key| shared.keys.contains_key(key));
        if current != prepared.base() || landed {
            // A landed key means another handle appended since this one
            // caught up: catching up again finds what it wrote.
            return Err(Error::Conflict {
                name,
                expected: prepared.base(),
                current,
            });
        }
        for line in prepared.lines() {
            shared.text.push_str(line);
            shared.text.push('\n');
            let end = shared.text.len();
            shared.ends.push(end);
        }
        shared.created = true;
        if let Some(key) = key {
            let range = current..shared.ends.len();
            shared.keys.insert(key.clone(), range);
        }
        drop(shared);
        self.seen = prepared.base() + prepared.len();
        Ok(())
    }

    fn load_error(&self, source: agent_data::Error) -> Error {
        Error::Load {
            name: self.name.clone(),
            source: Box::new(source),
        }
    }
}

impl Store for MemoryStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn load(&mut self) -> Result<Loaded> {
        let shared = self.shared();
        if !shared.created {
            return Err(Error::Missing {
                name: self.name.clone(),
            });
        }
        let loaded = Context::load(shared.text.as_bytes(), Format::Jsonl);
        drop(shared);
        let loaded = loaded.map_err(|e| self.load_error(e))?;
        self.seen = loaded.context.len();
        Ok(loaded)
    }

    fn catch_up(&mut self, context: &mut Context) -> Result<()> {
        if context.len() != self.seen {
            return Err(Error::Malformed {
                name: self.name.clone(),
                reason: format!(
                    "the context has {} messages, but {} were read from this store",
                    context.len(),
                    self.seen
                ),
            });
        }
        let shared = self.shared();
        let offset = match self.seen {
            0 => 0,
            n => shared.ends.get(n - 1).copied().unwrap_or(shared.text.len()),
        };
        let at = Position {
            line: self.seen,
            offset,
        };
        let extended = context.extend_jsonl(&shared.text.as_bytes()[offset..], at);
        drop(shared);
        extended.map_err(|e| self.load_error(e))?;
        self.seen = context.len();
        Ok(())
    }

    fn append_at(&mut self, prepared: &Prepared<'_>) -> Result<()> {
        self.append_keyed(prepared, None)
    }

    /// Nothing to lock: compare-and-append under the shared log's mutex.
    fn lock(&mut self) -> Result<()> {
        Ok(())
    }

    fn unlock(&mut self) {}

    fn commit_once(
        &mut self,
        context: &mut Context,
        messages: &[agent_data::Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        let name = self.name.clone();
        retry_on_conflict(&name, || {
            self.catch_up(context)?;
            if let Some(range) = self.shared().keys.get(key).cloned() {
                return Ok(KeyedOutcome::Already(range));
            }
            if messages.is_empty() {
                return Ok(KeyedOutcome::Appended(context.len()..context.len()));
            }
            let prepared = context
                .prepare(messages)
                .map_err(|e| Error::Refused(Box::new(e)))?;
            self.append_keyed(&prepared, Some(key))?;
            context
                .append_prepared(prepared)
                .map(KeyedOutcome::Appended)
                .map_err(|e| Error::Refused(Box::new(e)))
        })
    }
}
