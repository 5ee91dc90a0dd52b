//! The listener thread: notifications on the calls' channel wake the
//! worker, so an idle worker sleeps instead of polling.

use crate::Error;
use crate::worker::Event;
use agent_store::Listener;
use std::sync::mpsc::Sender;
use std::time::Duration;

/// Starts a thread that turns notifications into [`Event::Changed`], reconnecting
/// when the database goes away; it ends when the worker does.
pub(crate) fn listen(
    mut listener: Listener,
    worker: &str,
    sender: Sender<Event>,
) -> Result<(), Error> {
    std::thread::Builder::new()
        .name("agentctx-listen".into())
        .spawn(move || {
            loop {
                // A minute without news also wakes the worker: a send that
                // fails says it has stopped, and this thread ends.
                match listener.wait(Duration::from_secs(60)) {
                    Ok(_) => {
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
    Ok(())
}
