//! Expression parsing: any text parses or fails with an in-bounds offset,
//! and what parses round-trips through its canonical display.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = agent_vars::parse(text);
    match agent_vars::Expression::parse(text) {
        Ok(e) => assert_eq!(agent_vars::Expression::parse(&e.to_string()).ok(), Some(e)),
        Err(err) => {
            assert!(text.is_char_boundary(err.offset));
            let _ = err.caret();
        }
    }
});
