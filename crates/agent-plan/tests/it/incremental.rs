//! Standings kept between looks (D113: incremental rounds) are what a
//! fresh judgement of every call gives, whatever changed in between.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::json::{Map, Value};
use agent_core::{Kind, json};
use agent_data::{Context, Identity, Message};
use agent_plan::{Known, Plan, Standing, Standings, standings};
use proptest::prelude::*;

const KINDS: [&str; 2] = ["k", "m"];
const PATHS: [&str; 3] = ["x", "y", "z"];
const INSTANCES: [Option<&str>; 3] = [None, Some("a"), Some("b")];

/// One call: its tool (`u` has no activity anywhere), instance, reads and
/// where it writes.
#[derive(Debug, Clone)]
struct CallSpec {
    tool_missing: bool,
    instance: usize,
    reads: Vec<(usize, usize)>,
    writes: Option<(usize, usize)>,
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (
        prop::bool::weighted(0.15),
        0..3usize,
        prop::collection::vec((0..2usize, 0..3usize), 0..3),
        prop::option::of((0..2usize, 0..3usize)),
    )
        .prop_map(|(tool_missing, instance, reads, writes)| CallSpec {
            tool_missing,
            instance,
            reads,
            writes,
        })
}

fn call(spec: &CallSpec) -> Value {
    let mut call = Map::new();
    let tool = if spec.tool_missing { "u" } else { "t" };
    call.insert("_tool".into(), tool.into());
    if let Some(instance) = INSTANCES[spec.instance] {
        call.insert("_instance".into(), instance.into());
    }
    for (i, (kind, path)) in spec.reads.iter().enumerate() {
        call.insert(
            format!("p{i}"),
            format!("†{}.{}", KINDS[*kind], PATHS[*path]).into(),
        );
    }
    if let Some((kind, path)) = spec.writes {
        let to = format!("†{}.{}", KINDS[kind], PATHS[path]);
        call.insert("_outputPath".into(), to.into());
    }
    Value::Object(call)
}

/// What happens between two looks.
#[derive(Debug, Clone)]
enum Step {
    /// A call's record changes.
    Record(usize, Known),
    /// A message is appended to a layer: a value set, or erased.
    Append {
        kind: usize,
        instance: usize,
        path: usize,
        erase: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let known = prop_oneof![
        Just(Known::Open),
        Just(Known::Done),
        Just(Known::Failed),
        Just(Known::Running)
    ];
    prop_oneof![
        (0..8usize, known).prop_map(|(call, known)| Step::Record(call, known)),
        (0..2usize, 0..3usize, 0..3usize, prop::bool::ANY).prop_map(
            |(kind, instance, path, erase)| Step::Append {
                kind,
                instance,
                path,
                erase
            }
        ),
    ]
}

fn message(kind: usize, instance: usize, path: usize, erase: bool) -> Message {
    let mut fields = Map::new();
    fields.insert("type".into(), "data".into());
    fields.insert("kind".into(), KINDS[kind].into());
    let value = if erase { Value::Null } else { json!(1) };
    let mut data = Map::new();
    data.insert(PATHS[path].into(), value);
    fields.insert("data".into(), Value::Object(data));
    fields.insert(
        "_outputPath".into(),
        format!("†{}.{}", KINDS[kind], PATHS[path]).into(),
    );
    if erase {
        fields.insert("_outputMethod".into(), "erase".into());
    }
    if let Some(instance) = INSTANCES[instance] {
        fields.insert("_instance".into(), instance.into());
    }
    Message::from_value(Value::Object(fields))
        .unwrap()
        .remove(0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn d113_kept_standings_equal_a_fresh_judgement_after_any_changes(
        specs in prop::collection::vec(call_spec(), 1..8),
        steps in prop::collection::vec(step(), 1..12),
    ) {
        let plan = Plan::new(specs.iter().map(call).collect());
        prop_assume!(plan.is_ok());
        let plan = plan.unwrap();
        let n = plan.calls().len();
        let writes_after = plan.writes_after();
        let has_tool = |tool: &str| tool == "t";
        let mut context = Context::new();
        let mut known = vec![Known::Open; n];
        let mut kept = Standings::new(&plan, &writes_after, &known, &context, &has_tool);
        for step in steps {
            let (calls, layers) = match step {
                Step::Record(call, now) => {
                    let call = call % n;
                    known[call] = now;
                    (vec![call], Vec::new())
                }
                Step::Append { kind, instance, path, erase } => {
                    context.append(&message(kind, instance, path, erase)).unwrap();
                    let layer = Identity {
                        kind: Kind::new(KINDS[kind]).unwrap(),
                        instance: INSTANCES[instance].map(|i| i.parse().unwrap()),
                    };
                    (Vec::new(), vec![layer])
                }
            };
            let before: Vec<Standing> = kept.all().to_vec();
            let changed = kept.update(&plan, &writes_after, &known, &context, &has_tool, &calls, &layers);
            let fresh = standings(&plan, &writes_after, &known, &context, &has_tool);
            prop_assert_eq!(kept.all(), &fresh[..]);
            // What it says changed is exactly what did.
            let mut differ: Vec<usize> = (0..n).filter(|&c| before[c] != fresh[c]).collect();
            let mut said = changed.clone();
            differ.sort_unstable();
            said.sort_unstable();
            prop_assert_eq!(said, differ);
        }
    }
}

#[test]
fn d113_a_value_appended_in_one_instance_readies_that_instances_reader_alone() {
    // 200 instances, each a reader of `k.x` in its instance.
    let calls: Vec<Value> = (0..200)
        .map(|i| json!({"_tool": "t", "_instance": format!("i{i}"), "v": "†k.x", "_outputPath": "†m.y"}))
        .collect();
    let plan = Plan::new(calls).unwrap();
    let writes_after = plan.writes_after();
    let mut context = Context::new();
    let known = vec![Known::Open; 200];
    let mut kept = Standings::new(&plan, &writes_after, &known, &context, &|_| true);
    assert!(
        kept.all()
            .iter()
            .all(|s| matches!(s, Standing::Blocked { .. }))
    );
    context
        .append(
            &Message::from_value(
                json!({"type": "data", "kind": "k", "data": {"x": 1}, "_instance": "i7"}),
            )
            .unwrap()[0],
        )
        .unwrap();
    let layer = Identity {
        kind: Kind::new("k").unwrap(),
        instance: Some("i7".parse().unwrap()),
    };
    let changed = kept.update(
        &plan,
        &writes_after,
        &known,
        &context,
        &|_| true,
        &[],
        &[layer],
    );
    assert_eq!(changed, [7]);
    assert_eq!(kept.get(7), Some(&Standing::Ready));
}

/// A worker's run of `n` independent calls, one instance each, as the
/// kept standings see it: each result lands (its row done, its layer
/// appended) and the standings are updated, one result at a time.
fn run_by_results(n: usize) -> std::time::Duration {
    let calls: Vec<Value> = (0..n)
        .map(|i| json!({"_tool": "t", "_instance": format!("i{i}"), "q": "†input.q", "_outputPath": "†state.a"}))
        .collect();
    let plan = Plan::new(calls).unwrap();
    let writes_after = plan.writes_after();
    let mut context = Context::new();
    context
        .append(&Message::from_value(json!({"type": "input", "data": {"q": 1}})).unwrap()[0])
        .unwrap();
    let mut known = vec![Known::Open; n];
    let mut kept = Standings::new(&plan, &writes_after, &known, &context, &|_| true);
    let results: Vec<(Message, Identity)> = (0..n)
        .map(|i| {
            let message = json!({"type": "state", "data": {"a": i}, "_instance": format!("i{i}")});
            let layer = Identity {
                kind: Kind::new("state").unwrap(),
                instance: Some(format!("i{i}").parse().unwrap()),
            };
            (Message::from_value(message).unwrap().remove(0), layer)
        })
        .collect();
    let started = std::time::Instant::now();
    for (i, (message, layer)) in results.iter().enumerate() {
        known[i] = Known::Done;
        context.append(message).unwrap();
        let changed = kept.update(
            &plan,
            &writes_after,
            &known,
            &context,
            &|_| true,
            &[i],
            std::slice::from_ref(layer),
        );
        assert_eq!(changed, [i]);
    }
    let took = started.elapsed();
    assert!(kept.all().iter().all(|s| *s == Standing::Done));
    took
}

#[test]
fn d113_keeping_standings_through_a_run_costs_time_linear_in_its_results() {
    let small = (0..3).map(|_| run_by_results(1_000)).min().unwrap();
    let large = (0..3).map(|_| run_by_results(10_000)).min().unwrap();
    test_support::growth::assert_linear("results of a run, each judged as it lands", small, large);
}
