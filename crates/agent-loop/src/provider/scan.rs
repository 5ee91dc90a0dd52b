//! Reading an answer's calls while its text is still arriving (spec R38,
//! decision D56): each element of the top-level `calls` array is yielded as
//! soon as its JSON is complete, so a caller can start on it before the
//! rest of the answer has been generated.
//!
//! The scanner tracks only what it needs — string and escape state, nesting
//! depth, the key the top-level object is at — and hands each completed
//! element's slice to `serde_json`. It never decides whether the answer is
//! valid: the whole text is still read by [`crate::Answer::from_text`] at
//! the end, and [`crate::provider::stream::Reporter`] checks that what was yielded
//! is what the whole answer holds.

use agent_core::json::Value;

/// Where the scanner is in the answer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the top-level object: whitespace, or one opening code fence.
    Start {
        /// Whether a fence line was already passed.
        fenced: bool,
    },
    /// Inside an opening fence line that began at this byte.
    Fence(usize),
    /// Inside the top-level object, outside its `calls` array.
    Object,
    /// Directly or deeper inside the top-level `calls` array.
    Calls,
    /// Nothing more to yield: the object ended, or the text is not one the
    /// scanner can follow (the whole answer is judged at the end).
    Done,
}

/// An incremental scanner over an answer's JSON text.
#[derive(Debug, Clone)]
pub(crate) struct Scanner {
    text: String,
    /// The next byte to look at.
    pos: usize,
    phase: Phase,
    /// Open objects and arrays around `pos`.
    depth: usize,
    in_string: bool,
    escape: bool,
    /// Where the current string began (its opening quote).
    string_start: usize,
    /// In the top-level object: whether the next string is a key.
    at_key: bool,
    /// Whether the last top-level key read was `calls`.
    key_is_calls: bool,
    /// Whether a string now open at depth 1 is a key.
    string_is_key: bool,
    /// Where the current element of `calls` began.
    element_start: Option<usize>,
    /// Whether the current element is a bare scalar (a number, `true`, …),
    /// which ends only at the next `,` or `]`.
    scalar: bool,
    /// Whether the `calls` array was scanned already.
    calls_seen: bool,
}

impl Scanner {
    /// A scanner before any text.
    pub(crate) fn new() -> Scanner {
        Scanner {
            text: String::new(),
            pos: 0,
            phase: Phase::Start { fenced: false },
            depth: 0,
            in_string: false,
            escape: false,
            string_start: 0,
            at_key: false,
            key_is_calls: false,
            string_is_key: false,
            element_start: None,
            scalar: false,
            calls_seen: false,
        }
    }

    /// The text so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Appends `chunk` and returns the elements of `calls` it completed,
    /// in order.
    pub(crate) fn push(&mut self, chunk: &str) -> Vec<Value> {
        self.text.push_str(chunk);
        let mut done = Vec::new();
        while self.pos < self.text.len() && self.phase != Phase::Done {
            let i = self.pos;
            let byte = self.text.as_bytes()[i];
            self.pos += 1;
            match self.phase {
                Phase::Start { fenced } => self.start(i, byte, fenced),
                Phase::Fence(from) => self.fence(from, i, byte),
                Phase::Object => self.object(i, byte),
                Phase::Calls => {
                    if let Some(element) = self.calls(i, byte) {
                        match agent_core::json::from_str(element.trim()) {
                            Ok(value) => done.push(value),
                            // Not JSON after all: the whole answer says why.
                            Err(_) => self.phase = Phase::Done,
                        }
                    }
                }
                Phase::Done => {}
            }
        }
        done
    }

    /// Before the object: whitespace, one fence line, then `{`.
    fn start(&mut self, i: usize, byte: u8, fenced: bool) {
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'{' => {
                self.depth = 1;
                self.at_key = true;
                self.phase = Phase::Object;
            }
            b'`' if !fenced => self.phase = Phase::Fence(i),
            // Prose before the JSON: not an answer `from_text` reads.
            _ => self.phase = Phase::Done,
        }
    }

    /// An opening fence line ends: it must be ```` ``` ```` or
    /// ```` ```json ````, as [`crate::Answer::from_text`] reads.
    fn fence(&mut self, from: usize, i: usize, byte: u8) {
        if byte != b'\n' {
            return;
        }
        let line = &self.text[from..i];
        let info = line.strip_prefix("```").map(str::trim);
        self.phase = match info {
            Some(info) if info.is_empty() || info.eq_ignore_ascii_case("json") => {
                Phase::Start { fenced: true }
            }
            _ => Phase::Done,
        };
    }

    /// Inside a string: `true` when this byte closed it.
    fn string_byte(&mut self, byte: u8) -> bool {
        if self.escape {
            self.escape = false;
        } else if byte == b'\\' {
            self.escape = true;
        } else if byte == b'"' {
            self.in_string = false;
            return true;
        }
        false
    }

    /// Inside the top-level object, outside `calls`.
    fn object(&mut self, i: usize, byte: u8) {
        if self.in_string {
            if self.string_byte(byte) && self.string_is_key {
                let key = serde_json::from_str::<String>(&self.text[self.string_start..=i]);
                self.key_is_calls = key.is_ok_and(|k| k == "calls");
                self.string_is_key = false;
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                self.string_start = i;
                self.string_is_key = self.depth == 1 && self.at_key;
            }
            b':' if self.depth == 1 => self.at_key = false,
            b',' if self.depth == 1 => {
                self.at_key = true;
                self.key_is_calls = false;
            }
            b'[' if self.depth == 1 && self.key_is_calls => {
                if self.calls_seen {
                    // `calls` twice: the whole answer decides which holds.
                    self.phase = Phase::Done;
                    return;
                }
                self.depth = 2;
                self.element_start = None;
                self.phase = Phase::Calls;
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.phase = Phase::Done;
                }
            }
            _ => {}
        }
    }

    /// Inside `calls`: the text of an element when this byte completed it.
    fn calls(&mut self, i: usize, byte: u8) -> Option<String> {
        if self.in_string {
            if self.string_byte(byte) && self.depth == 2 {
                return self
                    .element_start
                    .take()
                    .map(|s| self.text[s..=i].to_owned());
            }
            return None;
        }
        if self.depth > 2 {
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 2 {
                        return self
                            .element_start
                            .take()
                            .map(|s| self.text[s..=i].to_owned());
                    }
                }
                _ => {}
            }
            return None;
        }
        // Directly in the array.
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' => None,
            b',' | b']' => {
                let scalar = self.scalar.then(|| self.element_start.take()).flatten();
                self.scalar = false;
                if byte == b']' {
                    self.depth = 1;
                    self.calls_seen = true;
                    self.key_is_calls = false;
                    self.phase = Phase::Object;
                }
                scalar.map(|s| self.text[s..i].to_owned())
            }
            b'{' | b'[' => {
                self.element_start = Some(i);
                self.depth = 3;
                None
            }
            b'"' => {
                self.element_start = Some(i);
                self.in_string = true;
                None
            }
            _ => {
                if self.element_start.is_none() {
                    self.element_start = Some(i);
                    self.scalar = true;
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::json;
    use proptest::prelude::*;

    /// Every call the scanner yields for `text` pushed in `chunks`.
    fn scan(text: &str, sizes: &[usize]) -> Vec<Value> {
        let mut scanner = Scanner::new();
        let mut calls = Vec::new();
        let mut rest = text;
        let mut sizes = sizes.iter().cycle();
        while !rest.is_empty() {
            let mut cut = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let (chunk, after) = rest.split_at(cut);
            calls.extend(scanner.push(chunk));
            rest = after;
        }
        assert_eq!(scanner.text(), text);
        calls
    }

    #[test]
    fn r38_each_call_is_yielded_once_its_object_is_complete() {
        let mut scanner = Scanner::new();
        assert!(
            scanner
                .push(r#"{"calls": [{"_tool": "a", "x": "}{\"]["#)
                .is_empty()
        );
        let first = scanner.push(r#""}, {"_tool""#);
        assert_eq!(first, vec![json!({"_tool": "a", "x": "}{\"]["})]);
        assert!(scanner.push(r#": "b"}"#).len() == 1);
        assert!(
            scanner
                .push(r#"], "output": {"calls": [{"no": 1}]}}"#)
                .is_empty()
        );
    }

    #[test]
    fn r38_calls_split_byte_by_byte_inside_escaped_strings_are_whole() {
        let answer = r#"{"output": null, "calls": [{"_tool": "w", "q": "a \"}\" \\ {[ ✓"}, 7, "s\"]", [1, {"a": []}], null, {}]}"#;
        let whole: Value = agent_core::json::from_str(answer).unwrap();
        assert_eq!(
            scan(answer, &[1]),
            whole["calls"].as_array().unwrap().clone()
        );
    }

    #[test]
    fn r38_a_fenced_answer_is_scanned_and_prose_is_not() {
        let fenced = "```json\n{\"calls\": [{\"_tool\": \"a\"}], \"output\": null}\n```";
        assert_eq!(scan(fenced, &[3]), vec![json!({"_tool": "a"})]);
        let prose = "Here: {\"calls\": [{\"_tool\": \"a\"}], \"output\": null}";
        assert!(scan(prose, &[3]).is_empty());
        let other = "```python\n{\"calls\": [{\"_tool\": \"a\"}], \"output\": null}\n```";
        assert!(scan(other, &[3]).is_empty());
    }

    #[test]
    fn r38_only_the_top_level_calls_key_is_scanned_and_only_once() {
        let nested = r#"{"output": {"calls": [{"_tool": "no"}]}, "calls": [{"_tool": "yes"}]}"#;
        assert_eq!(scan(nested, &[2]), vec![json!({"_tool": "yes"})]);
        let escaped_key = r#"{"call\u0073": [{"_tool": "a"}], "output": null}"#;
        assert_eq!(scan(escaped_key, &[1]), vec![json!({"_tool": "a"})]);
        let twice = r#"{"calls": [{"_tool": "a"}], "calls": [{"_tool": "b"}]}"#;
        assert_eq!(scan(twice, &[1]), vec![json!({"_tool": "a"})]);
        let value_named_calls = r#"{"output": "calls", "x": ["calls"], "calls": [1]}"#;
        assert_eq!(scan(value_named_calls, &[1]), vec![json!(1)]);
    }

    #[test]
    fn r38_an_element_that_is_not_json_stops_the_scan() {
        assert!(scan(r#"{"calls": [{'a': 1}, {"b": 2}]}"#, &[4]).is_empty());
        assert!(scan(r#"{"calls": [tru, 1]}"#, &[4]).is_empty());
    }

    /// Any JSON value, with strings full of what a scanner could trip on.
    fn json_value() -> impl Strategy<Value = Value> {
        let tricky = prop::sample::select(vec![
            "", "\"", "\\", "{", "}", "[", "]", ",", ":", "\\\"", "é", "✓", "\n", "calls", " ",
        ]);
        let string = prop::collection::vec(tricky, 0..6).prop_map(|parts| parts.concat());
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            // Quarters are exact in binary, so they read back equal.
            (-1000i32..1000).prop_map(|n| json!(f64::from(n) / 4.0)),
            string.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                prop::collection::vec((string.clone(), inner), 0..5)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn r38_for_any_answer_split_anyhow_the_calls_yielded_are_the_answers_calls(
            calls in prop::collection::vec(json_value(), 0..6),
            output in json_value(),
            output_first in any::<bool>(),
            pretty in any::<bool>(),
            sizes in prop::collection::vec(1usize..40, 1..8),
        ) {
            let mut answer = agent_core::json::Map::new();
            if output_first {
                answer.insert("output".into(), output.clone());
            }
            answer.insert("calls".into(), Value::Array(calls.clone().into()));
            if !output_first {
                answer.insert("output".into(), output);
            }
            let answer = Value::Object(answer);
            let text = if pretty {
                serde_json::to_string_pretty(&answer).unwrap()
            } else {
                answer.to_string()
            };
            prop_assert_eq!(scan(&text, &sizes), calls);
        }
    }
}
