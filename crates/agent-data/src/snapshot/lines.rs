//! A snapshot's held lines, packed: what every instance write's line
//! repeats (D87: packed snapshot lines).
//!
//! A held data message's line, as the log holds it, is nearly always
//! `{"type":"data","kind":"K","data":REST,"_instance":"I"}` where REST is
//! the data and whatever members follow it. Its snapshot line is then
//! `["K","I",REST]`: the same line without the 39 bytes every such line
//! repeats, so a snapshot of many small instance writes is smaller than
//! their log rather than half as large again. Unpacking puts the same
//! bytes back, whatever REST holds, before anything reads the line; a line
//! of any other shape is written and read as it stands.

/// What a packable line starts with, up to its kind.
const BEFORE_KIND: &str = r#"{"type":"data","kind":""#;
/// Between a packable line's kind and the rest.
const AFTER_KIND: &str = r#"","data":"#;
/// Between the rest and the instance id.
const BEFORE_INSTANCE: &str = r#","_instance":""#;
/// What a packable line ends with.
const END: &str = r#""}"#;

/// Writes `line`'s snapshot line, packed when it has the shape above with
/// a kind and an instance id free of quotes and backslashes, into `out`,
/// without its newline.
pub(crate) fn pack(line: &str, out: &mut Vec<u8>) {
    match split(line) {
        Some((kind, rest, instance)) => {
            out.extend_from_slice(b"[\"");
            out.extend_from_slice(kind.as_bytes());
            out.extend_from_slice(b"\",\"");
            out.extend_from_slice(instance.as_bytes());
            out.extend_from_slice(b"\",");
            out.extend_from_slice(rest.as_bytes());
            out.push(b']');
        }
        None => out.extend_from_slice(line.as_bytes()),
    }
}

/// A packable line's kind, rest and instance id.
fn split(line: &str) -> Option<(&str, &str, &str)> {
    let after = line.strip_prefix(BEFORE_KIND)?;
    let (kind, after) = after.split_once('"')?;
    let inner = after.strip_prefix(&AFTER_KIND[1..])?.strip_suffix(END)?;
    // The id runs from the last quote: one searched for from the end, as
    // the id is short and the rest may be long.
    let quote = memchr::memrchr(b'"', inner.as_bytes())?;
    let (rest, instance) = (inner.get(..quote + 1)?, inner.get(quote + 1..)?);
    let rest = rest.strip_suffix(BEFORE_INSTANCE)?;
    let plain = plain(kind.as_bytes()) && plain(instance.as_bytes());
    (plain && !rest.is_empty()).then_some((kind, rest, instance))
}

/// A kind or id ending at its first quote (so holding none) is copied
/// between quotes as it stands and reads back as itself unless it holds a
/// backslash, which would escape the quote written after it.
fn plain(name: &[u8]) -> bool {
    memchr::memchr(b'\\', name).is_none()
}

/// True when a line of `held` starts as a packed one.
pub(crate) fn any_packed(held: &[u8]) -> bool {
    held.first() == Some(&b'[') || memchr::memmem::find(held, b"\n[").is_some()
}

/// Reads the held lines from `reader` to its end into `out`, `\n` after
/// each that had one, every packed one unpacked ([`unpack_line`]). The
/// first line that starts as a packed one but is not (kept as it stands):
/// its position among the held lines.
///
/// # Errors
/// When `reader` fails.
pub(crate) fn unpack(
    reader: &mut dyn std::io::BufRead,
    out: &mut Vec<u8>,
) -> std::io::Result<Option<usize>> {
    let (mut line, mut at, mut bad) = (Vec::new(), 0, None);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(bad);
        }
        let (body, newline) = match line.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (&line[..], false),
        };
        if !unpack_line(body, out) {
            bad = bad.or(Some(at));
        }
        if newline {
            out.push(b'\n');
        }
        at += 1;
    }
}

/// Appends `line` (without its newline) to `out`, unpacked if packed;
/// false, the line appended as it stands, when it starts as a packed
/// line but is not one.
pub(crate) fn unpack_line(line: &[u8], out: &mut Vec<u8>) -> bool {
    if line.first() != Some(&b'[') {
        out.extend_from_slice(line);
        return true;
    }
    let Some((kind, rest, instance)) = unpacked_bytes(line) else {
        out.extend_from_slice(line);
        return false;
    };
    out.reserve(line.len() + PACKED_OFF);
    for part in [
        BEFORE_KIND.as_bytes(),
        kind,
        AFTER_KIND.as_bytes(),
        rest,
        BEFORE_INSTANCE.as_bytes(),
        instance,
        END.as_bytes(),
    ] {
        out.extend_from_slice(part);
    }
    true
}

/// A packed line's kind, rest and instance id. Its bytes are not checked
/// as text here: the unpacked line is, as any held line.
fn unpacked_bytes(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let inner = line.strip_prefix(b"[\"")?.strip_suffix(b"]")?;
    let quote = memchr::memchr(b'"', inner)?;
    let (kind, after) = (&inner[..quote], inner[quote + 1..].strip_prefix(b",\"")?);
    let quote = memchr::memchr(b'"', after)?;
    let (instance, rest) = (&after[..quote], after[quote + 1..].strip_prefix(b",")?);
    (plain(kind) && plain(instance) && !rest.is_empty()).then_some((kind, rest, instance))
}

/// How many bytes longer a line is than its packed form.
const PACKED_OFF: usize =
    BEFORE_KIND.len() + AFTER_KIND.len() + BEFORE_INSTANCE.len() + END.len() - "[\"\",\"\",]".len();

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::*;
    use proptest::prelude::*;

    /// `held` unpacked, and its first bad line.
    fn unpack(held: Vec<u8>) -> (Vec<u8>, Option<usize>) {
        let mut out = Vec::new();
        let bad = super::unpack(&mut &held[..], &mut out).unwrap();
        (out, bad)
    }

    fn packed(line: &str) -> String {
        let mut out = Vec::new();
        pack(line, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn d87_an_instance_write_packs_without_what_every_one_repeats() {
        let line = r#"{"type":"data","kind":"state","data":{"v":1},"_instance":"i1"}"#;
        assert_eq!(packed(line), r#"["state","i1",{"v":1}]"#);
        assert_eq!(
            unpack(format!("{}\n", packed(line)).into_bytes()),
            (format!("{line}\n").into_bytes(), None)
        );
    }

    #[test]
    fn d87_any_line_unpacks_to_its_own_bytes() {
        for line in [
            // Members after the data, and an `_instance` key inside it.
            r#"{"type":"data","kind":"k","data":{"_instance":"x"},"_date":"d","_instance":"i"}"#,
            r#"{"type":"data","kind":"k","data":"a\"b","_instance":"i"}"#,
            // Not packable: left as they stand.
            r#"{"type":"data","kind":"k\"","data":1,"_instance":"i"}"#,
            r#"{"type":"data","kind":"k","data":1,"_instance":"i\\"}"#,
            r#"{"type":"data","data":1,"_instance":"i"}"#,
            r#"{"type":"data","kind":"k","data":1}"#,
            r#"{ "type":"data","kind":"k","data":1,"_instance":"i"}"#,
            r#"{"type":"data","kind":"k","data":,"_instance":"i"}"#,
        ] {
            let held = format!("{}\n{}", packed(line), packed(line));
            assert_eq!(
                unpack(held.into_bytes()),
                (format!("{line}\n{line}").into_bytes(), None),
                "{line}"
            );
        }
    }

    /// Pieces a line is made of: the packed shape's own delimiters, quotes,
    /// backslashes, brackets and plain text, in any order.
    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            BEFORE_KIND,
            AFTER_KIND,
            BEFORE_INSTANCE,
            END,
            "\"",
            "\\",
            "[",
            "]",
            ",",
            "k",
            "{\"v\":1}",
        ])
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn d87_every_held_line_unpacks_to_the_line_packed(
            kind in proptest::collection::vec(piece(), 0..3),
            rest in proptest::collection::vec(piece(), 0..6),
            instance in proptest::collection::vec(piece(), 0..3),
            shaped in proptest::bool::ANY,
        ) {
            let line = if shaped {
                format!("{BEFORE_KIND}{}{AFTER_KIND}{}{BEFORE_INSTANCE}{}{END}",
                    kind.concat(), rest.concat(), instance.concat())
            } else {
                // Every message is an object: its line starts with `{`.
                format!("{{{}", [kind, rest, instance].concat().concat())
            };
            let mut held = Vec::new();
            pack(&line, &mut held);
            held.push(b'\n');
            prop_assert_eq!(unpack(held), (format!("{line}\n").into_bytes(), None));
        }
    }

    proptest::proptest! {
        #[test]
        fn d87_held_lines_unpack_to_the_lines_packed_in_order(
            lines in proptest::collection::vec(
                (proptest::collection::vec(piece(), 0..2), "[a-z\"]{0,50}", "[a-z]{0,60}", proptest::bool::ANY),
                0..8,
            ),
            last_newline in proptest::bool::ANY,
        ) {
            let lines: Vec<String> = lines
                .into_iter()
                .map(|(kind, rest, instance, shaped)| match shaped {
                    true => format!("{BEFORE_KIND}{}{AFTER_KIND}{rest}{BEFORE_INSTANCE}{instance}{END}", kind.concat()),
                    false => format!("{{{rest}"),
                })
                .collect();
            let mut held = Vec::new();
            for line in &lines {
                pack(line, &mut held);
                held.push(b'\n');
            }
            let mut expected = lines.join("\n");
            if !lines.is_empty() && last_newline {
                expected.push('\n');
            }
            if !last_newline {
                held.pop();
            }
            let (out, bad) = unpack(held);
            prop_assert_eq!(bad, None);
            prop_assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn d87_a_line_that_is_not_a_packed_one_is_refused_where_it_is() {
        for bad in [
            r#"["k","i"]"#,
            r#"["k",1,2]"#,
            r#"["k","i",]"#,
            r#"["k"#,
            "[",
            r#"["k\"","i",1]"#,
            r#"["k","i\",1]"#,
        ] {
            let held = format!("{{\"a\":1}}\n{bad}\n");
            let (out, at) = unpack(held.clone().into_bytes());
            assert_eq!(at, Some(1), "{bad}");
            assert_eq!(out, held.into_bytes(), "{bad}");
        }
    }
}
