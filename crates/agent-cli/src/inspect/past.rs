//! The context at a past point, folded once and shared by every answer
//! about that point: a page showing a point asks for its views, plan and
//! prompt at once, and each would otherwise refold the log.

use agent_data::Context;
use std::sync::{Arc, Mutex, OnceLock};

/// What was last asked for under one key, computed once: asked for again
/// under that key it is shared, even while it is being computed (those
/// asking meanwhile wait for it); asked for under another key it is
/// replaced, so one value at most is kept.
pub(super) struct Last<K, V> {
    last: Mutex<Option<(K, Arc<OnceLock<V>>)>>,
}

impl<K, V> Default for Last<K, V> {
    fn default() -> Self {
        Last {
            last: Mutex::new(None),
        }
    }
}

impl<K: PartialEq, V: Clone> Last<K, V> {
    /// The value kept under `key`, or `compute`d now and kept.
    pub(super) fn get(&self, key: K, compute: impl FnOnce() -> V) -> V {
        let cell = {
            let mut last = self
                .last
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match &*last {
                Some((kept, cell)) if *kept == key => Arc::clone(cell),
                _ => {
                    let cell = Arc::new(OnceLock::new());
                    *last = Some((key, Arc::clone(&cell)));
                    cell
                }
            }
        };
        cell.get_or_init(compute).clone()
    }
}

/// The most recently asked past point and its context (one: a jump
/// replaces it, so the server holds at most one past context beside the
/// latest).
#[derive(Default)]
pub(super) struct Past {
    last: Last<usize, Result<Arc<Context>, String>>,
}

impl Past {
    /// The first `at` messages of `whole`, folded: the one kept when it is
    /// of `at`, else folded now (requests for the same point meanwhile
    /// wait for this one instead of folding again). The log only grows,
    /// so a point's context never changes.
    pub(super) fn at(&self, whole: &Context, at: usize) -> Result<Arc<Context>, String> {
        self.last.get(at, || {
            whole.prefix(at).map(Arc::new).map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn d75_a_past_point_is_folded_once_and_replaced_by_the_next_one_asked() {
        let whole = Context::from_json(
            r#"[{"type":"state","data":{"n":1}},{"type":"state","data":{"n":2}},{"type":"state","data":{"n":3}}]"#,
        )
        .unwrap();
        let past = Past::default();
        let one = past.at(&whole, 1).unwrap();
        assert_eq!(one.len(), 1);
        assert!(
            Arc::ptr_eq(&one, &past.at(&whole, 1).unwrap()),
            "folded twice"
        );
        let two = past.at(&whole, 2).unwrap();
        assert_eq!(two.len(), 2);
        assert!(
            !Arc::ptr_eq(&one, &past.at(&whole, 1).unwrap()),
            "kept two points"
        );
        assert_eq!(
            past.at(&whole, 9).unwrap_err(),
            whole.prefix(9).unwrap_err().to_string()
        );
    }
}
