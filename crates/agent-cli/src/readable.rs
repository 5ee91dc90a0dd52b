//! The reports of `run`, `status`, `verify`, `apply` and `instances` as
//! readable text when stdout is a terminal — colour where it helps, none
//! when `NO_COLOR` is set — while a pipe, or `--json`, gets the JSON they
//! always printed (D108: readable on a terminal). The text is made from
//! that JSON, so both say the same; every string in it that came from
//! outside (a tool's name, an activity's error) is shown with the
//! characters a terminal would act on escaped, and the only escape
//! sequences printed are the colours chosen here.

use agent_core::json::Value;
use std::fmt::Write as _;

/// Which report a command printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    Run,
    Status,
    Verify,
    Apply,
    Instances,
}

/// Whether to colour: not when `NO_COLOR` is set to anything
/// (<https://no-color.org>).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    colour: bool,
}

impl Style {
    /// The style the environment asks for.
    pub(crate) fn from_env() -> Style {
        Style {
            colour: std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty()),
        }
    }

    /// `text` in the colour of a call's standing `state`.
    fn state(&self, state: &str, text: &str) -> String {
        let code = match state {
            "done" => "32",
            "failed" | "stopped" | "rejected" => "31",
            "blocked" | "skipped" | "held" => "33",
            "running" => "34",
            _ => return text.to_owned(),
        };
        self.paint(code, text)
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\u{1b}[{code}m{text}\u{1b}[0m")
        } else {
            text.to_owned()
        }
    }
}

/// `json`, the report `report` printed, as text in `style`; `None` when it
/// is not that report's shape (it is then printed as it is).
pub(crate) fn text(report: Report, json: &str, style: &Style) -> Option<String> {
    if report == Report::Apply {
        return apply(json);
    }
    let value: Value = agent_core::json::from_str(json).ok()?;
    match report {
        Report::Run => run(&value, style),
        Report::Status => status(&value, style),
        Report::Verify => verify(&value, style),
        Report::Instances => instances(&value),
        Report::Apply => None,
    }
}

/// A string from outside, on one line, with what a terminal would act on
/// escaped.
fn shown(text: &str) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    agent_core::json_for_terminal(&one_line).into_owned()
}

/// A value from outside as compact JSON, at most `max` characters.
fn brief(value: &Value, max: usize) -> String {
    let text = shown(&value.to_string());
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// A call's `#index`.
fn number(call: &Value) -> String {
    let index = call
        .get("index")
        .and_then(Value::as_u64)
        .unwrap_or_default();
    format!("#{index}")
}

fn str_of<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// `run`'s report: a line per call, then the counts and any warning.
fn run(report: &Value, style: &Style) -> Option<String> {
    let calls = report.get("calls")?.as_array()?;
    let width = calls
        .iter()
        .map(|c| str_of(c, "tool").map_or(0, |t| shown(t).chars().count()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for call in calls {
        let state = str_of(call, "status")?;
        match counts.iter_mut().find(|(name, _)| *name == state) {
            Some((_, n)) => *n += 1,
            None => counts.push((state, 1)),
        }
        let tool = shown(str_of(call, "tool").unwrap_or_default());
        let detail = match state {
            "done" => {
                let paths: Vec<String> = call
                    .get("paths")
                    .and_then(Value::as_array)
                    .map(|p| p.iter().filter_map(Value::as_str).map(shown).collect())
                    .unwrap_or_default();
                let wrote = if paths.is_empty() {
                    "(nothing written)".to_owned()
                } else {
                    format!("→ {}", paths.join(", "))
                };
                match (str_of(call, "outcome"), call.get("failure")) {
                    (Some("failure"), Some(failure)) => {
                        format!("{wrote}  (its failure, handled: {})", brief(failure, 120))
                    }
                    _ => wrote,
                }
            }
            "failed" | "stopped" => shown(str_of(call, "error").unwrap_or_default()),
            "blocked" => {
                let missing: Vec<String> = call
                    .get("missing")
                    .and_then(Value::as_array)
                    .map(|m| m.iter().filter_map(Value::as_str).map(shown).collect())
                    .unwrap_or_default();
                format!("missing {}", missing.join(", "))
            }
            "skipped" => match call.get("because").and_then(Value::as_u64) {
                Some(because) => format!("call {because} did not finish"),
                None => String::new(),
            },
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "{:>4}  {tool:<width$}  {}  {detail}",
            number(call),
            style.state(state, &format!("{state:<7}")),
        );
    }
    let counted: Vec<String> = counts
        .iter()
        .map(|(state, n)| style.state(state, &format!("{n} {state}")))
        .collect();
    let _ = writeln!(out, "{} call(s): {}", calls.len(), counted.join(", "));
    for warning in report
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = warning.as_str().map_or_else(|| brief(warning, 200), shown);
        let _ = writeln!(out, "{} {text}", style.paint("33", "warning:"));
    }
    Some(out)
}

/// `status`'s counts, and with `--calls` a line per call.
fn status(report: &Value, style: &Style) -> Option<String> {
    let count = |key: &str| report.get(key).and_then(Value::as_u64);
    let mut out = format!(
        "plan (row {}): {} of {} done, {}, {}, {}, {}\n",
        count("plan")?,
        count("done")?,
        count("total")?,
        style.state("running", &format!("{} running", count("running")?)),
        format_args!("{} ready", count("ready")?),
        style.state("blocked", &format!("{} blocked", count("blocked")?)),
        style.state("failed", &format!("{} failed", count("failed")?)),
    );
    for call in report
        .get("calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let state = str_of(call, "state").unwrap_or_default();
        let mut parts = Vec::new();
        if let Some(instance) = str_of(call, "instance") {
            parts.push(format!("instance {}", shown(instance)));
        }
        if let Some(reason) = str_of(call, "reason") {
            parts.push(shown(reason));
        }
        if let Some(worker) = str_of(call, "worker") {
            let attempts = call.get("attempts").and_then(Value::as_u64).unwrap_or(0);
            parts.push(format!("worker {}, {attempts} attempt(s)", shown(worker)));
        }
        if let Some(error) = str_of(call, "error") {
            parts.push(format!("last error: {}", shown(error)));
        }
        let _ = writeln!(
            out,
            "{:>4}  {}  {}  {}",
            number(call),
            shown(str_of(call, "tool").unwrap_or_default()),
            style.state(state, state),
            parts.join("; ")
        );
    }
    Some(out)
}

/// `verify`'s report: what was checked, the head, and each finding.
fn verify(report: &Value, style: &Style) -> Option<String> {
    let name = shown(str_of(report, "name")?);
    let messages = report.get("messages")?.as_u64()?;
    let head = str_of(report, "head")?;
    let findings = report.get("findings")?.as_array()?;
    let verdict = if findings.is_empty() {
        style.state(
            "done",
            "the chain of digests and everything kept beside it agree",
        )
    } else {
        style.state("failed", &format!("{} finding(s)", findings.len()))
    };
    let mut out = format!("{name}: {messages} message(s); {verdict}\nhead {head}\n");
    if report.get("folded").and_then(Value::as_bool) == Some(false) {
        out.push_str(
            "checked: the lines hashed as stored (--chain); the snapshot's views not folded again\n",
        );
    }
    for finding in findings {
        let kind = str_of(finding, "finding").map_or_else(String::new, shown);
        let fields: Vec<String> = finding
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| &**key != "finding")
            .map(|(key, value)| match value.as_str() {
                Some(text) => format!("{} {}", shown(key), shown(text)),
                None => format!("{} {}", shown(key), brief(value, 80)),
            })
            .collect();
        let _ = writeln!(out, "  - {kind}: {}", fields.join(", "));
    }
    Some(out)
}

/// `apply`'s messages (JSONL), each indented.
fn apply(jsonl: &str) -> Option<String> {
    let mut out = String::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let message: Value = agent_core::json::from_str(line).ok()?;
        let pretty = agent_core::json::to_string_pretty(&message);
        out.push_str(&agent_core::json_for_terminal(&pretty));
        out.push('\n');
    }
    Some(out)
}

/// `instances`: one id a line.
fn instances(list: &Value) -> Option<String> {
    let ids = list.as_array()?;
    let mut out = String::new();
    for id in ids {
        out.push_str(&shown(id.as_str()?));
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const PLAIN: Style = Style { colour: false };

    #[test]
    fn d108_a_run_report_reads_as_a_line_per_call_and_the_counts() {
        let report = r#"{"calls":[
          {"index":0,"tool":"classify","wave":0,"status":"done","outcome":"success","outcomeIndex":0,"paths":["†state.label"]},
          {"index":1,"tool":"decide","wave":1,"status":"done","outcome":"failure","outcomeIndex":1,"paths":["†state.escalation"],"failure":{"exitStatus":1}},
          {"index":2,"tool":"notify\u001b[2J","wave":2,"status":"failed","error":"exit status 3"},
          {"index":3,"tool":"x","wave":null,"status":"blocked","missing":["†state.y"]}],
          "warnings":["¶stat: no such kind"]}"#;
        assert_eq!(
            text(Report::Run, report, &PLAIN).unwrap(),
            "  #0  classify         done     → †state.label\n  \
             #1  decide           done     → †state.escalation  (its failure, handled: {\"exitStatus\":1})\n  \
             #2  notify\\u001b[2J  failed   exit status 3\n  \
             #3  x                blocked  missing †state.y\n\
             4 call(s): 2 done, 1 failed, 1 blocked\n\
             warning: ¶stat: no such kind\n"
        );
    }

    #[test]
    fn d108_colour_marks_standings_and_no_colour_leaves_none() {
        let report = r#"{"calls":[{"index":0,"tool":"t","wave":0,"status":"done","outcome":"success","outcomeIndex":0,"paths":[]}]}"#;
        let coloured = text(Report::Run, report, &Style { colour: true }).unwrap();
        assert!(
            coloured.contains("\u{1b}[32mdone   \u{1b}[0m"),
            "{coloured:?}"
        );
        assert!(
            !text(Report::Run, report, &PLAIN)
                .unwrap()
                .contains('\u{1b}')
        );
    }

    #[test]
    fn d108_verify_status_instances_and_apply_read_as_text() {
        let verified = r#"{"name":"c.jsonl","messages":2,"head":"ab","findings":[{"finding":"head","expected":"cd","found":"ab"}]}"#;
        assert_eq!(
            text(Report::Verify, verified, &PLAIN).unwrap(),
            "c.jsonl: 2 message(s); 1 finding(s)\nhead ab\n  - head: expected cd, found ab\n"
        );
        let status = r#"{"plan":7,"total":3,"done":1,"running":1,"ready":0,"blocked":1,"failed":0,
          "calls":[{"index":1,"tool":"score","instance":"①","state":"running","worker":"w1","since":"2026","attempts":2}]}"#;
        assert_eq!(
            text(Report::Status, status, &PLAIN).unwrap(),
            "plan (row 7): 1 of 3 done, 1 running, 0 ready, 1 blocked, 0 failed\n  \
             #1  score  running  instance ①; worker w1, 2 attempt(s)\n"
        );
        assert_eq!(
            text(Report::Instances, r#"["①","x\u202ey"]"#, &PLAIN).unwrap(),
            "①\nx\\u202ey\n"
        );
        assert_eq!(
            text(
                Report::Apply,
                "{\"type\":\"state\",\"data\":{\"a\":1}}\n",
                &PLAIN
            )
            .unwrap(),
            "{\n  \"type\": \"state\",\n  \"data\": {\n    \"a\": 1\n  }\n}\n"
        );
        // Not the report's shape: printed as it is.
        assert_eq!(text(Report::Verify, "[1]", &PLAIN), None);
    }
}
