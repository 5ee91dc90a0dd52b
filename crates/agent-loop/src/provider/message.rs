//! What a server's error says, as printed (R33): its `error.message`,
//! found even in a body cut where reading stopped, shortened and quoted.

use crate::provider::http::MESSAGE_CHARS;
use agent_core::json::Value;

/// The provider's error message as printed: `error.message` in both
/// providers' error bodies — found in the body's beginning when the body
/// was cut at [`ERROR_BODY_BYTES`](crate::provider::http::ERROR_BODY_BYTES) and no longer parses — else the body
/// itself; shortened to 300 characters and quoted as JSON, so no escape
/// sequence reaches a terminal (R33).
pub(crate) fn provider_message(body: &str) -> String {
    let parsed: Option<Value> = agent_core::json::from_str(body).ok();
    let whole = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(Value::as_str);
    let cut = match (&parsed, whole) {
        (None, _) => message_in_prefix(body),
        _ => None,
    };
    let message = whole.or(cut.as_deref()).unwrap_or(body);
    let mut short: String = message.chars().take(MESSAGE_CHARS).collect();
    if short.len() < message.len() {
        short.push('…');
    }
    agent_core::quoted(&short)
}

/// `error.message` read from the beginning of a JSON error body that was
/// cut: the first `"message"` string after `"error"`, decoded (its own
/// end cut too: what arrived of it). One pass over the body.
fn message_in_prefix(body: &str) -> Option<String> {
    let after_error = &body[body.find("\"error\"")?..];
    let key = after_error.find("\"message\"")?;
    let rest = after_error[key + "\"message\"".len()..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    if !rest.starts_with('"') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return json_string(&rest[..=i]),
            _ => i += 1,
        }
    }
    // Cut inside the string: what arrived of it, a dangling escape dropped.
    let mut arrived = rest.to_owned();
    for _ in 0..6 {
        if let Some(text) = json_string(&format!("{arrived}\"")) {
            return Some(text);
        }
        arrived.pop();
    }
    None
}

/// The string a JSON string literal holds.
fn json_string(literal: &str) -> Option<String> {
    let value: Value = agent_core::json::from_str(literal).ok()?;
    value.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::http::ERROR_BODY_BYTES;

    #[test]
    fn r33_a_cut_json_error_body_prints_its_message_not_raw_json() {
        // Cut where the client stops reading, past the message.
        let body = format!(
            r#"{{"error": {{"message": "Rate limit \"reached\"", "type": "rate_limit", "padding": "{}"#,
            "x".repeat(100_000)
        );
        let cut = &body[..ERROR_BODY_BYTES as usize];
        assert_eq!(provider_message(cut), r#""Rate limit \"reached\"""#);
        // Anthropic's shape, the message itself cut mid-escape.
        let body = format!(
            r#"{{"type": "error", "error": {{"type": "overloaded_error", "message": "Over{}\u00"#,
            "l".repeat(10)
        );
        assert_eq!(provider_message(&body), "\"Overllllllllll\"");
        // Not JSON at all: the text itself, as before.
        assert_eq!(provider_message("<html>cut"), "\"<html>cut\"");
    }

    #[test]
    fn r41_the_providers_message_is_read_from_either_error_body() {
        assert_eq!(
            provider_message(
                r#"{"error": {"message": "Invalid model", "type": "invalid_request_error"}}"#
            ),
            "\"Invalid model\""
        );
        assert_eq!(
            provider_message(
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
            ),
            "\"Overloaded\""
        );
        assert_eq!(provider_message("Bad Gateway"), "\"Bad Gateway\"");
    }

    #[test]
    fn r33_the_providers_message_is_quoted_and_shortened() {
        let long = format!(
            r#"{{"error": {{"message": "\u001b[31m{}"}}}}"#,
            "x".repeat(1000)
        );
        let message = provider_message(&long);
        assert!(message.starts_with("\"\\u001b[31mxxx"), "{message}");
        assert!(message.ends_with("x…\""), "{message}");
        // 300 characters, the quotes, `…`, and `\u001b` for ESC.
        assert_eq!(message.chars().count(), MESSAGE_CHARS + 3 + 5);
        assert!(!message.contains('\u{1b}'));
    }
}
