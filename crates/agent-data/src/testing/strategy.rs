//! Generators of values, paths, methods and data messages, as this
//! repository's own property tests use them.

use agent_core::json::{Map, Value};
use agent_core::{Instance, Kind, Method, Path, Segment};
use proptest::prelude::*;

use crate::{Context, DataMessage, Message};

/// The kinds [`log`] writes.
pub const KINDS: [&str; 2] = ["state", "input"];
/// The instances [`data_message`] writes to (`None`: the global layer).
pub const INSTANCES: [Option<&str>; 3] = [None, Some("x"), Some("y")];

/// Small JSON values: nulls, small integers, short strings, arrays and
/// objects two levels deep over keys `a` and `b` (so writes collide).
pub fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        (0i64..4).prop_map(Value::from),
        "[pq]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec(("[ab]", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Paths of up to two segments: keys `a`, `b`, `"0"`, and indexes −1 to 1.
pub fn path() -> impl Strategy<Value = Path> {
    let seg = prop_oneof![
        3 => "[ab]".prop_map(Segment::Key),
        1 => Just(Segment::Key("0".into())),
        1 => (-1i64..2).prop_map(Segment::Index),
    ];
    prop::collection::vec(seg, 0..3).prop_map(Path::from_segments)
}

/// Any of the six methods.
pub fn method() -> impl Strategy<Value = Method> {
    prop::sample::select(Method::ALL.to_vec())
}

/// A data message as the wire would carry it: plain (merge at the root, or
/// an erase of the whole view) or an output message with `_outputPath` and
/// `_outputMethod`.
pub fn data_message(kinds: &'static [&'static str]) -> impl Strategy<Value = DataMessage> {
    (
        prop::sample::select(kinds.to_vec()),
        prop::sample::select(INSTANCES.to_vec()),
        path(),
        method(),
        value(),
        any::<bool>(),
    )
        .prop_filter_map(
            "a valid data message",
            |(kind, instance, path, method, value, plain)| {
                let mut m = Map::new();
                m.insert("type".into(), "data".into());
                m.insert("kind".into(), kind.into());
                // An erase holds null where its value would be (R10b).
                let value = if method == Method::Erase {
                    Value::Null
                } else {
                    value
                };
                if plain && method == Method::Erase {
                    // A plain erase: the whole view.
                    m.insert("data".into(), value);
                    m.insert("_outputMethod".into(), method.as_str().into());
                } else if plain {
                    m.insert("data".into(), value);
                } else {
                    m.insert("data".into(), path.nest(value));
                    m.insert("_outputPath".into(), format!("†{kind}{path}").into());
                    m.insert("_outputMethod".into(), method.as_str().into());
                }
                if let Some(x) = instance {
                    m.insert("_instance".into(), x.into());
                }
                DataMessage::from_value(Value::Object(m)).ok()
            },
        )
}

/// Logs of fewer than `max` data messages over [`KINDS`].
pub fn log(max: usize) -> impl Strategy<Value = Vec<DataMessage>> {
    prop::collection::vec(data_message(&KINDS), 0..max)
}

/// Every view [`log`]'s messages can write: each kind, globally and in
/// each instance.
pub fn every_read() -> Vec<(Kind, Option<Instance>)> {
    let kinds = KINDS.iter().filter_map(|k| Kind::new(*k).ok());
    kinds
        .flat_map(|kind| {
            INSTANCES.iter().filter_map(move |x| match x {
                None => Some((kind.clone(), None)),
                Some(x) => Instance::new(*x).ok().map(|x| (kind.clone(), Some(x))),
            })
        })
        .collect()
}

/// The views of [`every_read`] in `ctx`.
pub fn views(ctx: &Context) -> Vec<Option<Value>> {
    every_read()
        .iter()
        .map(|(k, x)| ctx.view(k, x.as_ref()).cloned())
        .collect()
}

/// A context of `messages`, in order.
///
/// # Errors
///
/// What [`Context::from_messages`] refuses.
pub fn to_context(messages: Vec<DataMessage>) -> crate::Result<Context> {
    Context::from_messages(messages.into_iter().map(Message::from).collect())
}
