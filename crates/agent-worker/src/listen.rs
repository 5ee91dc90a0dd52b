//! The listener thread: notifications on the calls' channel wake the
//! worker, so an idle worker sleeps instead of polling.

use crate::Error;
use crate::worker::Event;
use agent_store::Listener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// How long the listening thread waits at a time before it looks whether
/// its worker has stopped.
const LOOK: Duration = Duration::from_secs(1);

/// A minute without news also wakes the worker (a safety net for a
/// notification lost with a connection).
const QUIET: Duration = Duration::from_secs(60);

/// Stops the listening thread when dropped (within [`LOOK`]), which lets
/// its listener go: a pool's shared listening connection closes once its
/// last listener is gone.
pub(crate) struct Listening(Arc<AtomicBool>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Starts a thread that turns notifications into [`Event::Changed`], reconnecting
/// when the database goes away; it ends when the worker does.
pub(crate) fn listen(
    mut listener: Listener,
    worker: &str,
    sender: Sender<Event>,
) -> Result<Listening, Error> {
    let stopped = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&stopped);
    std::thread::Builder::new()
        .name("agentctx-listen".into())
        .spawn(move || {
            let mut quiet_since = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                match listener.wait(LOOK) {
                    Ok(false) if quiet_since.elapsed() < QUIET => continue,
                    Ok(_) => {
                        quiet_since = Instant::now();
                        // A send that fails says the worker has stopped.
                        if sender.send(Event::Changed).is_err() {
                            return;
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(500)),
                }
            }
        })
        .map_err(|source| Error::Thread {
            worker: worker.to_owned(),
            thread: "its listener".into(),
            source,
        })?;
    Ok(Listening(stopped))
}
