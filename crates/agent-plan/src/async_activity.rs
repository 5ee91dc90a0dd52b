//! Async activities (feature `async`): an activity returning a future, run
//! to completion on the scheduler's worker thread by a minimal executor, so
//! no async runtime is required. Activities that need a runtime's I/O
//! (tokio sockets, say) should enter their runtime inside the future.

use crate::{Activities, Activity};
use agent_core::json::Value;
use agent_output::Outcome;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

/// The future an [`AsyncActivity`] returns.
pub type ActivityFuture<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// Like [`Activity`], but asynchronous.
pub trait AsyncActivity: Send + Sync {
    /// Runs the resolved call.
    fn run<'a>(&'a self, call: &'a Value) -> ActivityFuture<'a>;
}

/// Wakes the thread that is blocked on the future.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on this thread, parking between wake-ups.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}

struct Blocking<A>(A);

impl<A: AsyncActivity> Activity for Blocking<A> {
    fn run(&self, call: &Value) -> Outcome {
        block_on(self.0.run(call))
    }
}

impl Activities {
    /// Registers an async activity for `tool`.
    ///
    /// ```
    /// use agent_output::Outcome;
    /// use agent_plan::{Activities, ActivityFuture, AsyncActivity};
    /// use agent_core::{json, json::Value};
    ///
    /// struct Lookup;
    /// impl AsyncActivity for Lookup {
    ///     fn run<'a>(&'a self, call: &'a Value) -> ActivityFuture<'a> {
    ///         Box::pin(async move { Outcome::Success(json!({"id": call["id"].clone()})) })
    ///     }
    /// }
    /// let mut activities = Activities::new();
    /// activities.register_async("lookup", Lookup);
    /// let out = activities.get("lookup").unwrap().run(&json!({"id": 7}));
    /// assert_eq!(out, Outcome::Success(json!({"id": 7})));
    /// ```
    pub fn register_async(
        &mut self,
        tool: impl Into<String>,
        activity: impl AsyncActivity + 'static,
    ) -> &mut Self {
        self.register(tool, Blocking(activity))
    }
}
