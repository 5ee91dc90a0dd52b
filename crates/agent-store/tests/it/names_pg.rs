//! Listing the contexts of a database a page at a time
//! (`PgStore::context_names`).

use super::support::pg::{open, with_context};
use agent_core::json;
use agent_data::{Context, Message};
use agent_store::{MAX_NAMES, Store};

#[test]
fn spec10_context_names_are_listed_in_order_a_page_after_a_name() {
    // Letters and digits only: every collation orders them alike.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("names{}x{nanos}", std::process::id());
    let names: Vec<String> = ["c", "a", "b", "d"]
        .iter()
        .map(|s| format!("{prefix}{s}"))
        .collect();
    for name in &names {
        let mut store = open(&with_context(name));
        let message =
            Message::from_value(json!({"type": "state", "data": {"name": name}})).unwrap();
        store.commit(&mut Context::new(), &message).unwrap();
    }
    let mut store = open(&with_context(&names[0]));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(store.context_names(&prefix, 3).unwrap(), sorted[..3]);
    // The next page starts after the last name of this one.
    let next = store.context_names(&sorted[2], 1).unwrap();
    assert_eq!(next, sorted[3..]);
    assert!(store.context_names(&prefix, 0).unwrap().is_empty());
    // At most MAX_NAMES at once, however many are asked for.
    assert!(store.context_names("", usize::MAX).unwrap().len() <= MAX_NAMES);
}
