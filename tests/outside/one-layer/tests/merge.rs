//! Merge semantics, property-tested in a few lines with the strategies and
//! the reference model agent-data exports (its `proptest` feature), beside
//! the crate's own serde_json code, which keeps serde_json's defaults.

use agent_data::json::{self, Value};
use agent_data::testing::{every_read, log, naive_merge, naive_view, to_context, value};
use agent_data::{Context, Kind, Message};
use proptest::prelude::*;

fn merge(patch: &Value) -> Message {
    let text = format!(r#"{{"type": "state", "data": {patch}}}"#);
    Message::from_value(json::from_str(&text).unwrap())
        .unwrap()
        .remove(0)
}

/// An object of up to four members, each any value (objects nested).
fn object() -> impl Strategy<Value = Value> {
    prop::collection::vec(("[a-c]", value()), 0..4)
        .prop_map(|members| Value::Object(members.into_iter().collect()))
}

proptest! {
    #[test]
    fn d67_the_fold_is_the_reference_model(messages in log(16)) {
        let ctx = to_context(messages).unwrap();
        for (kind, instance) in every_read() {
            let (expected, _) = naive_view(&ctx, &kind, instance.as_ref());
            prop_assert_eq!(ctx.view(&kind, instance.as_ref()).cloned(), expected);
        }
    }

    #[test]
    fn r10_merging_an_object_twice_is_merging_it_once(base in object(), patch in object()) {
        let state = Kind::new("state").unwrap();
        let mut ctx = Context::new();
        ctx.append(&merge(&base)).unwrap();
        ctx.append(&merge(&patch)).unwrap();
        let once = ctx.view(&state, None).cloned();
        ctx.append(&merge(&patch)).unwrap();
        prop_assert_eq!(ctx.view(&state, None).cloned(), once.clone());
        prop_assert_eq!(once, Some(naive_merge(base, patch)));
    }
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(untagged)]
enum Amount {
    Whole(i64),
    Fraction(f64),
}

#[test]
fn d66_the_crates_own_serde_json_keeps_its_defaults() {
    assert_eq!(
        serde_json::from_str::<Amount>("1.5").unwrap(),
        Amount::Fraction(1.5)
    );
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(serde_json::from_str::<serde_json::Value>(&deep).is_err());
}
