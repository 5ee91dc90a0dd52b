//! A stored context's writes made at most once per key (D47: append
//! keys): the same writes as `append`, `apply` and `apply_all`, each one
//! append the store keeps with its key.

use super::StoredContext;
use crate::{Appendable, Result};
use agent_core::json::Value;
use agent_data::{Append, AppendKey, KeyedAppend, KeyedOutcome};
use agent_output::{Call, Clock, Outcome};
use std::borrow::Borrow;

impl StoredContext {
    /// Runs `write` with an appender that appends under `key`, the clock
    /// and the allowed `_` keys; what it appended, or an empty range at
    /// the end when it appended nothing.
    fn keyed(
        &mut self,
        key: &AppendKey,
        write: impl FnOnce(&mut dyn Append, &dyn Clock, &[String]) -> Result<()>,
    ) -> Result<KeyedOutcome> {
        let StoredContext {
            stored,
            clock,
            allowed,
            ..
        } = self;
        let mut keyed = KeyedAppend::new(stored, key.clone());
        write(&mut keyed, clock.as_ref(), allowed)?;
        let outcome = keyed.outcome().cloned();
        let end = self.context().len();
        Ok(outcome.unwrap_or(KeyedOutcome::Appended(end..end)))
    }

    /// [`append`](Self::append) at most once per `key`: the store keeps the
    /// key with the append, atomically, so sending the same messages again
    /// with the same key — after any outcome, an in-doubt one included,
    /// from any process — appends nothing. [`KeyedOutcome::Already`] then
    /// names the messages the first append wrote. Files, PostgreSQL and
    /// contexts in memory keep keys ([`crate::store::KEY_DAYS`] days in a
    /// file or database).
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::data::{AppendKey, KeyedOutcome};
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// let key = AppendKey::new("order-42")?;
    /// let first = ctx.append_once(json!({"type": "state", "data": {"paid": true}}), &key)?;
    /// let again = ctx.append_once(json!({"type": "state", "data": {"paid": true}}), &key)?;
    /// assert_eq!(first, KeyedOutcome::Appended(0..1));
    /// assert_eq!(again, KeyedOutcome::Already(0..1));
    /// assert_eq!(ctx.context().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`append`](Self::append). After any error, an in-doubt one
    /// included, the same call with the same key appends at most once.
    pub fn append_once(
        &mut self,
        messages: impl Appendable,
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        self.keyed(key, |target, _, allowed| {
            crate::append::append(target, messages, allowed).map(drop)
        })
    }

    /// [`apply`](Self::apply) at most once per `key`, as
    /// [`append_once`](Self::append_once) appends; the messages are
    /// [`message`](Self::message)s in the range returned.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::data::AppendKey;
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// let call = json!({"_tool": "charge", "_outputPath": "†state.receipt"});
    /// let key = AppendKey::new("charge-7")?;
    /// ctx.apply_once(call.clone(), Outcome::Success(json!("r-1")), &key)?;
    /// let again = ctx.apply_once(call, Outcome::Success(json!("r-2")), &key)?;
    /// assert!(again.is_already());
    /// assert_eq!(ctx.get("†state.receipt")?, json!("r-1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`apply`](Self::apply).
    pub fn apply_once(
        &mut self,
        call: Value,
        outcome: Outcome,
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        let call = Call::parse(call)?;
        self.keyed(key, |target, clock, allowed| {
            crate::append::apply(target, &call, outcome, clock, allowed).map(drop)
        })
    }

    /// [`apply_all`](Self::apply_all) at most once per `key`: one append,
    /// all or none, kept with its key.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::data::{AppendKey, KeyedOutcome};
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// let a = Call::parse(json!({"_tool": "a", "_outputPath": "†state.a"}))?;
    /// let b = Call::parse(json!({"_tool": "b", "_outputPath": "†state.b"}))?;
    /// let key = AppendKey::new("both")?;
    /// let results = || [(&a, Outcome::Success(json!(1))), (&b, Outcome::Success(json!(2)))];
    /// assert_eq!(ctx.apply_all_once(results(), &key)?, KeyedOutcome::Appended(0..2));
    /// assert_eq!(ctx.apply_all_once(results(), &key)?, KeyedOutcome::Already(0..2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`apply_all`](Self::apply_all).
    pub fn apply_all_once<C: Borrow<Call>>(
        &mut self,
        results: impl IntoIterator<Item = (C, Outcome)>,
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        self.keyed(key, |target, clock, allowed| {
            crate::append::apply_all(target, results, clock, allowed).map(drop)
        })
    }
}
