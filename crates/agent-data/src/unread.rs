//! Loading a line without reading its values (D81: unread instance lines): the first write of an
//! instance layer, whose view the layer does not keep (D40: short layers refolded), so the value
//! it writes need not be built while loading.
//!
//! A line is taken only when it is a compact object that
//! [`CompactObject`] reads, of one of two shapes, and the instance layer it
//! writes is new; the context is then what reading it would have made —
//! the same stored text (so the same chain), the same layer holding its
//! index. Any other line is left to be read as usual, which reports what
//! is wrong with a bad one.

use crate::Context;
use crate::layer::Layer;
use agent_core::MAX_DEPTH;
use agent_core::json::CompactObject;

/// Finds `"_instance":` in a line (built once: a searcher costs more to
/// build than a short line takes to search).
static INSTANCE_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"_instance\":"));

/// True when `line` may have an `_instance` member: certainly when it
/// ends with one, as this library writes it ([`ends_with_instance`]);
/// otherwise when `"_instance":` is anywhere in it.
fn names_an_instance(line: &str) -> bool {
    ends_with_instance(line) || INSTANCE_KEY.find(line.as_bytes()).is_some()
}

/// True when `line` ends with `,"_instance":"…"}`, told from its end
/// without a search.
fn ends_with_instance(line: &str) -> bool {
    const KEY: &[u8] = b",\"_instance\":\"";
    line.as_bytes()
        .strip_suffix(b"\"}")
        .and_then(|before| memchr::memrchr(b'"', before).map(|quote| &before[..=quote]))
        .is_some_and(|before| before.ends_with(KEY))
}

/// What loading reuses from line to line for [`Context::push_unread`].
#[derive(Debug, Default)]
pub(crate) struct Unread {
    object: CompactObject,
    /// A shorthand's normalised text.
    text: String,
    /// The kind the last line taken named.
    kind: Option<agent_core::Kind>,
}

impl Context {
    /// Adds a JSONL line without building its values when it is the
    /// compact text of the first write of an instance layer, as either
    ///
    /// - a data message `{"type":"data","kind":K,"data":D,"_instance":I}`
    ///   (`type` first, the others in any order, `kind` optional, nothing
    ///   else), stored as read; or
    /// - a shorthand `{"type":"state"|"input",…,"_instance":I}` whose other
    ///   members are all data (no `kind`, `data`, `input`, `schema`,
    ///   `description` or `_`-field), stored as R1 normalises it:
    ///   `{"type":"data","kind":T,"data":{…},"_instance":I}`, its members
    ///   in their order.
    ///
    /// The new layer holds the message's index and folds nothing, as
    /// [`Layer::apply`] does for such a write. True when the line was one
    /// and is now the newest message; false, with nothing changed, for any
    /// other line, which is then read as usual.
    pub(crate) fn push_unread(&mut self, line: &str, unread: &mut Unread) -> bool {
        // Most other lines are told apart before scanning. Writers of this
        // library put `type` first; a line with its members in another
        // order is read as any other.
        let shorthand = if line.starts_with(r#"{"type":"data","#) {
            None
        } else if line.starts_with(r#"{"type":"state","#) {
            Some("state")
        } else if line.starts_with(r#"{"type":"input","#) {
            Some("input")
        } else {
            return false;
        };
        // A shorthand's data is nested one level deeper once normalised.
        let limit = if shorthand.is_some() {
            MAX_DEPTH - 1
        } else {
            MAX_DEPTH
        };
        if !names_an_instance(line) || !unread.object.read(line, limit) {
            return false;
        }
        let identity = match shorthand {
            None => data_message(line, &unread.object),
            Some(kind) => shorthand_message(line, kind, &unread.object, &mut unread.text),
        };
        let Some((kind, instance)) = identity else {
            return false;
        };
        let Some((kind, instance)) = self.identity_named_after(kind, instance, &mut unread.kind)
        else {
            return false;
        };
        let (hash, found) = self.find_layer(&kind, Some(&instance));
        if found.is_some() {
            return false;
        }
        let mut layer = Layer::default();
        layer.hold(self.log.len(), None, None);
        let text = match shorthand {
            None => line,
            Some(_) => unread.text.as_str(),
        };
        let written = self.log.write_text(text);
        let at = self.add_interned_layer(kind, Some(&instance), layer, hash);
        self.log.seal(written, Some(at));
        self.instance_writes += 1;
        true
    }
}

/// The kind and instance id of a data message of the shape
/// [`Context::push_unread`] takes; `None` for any other.
fn data_message<'t>(line: &'t str, object: &CompactObject) -> Option<(&'t str, &'t str)> {
    let mut data = false;
    let identity = data_identity(line, object, |key| {
        data |= key == "data";
        key == "data"
    });
    identity.filter(|_| data)
}

/// The kind's name and instance id of the data message whose members
/// `object` read from `line`: its `type` is `"data"`, its `kind` (`data`
/// when absent) and `_instance` are strings without escapes, and `other`
/// accepts the key of every other member; `None` otherwise.
pub(crate) fn data_identity<'t>(
    line: &'t str,
    object: &CompactObject,
    mut other: impl FnMut(&str) -> bool,
) -> Option<(&'t str, &'t str)> {
    let (mut typed, mut kind, mut instance) = (false, "data", None);
    for (key, value) in object.members(line) {
        match key {
            "type" => typed = value == "\"data\"",
            "kind" => kind = plain_string(value)?,
            "_instance" => instance = Some(plain_string(value)?),
            _ if other(key) => {}
            _ => return None,
        }
    }
    typed.then_some((kind, instance?))
}

/// The kind and instance id of a shorthand of the shape
/// [`Context::push_unread`] takes, its normalised text written into
/// `text`; `None` for any other.
fn shorthand_message<'t>(
    line: &'t str,
    kind: &'static str,
    object: &'t CompactObject,
    text: &mut String,
) -> Option<(&'static str, &'t str)> {
    text.clear();
    text.push_str(r#"{"type":"data","kind":""#);
    text.push_str(kind);
    text.push_str(r#"","data":{"#);
    let (mut instance, mut members) = (None, 0);
    for (key, value) in object.members(line) {
        match key {
            // The line starts with it: the shorthand's own type.
            "type" => {}
            "_instance" => instance = Some(value),
            "kind" | "data" | "input" | "schema" | "description" => return None,
            _ if key.starts_with('_') => return None,
            _ => {
                if members > 0 {
                    text.push(',');
                }
                members += 1;
                // Compact text: the key is spelled as the writer spells it.
                text.push('"');
                text.push_str(key);
                text.push_str("\":");
                text.push_str(value);
            }
        }
    }
    let instance = instance?;
    text.push_str(r#"},"_instance":"#);
    text.push_str(instance);
    text.push('}');
    Some((kind, plain_string(instance)?))
}

/// The contents of a JSON string's compact text when it holds no escape
/// (then they are the string itself); `None` for anything else.
pub(crate) fn plain_string(text: &str) -> Option<&str> {
    text.strip_prefix('"')?
        .strip_suffix('"')
        .filter(|inner| !inner.contains('\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The look at a line's end says yes only where the search finds
        /// the key, for lines built from the pieces that make either
        /// answer likely.
        #[test]
        fn d81_a_line_told_from_its_end_holds_the_key_the_search_finds(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "{", "}", "\"", ",", ":", "\\", "a", "\"_instance\":", ",\"_instance\":\"", "\"}",
                ]),
                0..12,
            )
        ) {
            let line: String = pieces.concat();
            if ends_with_instance(&line) {
                proptest::prop_assert!(INSTANCE_KEY.find(line.as_bytes()).is_some(), "{}", line);
            }
        }
    }

    #[test]
    fn d81_a_line_ending_with_its_instance_is_told_without_a_search() {
        assert!(ends_with_instance(
            r#"{"type":"state","v":1,"_instance":"i1"}"#
        ));
        let elsewhere = r#"{"type":"data","_instance":"i1","data":1}"#;
        assert!(!ends_with_instance(elsewhere));
        assert!(names_an_instance(elsewhere));
        assert!(!ends_with_instance(
            r#"{"type":"state","v":"x\",\"_instance\":\"y"}"#
        ));
        assert!(!names_an_instance(r#"{"type":"state","v":"_instance"}"#));
        assert!(!names_an_instance(r#"{"type":"state","v":1}"#));
    }
}
