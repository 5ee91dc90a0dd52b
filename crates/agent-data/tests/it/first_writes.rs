//! Loading JSONL adds a line that opens an instance layer with one data
//! message or shorthand without reading its value (D81: unread instance lines). These tests hold it to the
//! rule that makes that safe: the context is exactly what reading every
//! line gives — the same log, chain, layers, instances, views and
//! diagnostics, and the same errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::*;
use agent_data::{Context, Format, Identity};
use proptest::prelude::*;

/// Everything a read of the context can tell.
fn state(ctx: &Context) -> impl PartialEq + std::fmt::Debug + use<> {
    let identities: Vec<Identity> = ctx.identities().cloned().collect();
    let layer_views: Vec<_> = ctx
        .identities()
        .map(|id| {
            (
                ctx.layer_view(id).cloned(),
                ctx.view(&id.kind, id.instance.as_ref()).cloned(),
                ctx.layer_messages(id).to_vec(),
            )
        })
        .collect();
    (
        ctx.to_jsonl(),
        ctx.head(),
        identities,
        ctx.instances().cloned().collect::<Vec<_>>(),
        views(ctx),
        layer_views,
        ctx.diagnostics(),
        (0..ctx.len())
            .map(|i| ctx.message_layer(i))
            .collect::<Vec<_>>(),
    )
}

fn load(jsonl: &str) -> agent_data::Result<Context> {
    Context::load(jsonl.as_bytes(), Format::Jsonl).map(|loaded| loaded.context)
}

/// The same lines, each with a blank before it: no line is its compact
/// text, so every one is read and written again.
fn every_line_read(jsonl: &str) -> String {
    jsonl.lines().map(|line| format!(" {line}\n")).collect()
}

/// JSONL lines of many shapes over a few instances of two kinds: first
/// writes of an instance (the shapes taken unread, members in several
/// orders, `kind` left out), its later writes, global writes, output
/// writes, erases, shorthands (with data members only, none, a `kind`, a
/// `data`, an `input` and an output path), text, and lines with escapes.
fn line() -> impl Strategy<Value = String> {
    let instance = (0..6u8).prop_map(|i| format!("i{i}"));
    let kind = prop::sample::select(vec!["item", "other"]);
    let data = prop::sample::select(vec![
        r#"{"n":1}"#,
        r#"{"n":2,"s":"a\nb"}"#,
        r#"{"n":{"deep":[1,2,{"x":null}]}}"#,
        r#"5"#,
        r#"[1,2]"#,
        r#"{"n":"\u0001"}"#,
        r#"{"n":1.50}"#,
    ]);
    (instance, kind, data, 0..15u8).prop_map(|(x, k, d, shape)| match shape {
        0 | 1 => format!(r#"{{"type":"data","kind":"{k}","data":{d},"_instance":"{x}"}}"#),
        2 => format!(r#"{{"_instance":"{x}","data":{d},"type":"data","kind":"{k}"}}"#),
        3 => format!(r#"{{"type":"data","data":{d},"_instance":"{x}"}}"#),
        4 => format!(r#"{{"type":"data","kind":"{k}","data":{d}}}"#),
        5 => format!(
            r#"{{"type":"data","kind":"{k}","data":{{"n":{d}}},"_outputPath":"†{k}.n","_instance":"{x}"}}"#
        ),
        6 => format!(
            r#"{{"type":"data","kind":"{k}","data":null,"_outputMethod":"erase","_instance":"{x}"}}"#
        ),
        7 => format!(r#"{{"type":"state","n":{d},"_instance":"{x}"}}"#),
        9 => format!(r#"{{"type":"input","_instance":"{x}","a\nb":{d},"c":"x"}}"#),
        10 => format!(r#"{{"type":"state","_instance":"{x}"}}"#),
        11 => format!(r#"{{"type":"state","kind":"{k}","n":{d},"_instance":"{x}"}}"#),
        12 => format!(r#"{{"type":"state","data":{d},"m":1,"_instance":"{x}"}}"#),
        13 => format!(r#"{{"type":"input","input":{d},"_instance":"{x}","_outputPath":"†input"}}"#),
        _ => r#"{"type":"text","text":"go on\n"}"#.to_owned(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn d81_first_instance_writes_load_unread_as_when_read(lines in prop::collection::vec(line(), 0..40)) {
        let jsonl: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let unread = load(&jsonl).unwrap();
        let read = load(&every_line_read(&jsonl)).unwrap();
        prop_assert_eq!(state(&unread), state(&read));
    }

    #[test]
    fn d81_generated_logs_load_unread_as_when_read(messages in log(40)) {
        let jsonl = to_context(messages).to_jsonl();
        let unread = load(&jsonl).unwrap();
        let read = load(&every_line_read(&jsonl)).unwrap();
        prop_assert_eq!(state(&unread), state(&read));
    }

    #[test]
    fn d83_a_size_hint_never_changes_the_loaded_context(
        lines in prop::collection::vec(line(), 0..40),
        hint in prop_oneof![Just(0usize), 0..4096usize, Just(usize::MAX / 2), Just(usize::MAX)],
    ) {
        let jsonl: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let plain = load(&jsonl).unwrap();
        let hinted = Context::load_jsonl_reader_sized(jsonl.as_bytes(), "hinted", hint)
            .unwrap()
            .context;
        prop_assert_eq!(state(&hinted), state(&plain));
    }
}

#[test]
fn d81_a_bad_first_write_fails_as_when_read() {
    for bad in [
        r#"{"type":"data","kind":"no spaces","data":{},"_instance":"i1"}"#,
        r#"{"type":"data","kind":"item","data":{},"_instance":""}"#,
        r#"{"type":"data","kind":7,"data":{},"_instance":"i1"}"#,
        r#"{"type":"data","kind":"item","_instance":"i1"}"#,
    ] {
        let jsonl = format!("{{\"type\":\"text\",\"text\":\"hi\"}}\n{bad}\n");
        let unread = load(&jsonl).unwrap_err().to_string();
        let read = load(&every_line_read(&jsonl)).unwrap_err().to_string();
        assert_eq!(unread, read, "{bad}");
        assert!(unread.contains("line 2"), "{unread}");
    }
}

#[test]
fn d81_a_first_write_is_read_again_when_its_view_is_asked_for() {
    let jsonl = concat!(
        r#"{"type":"data","kind":"item","data":{"n":0,"label":"default"}}"#,
        "\n",
        r#"{"type":"data","kind":"item","data":{"n":5},"_instance":"i5"}"#,
        "\n",
    );
    let ctx = load(jsonl).unwrap();
    let item = agent_core::Kind::new("item").unwrap();
    let i5 = agent_core::Instance::new("i5").unwrap();
    assert_eq!(
        ctx.view(&item, Some(&i5)),
        Some(&agent_core::json!({"n": 5, "label": "default"}))
    );
    assert_eq!(ctx.instances().count(), 1);
}

/// What a context opened from a snapshot can tell: everything but the
/// messages it summarised.
fn restored_state(ctx: &Context) -> impl PartialEq + std::fmt::Debug {
    let layers: Vec<_> = ctx
        .identities()
        .map(|id| {
            (
                id.clone(),
                ctx.layer_view(id).cloned(),
                ctx.view(&id.kind, id.instance.as_ref()).cloned(),
                ctx.layer_len(id),
            )
        })
        .collect();
    (
        ctx.len(),
        ctx.head(),
        layers,
        ctx.instances().cloned().collect::<Vec<_>>(),
        views(ctx),
        ctx.diagnostics(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A snapshot's held lines are read for their identity the same way
    /// (unread when they are compact data messages without a schema or
    /// description): the context opened from it reads as the one it was
    /// taken of.
    #[test]
    fn d81_held_lines_restore_as_the_context_they_were_taken_of(
        lines in prop::collection::vec(line(), 0..40),
    ) {
        let jsonl: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let full = load(&jsonl).unwrap();
        let bytes = full.snapshot(&agent_core::json!(null)).unwrap();
        let (resumed, _) = Context::from_snapshot(&bytes).unwrap();
        prop_assert_eq!(restored_state(&resumed), restored_state(&full));
    }
}

#[test]
fn d81_r33_first_writes_at_the_depth_limit_load_as_when_read() {
    // A shorthand's data is one level deeper once normalised: at the
    // limit, reading it fails, and so must the unread load.
    let nested = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    for depth in [125, 126, 127, 128] {
        for line in [
            format!(
                r#"{{"type":"state","v":{},"_instance":"i1"}}"#,
                nested(depth)
            ),
            format!(
                r#"{{"type":"data","kind":"item","data":{},"_instance":"i1"}}"#,
                nested(depth)
            ),
        ] {
            let jsonl = format!("{line}\n");
            let unread = load(&jsonl)
                .map(|ctx| state(&ctx))
                .map_err(|e| e.to_string());
            let read = load(&every_line_read(&jsonl))
                .map(|ctx| state(&ctx))
                .map_err(|e| e.to_string());
            match (&unread, &read) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{depth}"),
                // The blank shifts columns and offsets by one.
                (Err(a), Err(b)) => assert_eq!(digitless(a), digitless(b), "{depth}"),
                _ => panic!("depth {depth}: {unread:?} against {read:?}"),
            }
        }
    }
}

/// `text` with its numbers left out.
fn digitless(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_digit()).collect()
}

#[test]
fn d81_a_planted_held_line_is_read_as_when_spelled_otherwise() {
    // A snapshot is a file anyone may have written: each held line, changed,
    // must give what the same line read whole gives (a blank after its `{`
    // keeps it from the quick reading), error or context.
    let jsonl = concat!(
        r#"{"type":"data","kind":"item","data":{"n":0}}"#,
        "\n",
        r#"{"type":"data","kind":"item","data":{"n":1},"_instance":"i1"}"#,
        "\n",
    );
    let bytes = load(jsonl)
        .unwrap()
        .snapshot(&agent_core::json!(null))
        .unwrap();
    let text = String::from_utf8(bytes).unwrap();
    // Held packed (D87: packed snapshot lines): the line without what every instance write repeats.
    let held = r#"["item","i1",{"n":1}]"#;
    assert!(text.contains(held), "{text}");
    for planted in [
        r#"["item","i2",{"n":2}]"#,
        r#"["other","i2",{"n":1}]"#,
        r#"["no such","i1",{"n":1}]"#,
        r#"["item","",{"n":1}]"#,
        r#"["item","i1",{"n":1},"description":"d"]"#,
        r#"["item","i1",{"n":1},"kind":"other"]"#,
        r#"{"type":"text","kind":"item","data":{"n":1},"_instance":"i1"}"#,
        r#"{"type":"data","kind":null,"data":{"n":1},"_instance":"i1"}"#,
        r#"{"type":"data","kind":1,"data":{"n":1},"_instance":"i1"}"#,
        r#"{"type":"data","kind":"no such","data":{"n":1},"_instance":"i1"}"#,
        r#"{"type":"data","kind":"it\u0065m","data":{"n":1},"_instance":"i1"}"#,
        r#"{"type":"data","data":{"n":1},"_instance":"i1"}"#,
        r#"{"type":"data","kind":"item","data":{"n":1},"_instance":""}"#,
        r#"{"type":"data","kind":"item","data":{"n":1},"_instance":7}"#,
        r#"{"type":"data","kind":"item","data":{"n":1}}"#,
        r#"{"type":"data","kind":"item","data":{"n":1},"_instance":"i1","description":null}"#,
        r#"{"type":"data","kind":"item","data":{"n":1},"_instance":"i1","description":"d"}"#,
        r#"{"type":"data","kind":"item","kind":"item","data":{"n":1},"_instance":"i1"}"#,
        r#"{"type":"data","kind":"other","data":{"n":1},"_instance":"i2"}"#,
    ] {
        let quick = Context::from_snapshot(text.replace(held, planted).as_bytes());
        let spelled = planted.replacen('{', "{ ", 1);
        let whole = Context::from_snapshot(text.replace(held, &spelled).as_bytes());
        match (&quick, &whole) {
            (Ok((a, _)), Ok((b, _))) => {
                assert_eq!(restored_state(a), restored_state(b), "{planted}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{planted}"),
            _ => panic!("{planted}: {:?} against {:?}", quick.is_ok(), whole.is_ok()),
        }
    }
}
