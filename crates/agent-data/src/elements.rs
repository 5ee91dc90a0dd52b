//! The elements of a JSON array context, one at a time: memory holds one
//! parsed element besides what the caller keeps (R1), where parsing the
//! whole array first would hold every message's value at once.

/// Byte ranges of the elements of the array `text`, found by a scan that
/// tracks strings and nesting, without parsing. `None` when the text is not
/// plainly an array of elements (a trailing comma, text after the closing
/// bracket, an unclosed string): the caller then parses the whole text,
/// which reports the fault as the reader words it.
pub(crate) fn ranges(text: &[u8]) -> Option<Vec<(usize, usize)>> {
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let skip = |mut i: usize| {
        while i < text.len() && space(text[i]) {
            i += 1;
        }
        i
    };
    let mut i = skip(0);
    if text.get(i) != Some(&b'[') {
        return None;
    }
    i = skip(i + 1);
    let mut ranges = Vec::new();
    if text.get(i) == Some(&b']') {
        return (skip(i + 1) == text.len()).then_some(ranges);
    }
    loop {
        let start = i;
        let end = element_end(text, start)?;
        ranges.push((start, end));
        i = skip(end);
        match text.get(i)? {
            b',' => i = skip(i + 1),
            b']' => return (skip(i + 1) == text.len()).then_some(ranges),
            _ => return None,
        }
        if matches!(text.get(i), None | Some(b']' | b',')) {
            return None;
        }
    }
}

/// Where the element starting at `start` ends: the first `,` or `]` outside
/// strings at its own level (trailing spaces excluded), or `None` when the
/// text ends first or a bracket closes a level the element did not open.
fn element_end(text: &[u8], start: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut last = start;
    for (i, &b) in text.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                last = i + 1;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => {
                depth -= 1;
                last = i + 1;
            }
            b',' | b']' if depth == 0 => return Some(last),
            b'}' => return None,
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => last = i + 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::ranges;

    fn pieces(text: &str) -> Option<Vec<&str>> {
        ranges(text.as_bytes()).map(|r| r.into_iter().map(|(a, b)| &text[a..b]).collect())
    }

    #[test]
    fn r1_elements_are_found_around_strings_and_nesting() {
        assert_eq!(pieces(" [ ] "), Some(vec![]));
        assert_eq!(
            pieces(r#"[ {"a": "],\"["}, [1, [2]] ,3 ,"x" ]"#),
            Some(vec![r#"{"a": "],\"["}"#, "[1, [2]]", "3", r#""x""#])
        );
    }

    #[test]
    fn r1_anything_but_a_plain_array_is_left_to_the_reader() {
        for text in [
            "[1,]", "[,1]", "[1] x", "[1", r#"["a]"#, "{}", "[1}", "[1 2]",
        ] {
            if let Some(found) = pieces(text) {
                // What the scan lets through, an element's parse refuses.
                let refused = found.iter().any(|p| agent_core::json::from_str(p).is_err());
                assert!(refused, "{text}: {found:?}");
            }
        }
    }
}
