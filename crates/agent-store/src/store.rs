//! The seam between the engine and where a context lives.

use crate::retry::retry_on_conflict;
use crate::{AppendKey, BuildMessages, Error, KeyedOutcome, Result};
use agent_data::{Context, Loaded, Message, Prepared};
use std::ops::Range;

/// How many times [`Store::commit`] catches up and validates again after a
/// conflict before it gives up.
pub const MAX_ATTEMPTS: usize = 64;

/// How long a store keeps a key, in days: a retry with the same key within
/// this window never appends twice (docs/store.md, "Idempotent appends").
pub const KEY_DAYS: u32 = 7;

/// When [`Store::snapshot`] writes a snapshot.
///
/// ```
/// use agent_store::{FileStore, SnapshotWhen, Store};
/// let dir = tempfile::tempdir()?;
/// let mut store = FileStore::open(dir.path().join("c.jsonl"))?;
/// let mut context = agent_data::Context::new();
/// store.commit(&mut context, &agent_data::Message::from_value(agent_core::json!({"type": "state", "data": {"n": 1}}))?)?;
/// // One message is far from the threshold; asked for one now, it is written.
/// assert!(!store.snapshot(&context, SnapshotWhen::Due)?);
/// assert!(store.snapshot(&context, SnapshotWhen::Now)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotWhen {
    /// When the messages since the last snapshot crossed the threshold;
    /// failing to write one is not an error (a snapshot is a cache).
    Due,
    /// Now, however few messages came since; failing is an error.
    Now,
}

/// Where a context lives: a file ([`crate::FileStore`]), or a database.
///
/// A store hands out the context's messages — all of them, or the tail
/// after the ones a caller has — and appends a validated batch *at an
/// expected length* (compare-and-append): if another writer appended first
/// it refuses with [`Error::Conflict`] and changes nothing. [`Store::commit`]
/// builds the only write path callers need on top: catch up, validate
/// against the context as it is now, append, retry on conflict.
///
/// A store handle remembers how far it has read, so it works with the one
/// context it loaded (or a fresh empty one, to read from the start).
pub trait Store {
    /// The context's name for messages: a path, or a URL without password.
    fn name(&self) -> &str;

    /// Reads the whole context. A missing context is an error.
    ///
    /// # Errors
    /// [`Error::Missing`] when the context does not exist (for a file, an [`Error::Io`] of kind
    /// `NotFound`: [`Error::is_missing`] tells both); [`Error::Load`] when its messages do not
    /// load (R1); [`Error::Replaced`] when it changed under the read. A file also fails with
    /// [`Error::Io`], [`Error::NotAFile`] or [`Error::ByteOrderMark`]; PostgreSQL with
    /// [`Error::Database`], or [`Error::Tampered`] when the rows do not chain (R34e).
    fn load(&mut self) -> Result<Loaded>;

    /// Reads what reads and appends need, in O(tail): the newest snapshot
    /// that matches the log, and the messages after it (D37: snapshots). The
    /// context holds every view, so reading, validating and appending are
    /// as after [`Store::load`], but it holds only the messages it needs
    /// again ([`Context::is_complete`]): whatever walks the messages
    /// (rendering, `check`, copying) must [`Store::load`]. Without a
    /// usable snapshot this is [`Store::load`]; a store that keeps none
    /// always loads.
    ///
    /// # Errors
    /// The errors of [`Store::load`]. Failing to write a snapshot that is due is not one (it is
    /// a cache).
    fn load_tail(&mut self) -> Result<Loaded> {
        self.load()
    }

    /// Writes a snapshot of `context` — loaded from this store and caught
    /// up — [`SnapshotWhen::Due`]: when the messages since the last one
    /// crossed the threshold ([`crate::SNAPSHOT_AFTER`] messages and a
    /// quarter of its size in bytes) and a snapshot pays
    /// ([`Context::snapshot_pays`]), or [`SnapshotWhen::Now`]. Returns
    /// whether one was written. When due, failing to write one is not an
    /// error: it is a cache.
    ///
    /// # Errors
    /// Only [`SnapshotWhen::Now`], when the snapshot cannot be written: [`Error::Load`] when `context`
    /// cannot be summarised, [`Error::Io`] or [`Error::SizeLimit`] for a file,
    /// [`Error::Database`] for PostgreSQL. This default never fails.
    fn snapshot(&mut self, context: &Context, when: SnapshotWhen) -> Result<bool> {
        let _ = (context, when);
        Ok(false)
    }

    /// Reads the whole log, recomputes its chain of digests, and compares
    /// every digest the store keeps beside the log with it (a snapshot's,
    /// a row's): what does not match is a [`Finding`](crate::Finding).
    /// Never repairs anything. This default checks nothing beside the log.
    ///
    /// # Errors
    /// The errors of [`Store::load`], when the log cannot be read. A digest that does not match
    /// is a finding, not an error.
    fn verify(&mut self) -> Result<crate::Verified> {
        let loaded = self.load()?;
        Ok(crate::Verified::of(self.name(), &loaded.context))
    }

    /// [`Store::verify`] without folding the log again where the store can
    /// tell its lines are the messages as agentctx writes them: the chain
    /// recomputed over the lines as stored and compared with every digest
    /// kept beside the log, at the speed of hashing it. A snapshot's views
    /// are not compared with the fold then ([`Verified::folded`] says
    /// which was done). A file whose lines its head record does not
    /// confirm, and every other store, is verified in full. This default
    /// is [`Store::verify`].
    ///
    /// [`Verified::folded`]: crate::Verified::folded
    ///
    /// # Errors
    /// As [`Store::verify`].
    fn verify_chain(&mut self) -> Result<crate::Verified> {
        self.verify()
    }

    /// Loads onto `context` — loaded from this store, or empty — the
    /// messages other writers appended after it.
    ///
    /// # Errors
    /// [`Error::Malformed`] when `context` does not have the length this handle read;
    /// [`Error::Replaced`] when the stored context was truncated, replaced or deleted since it
    /// was read; [`Error::Load`] when the new messages do not load (`context` is then
    /// unchanged); and the read errors of [`Store::load`] ([`Error::Io`] for a file,
    /// [`Error::Database`] or [`Error::Tampered`] for PostgreSQL). A context not created yet is
    /// not an error: there is nothing to catch up with.
    fn catch_up(&mut self, context: &mut Context) -> Result<()>;

    /// Appends `prepared` if the context still has exactly
    /// `prepared.base()` messages, durably and all or nothing; otherwise
    /// [`Error::Conflict`], appending nothing. The first append creates a
    /// missing context.
    ///
    /// # Errors
    /// [`Error::Conflict`] when the context no longer has `prepared.base()` messages;
    /// [`Error::Replaced`] when it was truncated or replaced since it was read;
    /// [`Error::Malformed`] when it cannot take an append as it is; for a file, [`Error::Io`]
    /// or [`Error::SizeLimit`]; for PostgreSQL, [`Error::Database`], or [`Error::InDoubt`] when
    /// the connection was lost while committing (the append may have landed). Otherwise nothing
    /// was appended.
    fn append_at(&mut self, prepared: &Prepared<'_>) -> Result<()>;

    /// Starts exclusive access: until [`Store::unlock`], other writers'
    /// appends wait (a file lock). A store without locks does nothing and
    /// relies on compare-and-append.
    ///
    /// # Errors
    /// [`Error::Io`] when an existing file cannot be opened for writing. A store without locks
    /// never fails.
    fn lock(&mut self) -> Result<()>;

    /// Ends exclusive access.
    fn unlock(&mut self);

    /// Appends `messages` to the stored context all or none, validated
    /// against the context as it is when the append lands (R13, R25,
    /// R34b): catches `context` up with what other writers appended,
    /// validates, appends at that length, and on a conflict does it all
    /// again (at most [`MAX_ATTEMPTS`] times). On success `context` holds
    /// the new messages too and their index range is returned; on any error
    /// nothing was appended (though `context` may have caught up).
    ///
    /// # Errors
    /// [`Error::Refused`] when the batch fails validation against the context as it is now
    /// (R13, R25); [`Error::Contended`] when all [`MAX_ATTEMPTS`] attempts met an
    /// [`Error::Conflict`]; otherwise the errors of [`Store::lock`], [`Store::catch_up`] and
    /// [`Store::append_at`], a conflict excepted (it is retried).
    fn commit(&mut self, context: &mut Context, messages: &[Message]) -> Result<Range<usize>> {
        if messages.is_empty() {
            return Ok(context.len()..context.len());
        }
        let name = self.name().to_owned();
        let range = retry_on_conflict(&name, || {
            self.lock()?;
            let result = commit_once(self, context, messages);
            self.unlock();
            result
        })?;
        self.snapshot(context, SnapshotWhen::Due)?;
        Ok(range)
    }

    /// [`Store::commit`] at most once per `key`: the store keeps the key
    /// with the append, atomically, so a retry with the same key — after
    /// any outcome, [`Error::InDoubt`] included, from any process — never
    /// appends twice. Returns [`KeyedOutcome::Appended`] with the new messages'
    /// range, or, when an append with this key had landed, appends nothing
    /// and returns [`KeyedOutcome::Already`] with the range that append wrote
    /// (`context` caught up to include it). Keys are kept
    /// [`crate::KEY_DAYS`] days; a retry after that appends again. An
    /// empty batch appends nothing and records no key: it returns
    /// [`KeyedOutcome::Appended`] with an empty range on a store that keeps keys,
    /// so it tells whether a store does before anything is run.
    ///
    /// This default keeps no keys: [`Error::KeysUnsupported`], appending
    /// nothing.
    ///
    /// # Errors
    /// [`Error::KeysUnsupported`] from this default, and from a store that keeps no keys;
    /// otherwise the errors of [`Store::commit`]. After any error, [`Error::InDoubt`] included,
    /// a retry with the same `key` appends at most once.
    fn commit_once(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        let _ = (context, messages, key);
        Err(Error::KeysUnsupported {
            name: self.name().to_owned(),
        })
    }

    /// Like [`Store::commit`], for messages that depend on the context they
    /// land on (fresh instance ids, say): `build` makes them from the
    /// context as it is now, caught up, and makes them again after a
    /// conflict, so another writer can never make them stale. On success
    /// `context` holds them and their index range is returned.
    ///
    /// # Errors
    /// The errors of [`Store::commit`]; [`Error::Refused`] also when `build` fails.
    fn commit_with(
        &mut self,
        context: &mut Context,
        build: &mut BuildMessages<'_>,
    ) -> Result<Range<usize>> {
        let name = self.name().to_owned();
        let range = retry_on_conflict(&name, || {
            self.lock()?;
            // Built from the context as caught up, then appended at exactly
            // that length: no second catch-up may slip other writers'
            // messages under what was built (a store without locks would).
            let result = self.catch_up(context).and_then(|()| {
                let messages = build(context).map_err(|e| Error::Refused(Box::new(e)))?;
                append_caught_up(self, context, &messages)
            });
            self.unlock();
            result
        })?;
        self.snapshot(context, SnapshotWhen::Due)?;
        Ok(range)
    }
}

fn commit_once<S: Store + ?Sized>(
    store: &mut S,
    context: &mut Context,
    messages: &[Message],
) -> Result<Range<usize>> {
    store.catch_up(context)?;
    append_caught_up(store, context, messages)
}

/// Validates `messages` against `context` and appends them at its length
/// (compare-and-append: a conflict if another writer came first).
fn append_caught_up<S: Store + ?Sized>(
    store: &mut S,
    context: &mut Context,
    messages: &[Message],
) -> Result<Range<usize>> {
    let prepared = context
        .prepare(messages)
        .map_err(|e| Error::Refused(Box::new(e)))?;
    store.append_at(&prepared)?;
    context
        .append_prepared(prepared)
        .map_err(|e| Error::Refused(Box::new(e)))
}

impl<S: Store + ?Sized> Store for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn load(&mut self) -> Result<Loaded> {
        (**self).load()
    }
    fn load_tail(&mut self) -> Result<Loaded> {
        (**self).load_tail()
    }
    fn snapshot(&mut self, context: &Context, when: SnapshotWhen) -> Result<bool> {
        (**self).snapshot(context, when)
    }
    fn verify(&mut self) -> Result<crate::Verified> {
        (**self).verify()
    }
    fn verify_chain(&mut self) -> Result<crate::Verified> {
        (**self).verify_chain()
    }
    fn catch_up(&mut self, context: &mut Context) -> Result<()> {
        (**self).catch_up(context)
    }
    fn append_at(&mut self, prepared: &Prepared<'_>) -> Result<()> {
        (**self).append_at(prepared)
    }
    fn lock(&mut self) -> Result<()> {
        (**self).lock()
    }
    fn unlock(&mut self) {
        (**self).unlock()
    }
    fn commit(&mut self, context: &mut Context, messages: &[Message]) -> Result<Range<usize>> {
        (**self).commit(context, messages)
    }
    fn commit_with(
        &mut self,
        context: &mut Context,
        build: &mut BuildMessages<'_>,
    ) -> Result<Range<usize>> {
        (**self).commit_with(context, build)
    }
    fn commit_once(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        (**self).commit_once(context, messages, key)
    }
}

/// Opens the store an address names (spec §10): a `postgres://` or
/// `postgresql://` URL is a context in PostgreSQL (with the `postgres`
/// feature), anything else a file path.
///
/// An address that looks like a mistyped URL (`POSTGRES://…`,
/// `postgres:/…`, `postgres//…`; [`crate::is_mistyped_postgres_url`]) is
/// refused: taken for a path, it would quietly become a new file.
///
/// # Errors
/// [`Error::Address`] for an address that looks like a mistyped PostgreSQL URL, or a PostgreSQL
/// URL in a build without the `postgres` feature; otherwise the errors of
/// [`FileStore::open`](crate::FileStore::open) or of `PgStore::open`.
pub fn open(address: &str) -> Result<Box<dyn Store + Send>> {
    if crate::is_mistyped_postgres_url(address) {
        return Err(Error::Address {
            address: crate::without_password(address),
            reason: crate::url::MISTYPED.into(),
        });
    }
    if crate::is_postgres_url(address) {
        #[cfg(feature = "postgres")]
        return Ok(Box::new(crate::PgStore::open(address)?));
        #[cfg(not(feature = "postgres"))]
        return Err(Error::Address {
            address: crate::without_password(address),
            reason: "this build has no PostgreSQL support (the `postgres` feature of agent-store)"
                .into(),
        });
    }
    Ok(Box::new(crate::FileStore::open(address)?))
}

/// Copies every message of `from` into `to`, which must be missing or
/// empty: the messages arrive as they are stored (R3: every field, key
/// order and number kept), in one append. Returns how many were copied.
///
/// # Errors
/// The errors of [`Store::load`] on `from`, and of [`copy_context`].
pub fn copy(from: &mut dyn Store, to: &mut dyn Store) -> Result<usize> {
    copy_context(&from.load()?.context, to)
}

/// [`copy`] from a context already in memory (read from stdin, say).
///
/// # Errors
/// [`Error::NotEmpty`] when `to` already has messages; [`Error::Refused`] when a message is
/// nested too deep (R33) or has an invalid schema (R25); otherwise the errors of
/// [`Store::lock`], [`Store::catch_up`] and [`Store::append_at`] on `to`. Nothing is appended.
pub fn copy_context(source: &Context, to: &mut dyn Store) -> Result<usize> {
    let messages: Vec<Message> = source.messages().collect();
    let mut target = Context::new();
    to.lock()?;
    let result = (|| {
        to.catch_up(&mut target)?;
        if !target.is_empty() {
            return Err(Error::NotEmpty {
                name: to.name().to_owned(),
                messages: target.len(),
            });
        }
        let prepared = target
            .prepare_copy(&messages)
            .map_err(|e| Error::Refused(Box::new(e)))?;
        to.append_at(&prepared)?;
        Ok(prepared.len())
    })();
    to.unlock();
    result
}
