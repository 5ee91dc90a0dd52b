//! [`Listener`]: a connection that sleeps until a call changes (LISTEN on
//! the channel every change of a call notifies), so idle workers need not
//! poll. Through a transaction pooler LISTEN cannot work (the session that
//! listened serves others, and notifications reach whoever holds it), so
//! there it polls, and says so once (D109: behind a pooler). The
//! listeners of one [`PgPool`](super::PgPool) share one connection (D114:
//! a pool per process).

use super::address::Address;
use super::client::{Client, Waited};
use super::pool::Hub;
use super::session::describe;
use super::sql::CHANNEL;
use crate::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a listener behind a pooler wakes its worker to look.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Whether this process already said that it polls.
static SAID: AtomicBool = AtomicBool::new(false);

/// A connection listening on the channel `agentctx_calls` (which every
/// change of a call notifies): what lets an idle worker sleep until
/// something changes instead of polling. The listeners of one
/// [`PgPool`](super::PgPool) share one connection.
pub struct Listener {
    kind: Kind,
}

enum Kind {
    /// A connection of its own.
    Own(Box<Own>),
    /// A pool's listener: its shared connection's hub, and how many
    /// changes it had heard when this listener last looked.
    Shared { hub: Arc<Hub>, seen: u64 },
}

struct Own {
    address: Address,
    client: Option<Client>,
    /// Behind a pooler: no connection is kept, and waiting is polling.
    polls: bool,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("Listener");
        match &self.kind {
            Kind::Own(own) => out
                .field("name", &own.address.shown)
                .field("connected", &own.client.is_some()),
            Kind::Shared { .. } => out.field("shared", &true),
        };
        out.field("polls", &self.polls()).finish()
    }
}

impl Listener {
    /// Starts listening for changes of the calls of the context at `url`;
    /// through a transaction pooler, where it polls instead, it says so on
    /// standard error (once per process).
    ///
    /// # Errors
    /// [`Error::Address`] when `url` cannot be used; [`Error::Database`] when connecting or
    /// `LISTEN` fails.
    pub fn open(url: &str) -> Result<Listener> {
        Listener::from_address(Address::parse(url)?)
    }

    /// [`Listener::open`] for a parsed address.
    pub(crate) fn from_address(address: Address) -> Result<Listener> {
        let mut own = Own {
            address,
            client: None,
            polls: false,
        };
        own.connect()?;
        if own.polls && !SAID.swap(true, Ordering::Relaxed) {
            eprintln!(
                "agentctx: {} goes through a connection pooler, where LISTEN cannot be used: \
                 idle workers look for work every {} s instead of being woken",
                own.address.shown,
                POLL_INTERVAL.as_secs_f64()
            );
        }
        Ok(Listener {
            kind: Kind::Own(Box::new(own)),
        })
    }

    /// A pool's listener, woken through its shared connection's hub.
    pub(crate) fn shared(hub: Arc<Hub>) -> Listener {
        let seen = hub.heard();
        Listener {
            kind: Kind::Shared { hub, seen },
        }
    }

    /// True when it polls: the connection goes through a transaction
    /// pooler, which cannot deliver notifications.
    ///
    /// ```no_run
    /// let listener = agent_store::Listener::open("postgres://root@127.0.0.1:6432/test?context=c")?;
    /// println!("{}", if listener.polls() { "polling" } else { "listening" });
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    pub fn polls(&self) -> bool {
        match &self.kind {
            Kind::Own(own) => own.polls,
            Kind::Shared { hub, .. } => hub.polls(),
        }
    }

    /// Waits up to `timeout` for a notification (any context's: a spurious
    /// wake-up costs one look at the calls). True when one came; after a
    /// lost connection, which may have hidden one, it reconnects and says
    /// true as well. An error only when it cannot reconnect. When it polls,
    /// it sleeps up to a second and says true. A pool's listener says true
    /// when its shared connection heard a change since it last looked, or
    /// was lost (while the database is away, about every half second); it
    /// never fails.
    ///
    /// # Errors
    /// [`Error::Database`] when it cannot connect again and listen.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        match &mut self.kind {
            Kind::Own(own) => own.wait(timeout),
            Kind::Shared { hub, seen } => {
                let heard = hub.wait_after(*seen, timeout);
                let changed = heard != *seen;
                *seen = heard;
                Ok(changed)
            }
        }
    }
}

impl Own {
    /// The listening connection, connecting first if needed; `None` when
    /// it polls.
    fn connect(&mut self) -> Result<Option<&mut Client>> {
        if self.polls {
            return Ok(None);
        }
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            let mut client = Client::connect(&self.address).map_err(|reason| Error::Database {
                action: "listen to",
                name: self.address.shown.clone(),
                reason,
            })?;
            if client.pooled() {
                // Nothing to keep open: polling needs no connection.
                self.polls = true;
                return Ok(None);
            }
            client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .map_err(|e| Error::Database {
                    action: "listen to",
                    name: self.address.shown.clone(),
                    reason: describe(&e),
                })?;
            self.client = Some(client);
        }
        Ok(self.client.as_mut())
    }

    fn wait(&mut self, timeout: Duration) -> Result<bool> {
        let was_connected = self.client.as_ref().is_some_and(|c| !c.is_closed());
        let Some(client) = self.connect()? else {
            std::thread::sleep(timeout.min(POLL_INTERVAL));
            return Ok(true);
        };
        if !was_connected {
            return Ok(true);
        }
        match client.wait_notification(timeout) {
            Waited::Notified => Ok(true),
            Waited::TimedOut => Ok(false),
            Waited::Lost => {
                self.client = None;
                Ok(true)
            }
        }
    }
}
