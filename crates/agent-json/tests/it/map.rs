//! R3 for `agent_json::Map` against a list of members: keys short
//! enough to be held inside their member and keys long enough to live on
//! the heap behave alike, searched in order or through the index.

use agent_json::{Map, Value};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, i64),
    Remove(u8),
    ShiftRemove(u8),
    Retain(u8),
}

/// Key `k`: even ones short (inline), odd ones past any inline limit, one
/// of them with a character of several bytes straddling 15 bytes.
fn key(k: u8) -> String {
    match k % 4 {
        0 | 2 => format!("k{k}"),
        1 => format!("a key long enough to be kept on the heap {k}"),
        _ => format!("twelve bytes{k}é"),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..24, any::<i64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        1 => (0u8..24).prop_map(Op::Remove),
        1 => (0u8..24).prop_map(Op::ShiftRemove),
        1 => (0u8..24).prop_map(Op::Retain),
    ]
}

proptest! {
    /// R3: first-written order, each key once, a repeated key keeps its
    /// place and takes the new value; `remove` swaps the last member in,
    /// `shift_remove` and `retain` keep the order; every view of the map
    /// (borrowed, owned, by key) agrees with the list.
    #[test]
    fn r3_a_map_with_inline_and_heap_keys_behaves_as_its_list(ops in prop::collection::vec(op(), 0..100)) {
        let mut map = Map::new();
        let mut model: Vec<(String, i64)> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    let old = map.insert(key(k), Value::from(v));
                    match model.iter_mut().find(|(mk, _)| *mk == key(k)) {
                        Some(slot) => {
                            prop_assert_eq!(old, Some(Value::from(slot.1)));
                            slot.1 = v;
                        }
                        None => {
                            prop_assert_eq!(old, None);
                            model.push((key(k), v));
                        }
                    }
                }
                Op::Remove(k) => {
                    let at = model.iter().position(|(mk, _)| *mk == key(k));
                    let expected = at.map(|i| Value::from(model.swap_remove(i).1));
                    prop_assert_eq!(map.remove(&key(k)), expected);
                }
                Op::ShiftRemove(k) => {
                    let at = model.iter().position(|(mk, _)| *mk == key(k));
                    let expected = at.map(|i| Value::from(model.remove(i).1));
                    prop_assert_eq!(map.shift_remove(&key(k)), expected);
                }
                Op::Retain(k) => {
                    map.retain(|mk, _| mk != key(k));
                    model.retain(|(mk, _)| *mk != key(k));
                }
            }
            let expected: Vec<(String, Value)> =
                model.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
            let borrowed: Vec<(String, Value)> =
                map.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect();
            prop_assert_eq!(&borrowed, &expected);
            let owned: Vec<(String, Value)> = map.clone().into_iter().collect();
            prop_assert_eq!(&owned, &expected);
            let keys: Vec<&str> = map.keys().collect();
            prop_assert_eq!(keys, model.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>());
            for k in 0..24u8 {
                let expected = model.iter().find(|(mk, _)| *mk == key(k)).map(|(_, v)| Value::from(*v));
                prop_assert_eq!(map.get(&key(k)).cloned(), expected);
            }
        }
    }
}

/// A reader's keys are the same whether or not they fit inline: escaped,
/// multi-byte and long keys read back as written, and a repeated one
/// keeps its first place and its last value (R3).
#[test]
fn r3_keys_read_from_text_are_kept_whole_at_any_length() {
    let long = "k".repeat(40);
    let text = format!(
        r#"{{"a":1,"\u00e9t\u00e9 fifteen b":2,"{long}":3,"fifteen bytes!!":4,"sixteen bytes!!!":5,"a":6}}"#
    );
    let value: Value = agent_json::from_str(&text).unwrap();
    let map = value.as_object().unwrap();
    let keys: Vec<&str> = map.keys().collect();
    assert_eq!(
        keys,
        [
            "a",
            "été fifteen b",
            long.as_str(),
            "fifteen bytes!!",
            "sixteen bytes!!!"
        ]
    );
    assert_eq!(map.get("a"), Some(&Value::from(6)));
    assert_eq!(map.get(&long), Some(&Value::from(3)));
    assert_eq!(
        agent_json::to_string(&value),
        format!(
            r#"{{"a":6,"été fifteen b":2,"{long}":3,"fifteen bytes!!":4,"sixteen bytes!!!":5}}"#
        )
    );
}
