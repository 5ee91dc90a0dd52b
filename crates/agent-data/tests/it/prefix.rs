//! The context at a point of its log (R34f): after its first K messages,
//! numbered as `Context` numbers them, it is the fold of those K messages.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::*;
use agent_core::json;
use agent_data::{Context, Error, Format, Kind};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn r34f_the_context_after_k_messages_is_the_fold_of_loading_only_those(
        messages in log(24),
        at in any::<prop::sample::Index>(),
    ) {
        let whole = to_context(messages.clone());
        let k = at.index(messages.len() + 1);
        let prefix = whole.prefix(k).unwrap();
        let only = to_context(messages[..k].to_vec());
        prop_assert_eq!(prefix.len(), k);
        prop_assert_eq!(views(&prefix), views(&only));
        prop_assert_eq!(prefix.diagnostics(), only.diagnostics());
        prop_assert_eq!(prefix.head(), only.head());
        prop_assert_eq!(prefix.to_jsonl(), only.to_jsonl());
        let ids = |c: &Context| c.instances().map(|x| x.to_string()).collect::<Vec<_>>();
        prop_assert_eq!(ids(&prefix), ids(&only));
        // The whole log is unchanged by looking back into it.
        prop_assert_eq!(whole.len(), messages.len());
    }
}

/// A line that normalises to two messages (R1) counts as two points.
#[test]
fn r34f_points_number_messages_as_the_context_does_not_lines() {
    let text = concat!(
        r#"{"type":"data","kind":"state","data":{"a":1},"_outputPath":"†state.a"}"#,
        "\n",
        r#"{"type":"state","data":{"b":2}}"#,
        "\n",
    );
    let whole = Context::load(text.as_bytes(), Format::Jsonl)
        .unwrap()
        .context;
    let state = Kind::new("state").unwrap();
    let views: Vec<_> = (0..=whole.len())
        .map(|k| whole.prefix(k).unwrap().view(&state, None).cloned())
        .collect();
    assert_eq!(whole.len(), 2, "{}", whole.to_jsonl());
    assert_eq!(
        views,
        [None, Some(json!({"a": 1})), Some(json!({"a": 1, "b": 2}))]
    );
    assert_eq!(
        whole.prefix(1).unwrap().message_json(0),
        whole.message_json(0)
    );
}

#[test]
fn r34f_point_zero_is_the_empty_context_and_the_end_is_the_whole() {
    let whole = Context::from_json(r#"[{"type":"state","data":{"n":1}}]"#).unwrap();
    let empty = whole.prefix(0).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.head(), Context::new().head());
    assert_eq!(whole.prefix(1).unwrap().to_jsonl(), whole.to_jsonl());
}

#[test]
fn r34f_a_point_past_the_end_is_an_error_naming_the_length() {
    let whole = Context::from_json(r#"[{"type":"state","data":{"n":1}}]"#).unwrap();
    let error = whole.prefix(2).unwrap_err();
    assert!(
        matches!(error, Error::PastTheEnd { at: 2, len: 1 }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the context has 1 message(s): there is no point after its first 2 (choose 0 to 1)"
    );
}

#[test]
fn r34f_a_point_a_snapshot_summarised_is_an_error_saying_to_load_it_whole() {
    let whole =
        Context::from_json(r#"[{"type":"state","data":{"n":1}},{"type":"state","data":{"n":2}}]"#)
            .unwrap();
    let snapshot = whole.snapshot(&json!(null)).unwrap();
    let (opened, _) = Context::from_snapshot(&snapshot).unwrap();
    // The end needs nothing the snapshot dropped.
    assert_eq!(opened.prefix(2).unwrap().head(), whole.head());
    // Global writes are summarised by the views, not held.
    assert!(!opened.is_complete());
    let error = opened.prefix(1).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot go back to the first 1 message(s): this context was opened from a snapshot and holds its messages only from 2 on; load it whole"
    );
}
