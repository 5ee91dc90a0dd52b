//! Which messages made a value (`/api/provenance`): a function of the
//! context as it was at the point asked; the route in `api.rs` takes it
//! there.

use agent_core::json;
use agent_core::json::Value;
use agent_core::{Instance, Kind, Method, Path, Segment};
use agent_data::{Context, Message};

/// Where a value is asked about: a kind's view, global or as one instance
/// reads it, and a path into it given as its segments (a JSON array of
/// keys and indices, so no key needs escaping).
pub(super) struct Place {
    /// The view's kind.
    pub(super) kind: Kind,
    /// The instance reading it; `None` for the global view.
    pub(super) instance: Option<Instance>,
    /// The path into the view.
    pub(super) path: Path,
}

impl Place {
    /// Reads `kind`, `instance` and `path` as the query gives them.
    pub(super) fn parse(kind: &str, instance: Option<&str>, path: &str) -> Result<Place, String> {
        let kind = Kind::new(kind).map_err(|e| format!("kind: {e}"))?;
        let instance = instance
            .filter(|i| !i.is_empty())
            .map(Instance::new)
            .transpose()
            .map_err(|e| format!("instance: {e}"))?;
        let segments = match json::from_str(path) {
            Ok(Value::Array(segments)) => segments,
            _ => {
                return Err(format!(
                    "path {}: expected a JSON array of keys (strings) and indices (integers), \
                     such as [\"user\",\"tags\",0]",
                    agent_core::quoted(path)
                ));
            }
        };
        let segments = segments
            .iter()
            .map(|s| match s {
                Value::String(key) => Ok(Segment::Key(key.as_str().to_owned())),
                Value::Number(n) if n.as_i64().is_some_and(|i| i >= 0) => {
                    Ok(Segment::Index(n.as_i64().unwrap_or_default()))
                }
                other => Err(format!(
                    "path: {} is neither a key nor an index",
                    agent_core::json_type(other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Place {
            kind,
            instance,
            path: Path::from_segments(segments),
        })
    }
}

/// The numbers of the messages of `context` (the context at the point
/// asked) that made what `place` holds, oldest first: the view's fold
/// walked back as R14 reads it — the instance's own layer newest first,
/// then the global one unless the instance's layer replaced the place —
/// taking each write that reached the place and stopping at the first that
/// replaced it whole. Writes the fold skipped (R12) made nothing.
pub(super) fn provenance(context: &Context, place: &Place) -> Vec<usize> {
    let skipped: std::collections::HashSet<usize> = context
        .diagnostics()
        .into_iter()
        .filter(|d| d.identity.kind == place.kind)
        .map(|d| d.index)
        .collect();
    let (mut own, mut global) = (Vec::new(), Vec::new());
    for index in 0..context.len() {
        let Some(identity) = context.message_identity(index) else {
            continue;
        };
        if identity.kind != place.kind || skipped.contains(&index) {
            continue;
        }
        match &identity.instance {
            None => global.push(index),
            Some(x) if Some(x) == place.instance.as_ref() => own.push(index),
            Some(_) => {}
        }
    }
    let mut made = Vec::new();
    for index in own.into_iter().rev().chain(global.into_iter().rev()) {
        let Some(Message::Data(message)) = context.message(index) else {
            continue;
        };
        match reach(&message, &place.path) {
            Reach::None => {}
            Reach::Into => made.push(index),
            Reach::Over => {
                made.push(index);
                break;
            }
        }
    }
    made.reverse();
    made
}

/// How one write reached a place.
enum Reach {
    /// Not at all.
    None,
    /// It wrote there, over what older writes left (into an object or an
    /// array there, or under the place).
    Into,
    /// It replaced (or removed) what was there: older writes made nothing
    /// of what is there now.
    Over,
}

/// How `message` reached `path` (R9, R10, R10b): a `set` or `erase` at or
/// over it replaces it; a `merge` replaces what its value reaches with
/// something that is not an object, and merges into an object; an `assign`
/// replaces the top-level keys it names; a `push` or `concat` adds to what
/// is there. A write under the path changes part of it.
fn reach(message: &agent_data::DataMessage, path: &Path) -> Reach {
    let destination = message.destination();
    if !destination.overlaps(path) {
        return Reach::None;
    }
    let negative = |p: &Path| {
        p.segments()
            .iter()
            .any(|s| matches!(s, Segment::Index(i) if *i < 0))
    };
    if path.len() < destination.len() || negative(destination) {
        return Reach::Into;
    }
    let below = &path.segments()[destination.len()..];
    let value = message.value();
    match message.method() {
        Method::Set | Method::Erase => Reach::Over,
        Method::Merge => along(value, below, false),
        Method::Assign => along(value, below, true),
        _ => Reach::Into,
    }
}

/// How a `merge` (or, `shallow`, an `assign`) of `value` reaches the place
/// `below` it.
fn along(value: &Value, below: &[Segment], shallow: bool) -> Reach {
    let mut here = value;
    for (depth, segment) in below.iter().enumerate() {
        let Value::Object(fields) = here else {
            return Reach::Over;
        };
        match fields.get(&segment.as_key()) {
            // An assign replaces each top-level key it names whole.
            Some(_) if shallow && depth == 0 => return Reach::Over,
            Some(next) => here = next,
            None => return Reach::None,
        }
    }
    match here {
        Value::Object(_) => Reach::Into,
        _ => Reach::Over,
    }
}
