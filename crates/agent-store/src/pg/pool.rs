//! [`PgPool`]: one process's connections to one database, shared by the
//! stores, call tables and listeners opened from it (D114: a pool per
//! process), so a thousand workers or contexts in one process hold at most
//! the pool's size of server connections, and one more to listen.
//!
//! A store of a pool holds a connection only during a call (a load, an
//! append, a claim): it takes one when the call needs it and gives it back
//! when the call returns, unless a transaction of its own is open, which
//! never moves to another connection. The connections stay open between
//! calls; one the server closed is opened again by the next store that
//! takes its place. Listeners share one listening connection, whose
//! notifications wake them all.

use super::address::{Address, without_context};
use super::client::Client;
use super::listen::Listener;
use super::{PgCalls, PgStore};
use crate::{Error, Result};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

/// How long a call waits for a connection of a pool whose every
/// connection is in use, unless [`PgPool::with_wait`] says.
const WAIT: Duration = Duration::from_secs(30);

/// How often the listening thread looks whether its pool's listeners are
/// all gone (and then ends, closing its connection).
const HUB_CHECK: Duration = Duration::from_secs(1);

/// Connections to one PostgreSQL database, shared by the [`PgStore`]s,
/// [`PgCalls`] and [`Listener`]s opened from it: the process holds at most
/// `size` server connections for them, however many there are, and one
/// more while a listener is open. Cloning it shares the same connections.
///
/// A store of the pool takes a connection for each call and gives it back
/// when the call returns (a transaction of its own keeps it until it
/// ends); a call that finds every connection in use waits for one, up to
/// 30 s ([`PgPool::with_wait`]), then fails with [`Error::Database`].
///
/// ```no_run
/// use agent_store::{PgPool, Store};
///
/// // One pool for the process: ten connections, whatever the contexts.
/// let pool = PgPool::open("postgres://root@127.0.0.1:5432/test", 10)?;
/// let mut handles = Vec::new();
/// for i in 0..100 {
///     let pool = pool.clone();
///     handles.push(std::thread::spawn(move || {
///         let mut store = pool.store(&format!("conversation-{i}"))?;
///         let mut context = agent_data::Context::new();
///         store.catch_up(&mut context)?; // empty if it does not exist yet
///         Ok::<_, agent_store::Error>(context.len())
///     }));
/// }
/// for handle in handles {
///     let _messages = handle.join().expect("thread")?;
/// }
/// assert!(pool.connections() <= 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PgPool {
    shared: Arc<Shared>,
    wait: Duration,
}

impl std::fmt::Debug for PgPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgPool")
            .field("server", &self.shared.address.shown)
            .field("size", &self.shared.size)
            .field("connections", &self.connections())
            .finish()
    }
}

struct Shared {
    /// The server's address; its context is empty (each store names its
    /// own).
    address: Address,
    /// The URL it was opened with, its context left out: a URL naming
    /// this pool's server and credentials is exactly this and a context.
    base: String,
    size: usize,
    state: Mutex<State>,
    freed: Condvar,
    /// The listening connection's hub, while some listener holds it.
    hub: Mutex<Weak<Hub>>,
}

#[derive(Default)]
struct State {
    idle: Vec<Parked>,
    /// Connections open or being opened: idle, or held by a store.
    permits: usize,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The right to hold one of the pool's connections: dropping it makes room
/// for another. Weak: the pool's idle connections hold their permits, and
/// a strong one would keep a pool nobody uses alive, its connections open.
pub(crate) struct Permit(Weak<Shared>);

impl Drop for Permit {
    fn drop(&mut self) {
        let Some(shared) = self.0.upgrade() else {
            return;
        };
        let mut state = shared.state();
        state.permits = state.permits.saturating_sub(1);
        drop(state);
        shared.freed.notify_one();
    }
}

/// An open connection waiting in the pool, with its server session (on a
/// direct connection) and its permit.
pub(crate) struct Parked {
    pub(crate) client: Client,
    pub(crate) backend: Option<(i32, String)>,
    pub(crate) permit: Permit,
}

/// What a store is given: an open connection, or the right to open one.
pub(crate) enum Lent {
    Open(Box<Parked>),
    Room(Permit),
}

impl PgPool {
    /// A pool of at most `size` connections (0 counts as 1) to the database
    /// at `url`; its `context` parameter, if any, is not used (each store
    /// names its own). Connects once, creating or upgrading the tables if
    /// needed, and keeps that connection.
    ///
    /// # Errors
    /// [`Error::Address`] when `url` cannot be used; otherwise those of
    /// [`PgStore::open`].
    pub fn open(url: &str, size: usize) -> Result<PgPool> {
        let pool = PgPool {
            shared: Arc::new(Shared {
                address: Address::parse_server(url)?,
                base: without_context(url),
                size: size.max(1),
                state: Mutex::new(State::default()),
                freed: Condvar::new(),
                hub: Mutex::new(Weak::new()),
            }),
            wait: WAIT,
        };
        let mut first = PgStore::at(pool.shared.address.clone(), Some(pool.clone()));
        first.lent(|store| store.client().map(|_| ()))?;
        Ok(pool)
    }

    /// This handle (and the stores opened from it) waiting up to `wait`
    /// for a connection when all are in use, instead of 30 s.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let pool = agent_store::PgPool::open("postgres://root@127.0.0.1:5432/test", 4)?
    ///     .with_wait(Duration::from_secs(2));
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    pub fn with_wait(mut self, wait: Duration) -> PgPool {
        self.wait = wait;
        self
    }

    /// A store of the context `name` in this database, using the pool's
    /// connections (the context need not exist). Connects only when a
    /// call needs it.
    ///
    /// # Errors
    /// [`Error::Address`] when `name` is not a context name (empty, too
    /// long, holding a NUL).
    pub fn store(&self, name: &str) -> Result<PgStore> {
        let address = self.shared.address.for_context(name)?;
        Ok(PgStore::at(address, Some(self.clone())))
    }

    /// The store of the context a URL names, on this pool's connections:
    /// `url` must be the pool's own URL, written the same way, with
    /// (another) `context`.
    ///
    /// ```no_run
    /// let url = "postgres://root@127.0.0.1:5432/test?context=run-42";
    /// let pool = agent_store::PgPool::open(url, 4)?;
    /// let store = pool.store_at(url)?;
    /// assert_eq!(store.context_name(), "run-42");
    /// assert!(pool.store_at("postgres://root@127.0.0.1:5433/test?context=run-42").is_err());
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Address`] when `url` cannot be used or names another
    /// server, database, user or options than the pool's.
    pub fn store_at(&self, url: &str) -> Result<PgStore> {
        let address = Address::parse(url)?;
        if without_context(url) != self.shared.base {
            return Err(Error::Address {
                address: address.shown,
                reason: format!(
                    "not on this pool's server: the pool's URL is {}",
                    self.shared.address.shown
                ),
            });
        }
        Ok(PgStore::at(address, Some(self.clone())))
    }

    /// The plan calls of the context `name` ([`PgCalls::open`]), using the
    /// pool's connections.
    ///
    /// # Errors
    /// As [`PgCalls::open`], and [`Error::Address`] for a bad name.
    pub fn calls(&self, name: &str) -> Result<PgCalls> {
        PgCalls::from_store(self.store(name)?)
    }

    /// A listener woken by every change of a call, as
    /// [`Listener::open`]'s; all the pool's listeners share one listening
    /// connection, kept while any of them lives.
    ///
    /// # Errors
    /// As [`Listener::open`].
    pub fn listener(&self) -> Result<Listener> {
        let mut held = self
            .shared
            .hub
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(hub) = held.upgrade() {
            return Ok(Listener::shared(hub));
        }
        let listener = Listener::from_address(self.shared.address.clone())?;
        let hub = Hub::start(listener)?;
        *held = Arc::downgrade(&hub);
        Ok(Listener::shared(hub))
    }

    /// True when `other` shares this pool's connections (a clone of it).
    ///
    /// ```no_run
    /// use agent_store::PgPool;
    /// let pool = PgPool::open("postgres://root@127.0.0.1:5432/test", 2)?;
    /// assert!(pool.same_pool(&pool.clone()));
    /// assert!(!pool.same_pool(&PgPool::open("postgres://root@127.0.0.1:5432/test", 2)?));
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    pub fn same_pool(&self, other: &PgPool) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The pool's server, as messages show it: its URL without a password
    /// or a context.
    ///
    /// ```no_run
    /// let pool = agent_store::PgPool::open("postgres://me:secret@127.0.0.1:5432/test?context=x", 2)?;
    /// assert_eq!(pool.server(), "postgres://me@127.0.0.1:5432/test");
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    pub fn server(&self) -> &str {
        &self.shared.address.shown
    }

    /// The URL of the context `name` on this pool's server, as messages
    /// show it (without a password).
    ///
    /// ```no_run
    /// let pool = agent_store::PgPool::open("postgres://me:secret@127.0.0.1:5432/test", 2)?;
    /// assert_eq!(pool.shown("run-42"), "postgres://me@127.0.0.1:5432/test?context=run-42");
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    pub fn shown(&self, name: &str) -> String {
        self.shared.address.shown_for_context(name)
    }

    /// The most connections the pool opens.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// The connections open now (idle, or held by a store during a call),
    /// the listening one left out.
    ///
    /// ```no_run
    /// let pool = agent_store::PgPool::open("postgres://root@127.0.0.1:5432/test", 4)?;
    /// assert_eq!((pool.connections(), pool.idle()), (1, 1)); // the one `open` made
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    pub fn connections(&self) -> usize {
        self.shared.state().permits
    }

    /// The open connections no store holds now: `connections() - idle()`
    /// are in use.
    pub fn idle(&self) -> usize {
        self.shared.state().idle.len()
    }

    /// An open connection, or the right to open one; waits for one to be
    /// given back when all are in use, up to the handle's wait.
    pub(crate) fn take(&self, shown: &str) -> Result<Lent> {
        let deadline = Instant::now() + self.wait;
        let mut state = self.shared.state();
        loop {
            if let Some(parked) = state.idle.pop() {
                return Ok(Lent::Open(Box::new(parked)));
            }
            if state.permits < self.shared.size {
                state.permits += 1;
                return Ok(Lent::Room(Permit(Arc::downgrade(&self.shared))));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Database {
                    action: "get a connection to",
                    name: shown.to_owned(),
                    reason: format!(
                        "all {} connections of this process's pool were in use for {} s \
                         (PgPool::open's size bounds them; a store holds one only during a call)",
                        self.shared.size,
                        self.wait.as_secs_f64()
                    ),
                });
            }
            state = self
                .shared
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Gives an open connection back.
    pub(crate) fn park(&self, parked: Parked) {
        self.shared.state().idle.push(parked);
        self.shared.freed.notify_one();
    }
}

/// The pool's one listening connection, and how many changes it heard.
pub(crate) struct Hub {
    heard: Mutex<u64>,
    changed: Condvar,
    polls: bool,
}

impl Hub {
    /// Starts the thread that waits on `listener` and wakes every waiter
    /// at each notification; it ends, closing the connection, once no
    /// listener holds the hub.
    fn start(mut listener: Listener) -> Result<Arc<Hub>> {
        let hub = Arc::new(Hub {
            heard: Mutex::new(0),
            changed: Condvar::new(),
            polls: listener.polls(),
        });
        let weak = Arc::downgrade(&hub);
        std::thread::Builder::new()
            .name("agentctx-pool-listen".into())
            .spawn(move || {
                loop {
                    let woke = listener.wait(HUB_CHECK);
                    let Some(hub) = weak.upgrade() else {
                        return;
                    };
                    match woke {
                        Ok(true) => hub.ring(),
                        Ok(false) => {}
                        // Tell the waiters to look, as after a lost
                        // connection, and try again shortly.
                        Err(_) => {
                            hub.ring();
                            drop(hub);
                            std::thread::sleep(Duration::from_millis(500));
                        }
                    }
                }
            })
            .map_err(|e| Error::Database {
                action: "listen to",
                name: "a pool".into(),
                reason: format!("cannot start the listening thread: {e}"),
            })?;
        Ok(hub)
    }

    fn ring(&self) {
        *self.heard.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.changed.notify_all();
    }

    /// How many changes were heard so far.
    pub(crate) fn heard(&self) -> u64 {
        *self.heard.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn polls(&self) -> bool {
        self.polls
    }

    /// Waits up to `timeout` for a change heard after `seen`; the count
    /// heard by then.
    pub(crate) fn wait_after(&self, seen: u64, timeout: Duration) -> u64 {
        let heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        let (heard, _) = self
            .changed
            .wait_timeout_while(heard, timeout, |heard| *heard == seen)
            .unwrap_or_else(PoisonError::into_inner);
        *heard
    }
}
