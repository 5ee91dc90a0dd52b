//! The text of JSON array context files: what every append keeps, and
//! splicing new elements in before the closing `]`.

/// A JSON array file's bytes up to its closing `]`, blanks before it
/// trimmed: the part every append keeps. All of it when there is no `]`.
pub(super) fn json_body(bytes: &[u8]) -> &[u8] {
    let content = bytes.trim_ascii_end();
    content
        .strip_suffix(b"]")
        .map_or(content, <[u8]>::trim_ascii_end)
}

/// `old` — a JSON array's text — with `lines` added as its last elements;
/// every byte before them is kept. `None` when `old` does not end in `]`.
pub(super) fn splice<'a>(old: &[u8], lines: impl Iterator<Item = &'a str>) -> Option<Vec<u8>> {
    let content = old.trim_ascii_end();
    let mut out = Vec::with_capacity(old.len() + 256);
    let mut empty = true;
    if content.is_empty() {
        out.push(b'[');
    } else {
        let body = content.strip_suffix(b"]")?.trim_ascii_end();
        empty = body.trim_ascii() == b"[";
        out.extend_from_slice(body);
    }
    for line in lines {
        out.extend_from_slice(if empty { b"\n" } else { b",\n" });
        out.extend_from_slice(line.as_bytes());
        empty = false;
    }
    out.extend_from_slice(b"\n]\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::splice;

    #[test]
    fn r34_splice_keeps_every_byte_before_the_new_elements() {
        let lines = ["{\"n\":1}", "{\"n\":2}"];
        let cases: [(&[u8], &str); 4] = [
            (b"", "[\n{\"n\":1},\n{\"n\":2}\n]\n"),
            (b"[ ]\n", "[\n{\"n\":1},\n{\"n\":2}\n]\n"),
            (
                b"[\n  {\"a\": 1.50}\n]",
                "[\n  {\"a\": 1.50},\n{\"n\":1},\n{\"n\":2}\n]\n",
            ),
            (b"[{}]  \n\n", "[{},\n{\"n\":1},\n{\"n\":2}\n]\n"),
        ];
        for (old, new) in cases {
            let spliced = splice(old, lines.into_iter()).unwrap_or_default();
            assert_eq!(String::from_utf8_lossy(&spliced), new);
        }
        assert!(splice(b"[{}", lines.into_iter()).is_none());
    }
}
