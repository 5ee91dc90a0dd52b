//! [`Listener`]: a connection that sleeps until a call changes (LISTEN on
//! the channel every change of a call notifies), so idle workers need not
//! poll.

use super::address::Address;
use super::client::{Client, Waited};
use super::session::describe;
use super::sql::CHANNEL;
use crate::{Error, Result};
use std::time::Duration;

/// A connection listening on the channel `agentctx_calls` (which every
/// change of a call notifies): what lets an idle worker sleep until
/// something changes instead of polling.
pub struct Listener {
    config: tokio_postgres::Config,
    idle: Option<Duration>,
    shown: String,
    client: Option<Client>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("name", &self.shown)
            .field("connected", &self.client.is_some())
            .finish()
    }
}

impl Listener {
    /// Starts listening for changes of the calls of the context at `url`.
    ///
    /// # Errors
    /// [`Error::Address`] when `url` cannot be used; [`Error::Database`] when connecting or
    /// `LISTEN` fails.
    pub fn open(url: &str) -> Result<Listener> {
        let address = Address::parse(url)?;
        let mut listener = Listener {
            config: address.config,
            idle: address.idle,
            shown: address.shown,
            client: None,
        };
        listener.connect()?;
        Ok(listener)
    }

    fn connect(&mut self) -> Result<&mut Client> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            let mut client =
                Client::connect(&self.config, self.idle).map_err(|reason| Error::Database {
                    action: "listen to",
                    name: self.shown.clone(),
                    reason,
                })?;
            client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .map_err(|e| Error::Database {
                    action: "listen to",
                    name: self.shown.clone(),
                    reason: describe(&e),
                })?;
            self.client = Some(client);
        }
        self.client.as_mut().ok_or_else(|| Error::Database {
            action: "listen to",
            name: self.shown.clone(),
            reason: "not connected".into(),
        })
    }

    /// Waits up to `timeout` for a notification (any context's: a spurious
    /// wake-up costs one look at the calls). True when one came; after a
    /// lost connection, which may have hidden one, it reconnects and says
    /// true as well. An error only when it cannot reconnect.
    ///
    /// # Errors
    /// [`Error::Database`] when it cannot connect again and listen.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        let was_connected = self.client.as_ref().is_some_and(|c| !c.is_closed());
        let client = self.connect()?;
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
