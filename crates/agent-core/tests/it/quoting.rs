//! Quoting text for messages (R33): what a user, a server or a model sent
//! is printed quoted, and nothing in it acts on the terminal.

use agent_core::json::Value;
use agent_core::quoted;
use proptest::prelude::*;

/// What a terminal would act on: controls and the format characters, the
/// bidi controls among them.
fn acts(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}' | '\u{ad}' | '\u{61c}' | '\u{e0001}' | '\u{e0020}'..='\u{e007f}')
}

#[test]
fn r33_bidi_and_format_characters_are_escaped_not_printed() {
    assert_eq!(quoted("a\u{202e}b"), r#""a\u202eb""#);
    assert_eq!(quoted("\u{2066}x\u{2069}"), r#""\u2066x\u2069""#);
    assert_eq!(quoted("zero\u{200b}width"), r#""zero\u200bwidth""#);
    assert_eq!(quoted("c1\u{9b}31m"), r#""c1\u009b31m""#);
    assert_eq!(quoted("del\u{7f}"), r#""del\u007f""#);
    // Past the first plane: a surrogate pair, as JSON writes it.
    assert_eq!(quoted("tag\u{e0041}"), r#""tag\udb40\udc41""#);
    // Everything else is shown as it is.
    assert_eq!(quoted("Zoë 東京 🙂"), "\"Zoë 東京 🙂\"");
}

proptest! {
    #[test]
    fn r33_quoted_text_reads_back_as_itself_and_holds_nothing_a_terminal_acts_on(
        text in "(\\PC|[\u{0}-\u{1f}\u{7f}-\u{9f}\u{200b}-\u{200f}\u{202a}-\u{202e}\u{2066}-\u{2069}\u{feff}\u{e0001}\u{e0020}-\u{e007f}]){0,40}"
    ) {
        let shown = quoted(&text);
        prop_assert!(!shown.chars().any(acts), "{shown:?}");
        let back: Value = agent_core::json::from_str(&shown).unwrap();
        prop_assert_eq!(back.as_str(), Some(text.as_str()));
    }
}
