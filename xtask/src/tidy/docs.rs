//! Conventions of the docs: the decisions index matches the decisions, and
//! the architecture names every crate.

/// The anchor GitHub gives a markdown heading: lower case, punctuation and
/// symbols dropped (letters, digits, `_`, `-` and spaces kept), each space a
/// `-`.
pub(super) fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | ' ')
                || (!c.is_ascii() && c.is_alphabetic())
        })
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The label of a decision heading or index line (`D7`), when `text`
/// starts with one followed by something other than a digit.
fn decision_label(text: &str) -> Option<&str> {
    let digits = text
        .strip_prefix('D')?
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    (digits > 0).then(|| &text[..1 + digits])
}

/// Problems with the index of `docs/decisions.md`: every `## Dn — …`
/// heading has one index line `- [Dn](#anchor) — summary` whose anchor is
/// the heading's, and every index line names a heading.
pub(super) fn decisions_index(text: &str) -> Vec<String> {
    let mut headings = Vec::new();
    let mut index = Vec::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ")
            && let Some(label) = decision_label(title)
        {
            headings.push((label, slug(title)));
        } else if let Some(entry) = line.strip_prefix("- [")
            && let Some(label) = decision_label(entry)
        {
            let anchor = entry[label.len()..]
                .strip_prefix("](#")
                .and_then(|rest| rest.split(')').next())
                .unwrap_or_default();
            index.push((label, anchor));
        }
    }
    let mut problems = Vec::new();
    for (label, anchor) in &headings {
        match index.iter().filter(|(l, _)| l == label).count() {
            0 => problems.push(format!(
                "docs/decisions.md: {label} has no index line (`- [{label}](#{anchor}) — …`)"
            )),
            1 => {}
            n => problems.push(format!("docs/decisions.md: {label} has {n} index lines")),
        }
    }
    for (label, linked) in &index {
        match headings.iter().find(|(l, _)| l == label) {
            None => problems.push(format!(
                "docs/decisions.md: the index line of {label} names no `## {label}` heading"
            )),
            Some((_, anchor)) if anchor != linked => problems.push(format!(
                "docs/decisions.md: the index line of {label} links #{linked}, but its heading's anchor is #{anchor}"
            )),
            Some(_) => {}
        }
    }
    problems
}

/// The crates (directories under `crates/`) that `architecture` never
/// names as a whole word.
pub(super) fn crates_not_in_architecture(crates: &[String], architecture: &str) -> Vec<String> {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    crates
        .iter()
        .filter(|name| {
            !architecture.match_indices(name.as_str()).any(|(at, _)| {
                let before = architecture[..at].chars().next_back();
                let after = architecture[at + name.len()..].chars().next();
                !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
            })
        })
        .map(|name| format!("docs/architecture.md does not name the crate crates/{name}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_githubs() {
        assert_eq!(
            slug("D1 — `null` intermediates are written through (R11)"),
            "d1--null-intermediates-are-written-through-r11"
        );
        assert_eq!(
            slug("D16 — Rendering details the spec left open (R28–R31)"),
            "d16--rendering-details-the-spec-left-open-r28r31"
        );
        assert_eq!(slug("D14 — Fresh ids after ⑳"), "d14--fresh-ids-after-");
        assert_eq!(
            slug("D41 — agent-store's `_tool` keys"),
            "d41--agent-stores-_tool-keys"
        );
    }

    #[test]
    fn every_decision_has_one_index_line_and_every_line_a_decision() {
        let good = "# Decisions\n\n- [D1](#d1--one) — One.\n- [D2](#d2--two-r2) — Two.\n\n## D1 — One\n\ntext\n\n## D2 — Two (R2)\n";
        assert!(decisions_index(good).is_empty());
        let bad =
            "- [D1](#d1-one) — One.\n- [D3](#d3--three) — Three.\n\n## D1 — One\n\n## D2 — Two\n";
        assert_eq!(
            decisions_index(bad),
            [
                "docs/decisions.md: D2 has no index line (`- [D2](#d2--two) — …`)",
                "docs/decisions.md: the index line of D1 links #d1-one, but its heading's anchor is #d1--one",
                "docs/decisions.md: the index line of D3 names no `## D3` heading",
            ]
        );
    }

    #[test]
    fn every_crate_directory_is_named_in_the_architecture() {
        let architecture = "agent-core, then agent-data; agent-loop-extra is another.";
        let crates = vec![
            "agent-core".to_owned(),
            "agent-data".to_owned(),
            "agent-loop".to_owned(),
        ];
        assert_eq!(
            crates_not_in_architecture(&crates, architecture),
            ["docs/architecture.md does not name the crate crates/agent-loop"]
        );
        assert!(crates_not_in_architecture(&crates[..2], architecture).is_empty());
    }
}
