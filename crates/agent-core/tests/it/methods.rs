//! spec R10 (methods) and R11 (writing at a path), rule by rule.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Error, Method, Path, UnknownMethod, check_write, write, write_checked};
use agent_core::{json, json::Value};

fn apply(
    view: Option<Value>,
    path: &str,
    method: Method,
    v: Value,
) -> Result<Option<Value>, Error> {
    let mut view = view;
    write(&mut view, &Path::parse(path).unwrap(), method, v)?;
    Ok(view)
}

fn ok(view: Option<Value>, path: &str, method: Method, v: Value) -> Value {
    apply(view, path, method, v).unwrap().unwrap()
}

fn type_err(view: Option<Value>, path: &str, method: Method, v: Value) -> String {
    let before = view.clone();
    let mut after = view;
    let err = write(&mut after, &Path::parse(path).unwrap(), method, v).unwrap_err();
    assert_eq!(after, before, "a refused write changes nothing");
    assert!(matches!(err, Error::Type { .. }), "{err:?}");
    err.to_string()
}

#[test]
fn r10_set_replaces_anything() {
    assert_eq!(
        ok(Some(json!({"a": [1]})), ".a", Method::Set, json!(2)),
        json!({"a": 2})
    );
    assert_eq!(ok(None, "", Method::Set, json!(null)), json!(null));
}

#[test]
fn r10_merge_is_deep_and_arrays_and_null_replace() {
    let cur = json!({"u": {"a": 1, "b": {"c": 1, "d": [1]}}, "k": 1});
    let got = ok(
        Some(cur),
        "",
        Method::Merge,
        json!({"u": {"b": {"d": [2], "e": null}}, "n": 0}),
    );
    assert_eq!(
        got,
        json!({"u": {"a": 1, "b": {"c": 1, "d": [2], "e": null}}, "k": 1, "n": 0})
    );
    assert_eq!(
        ok(Some(json!({"k": 1})), "", Method::Merge, json!({"k": null})),
        json!({"k": null})
    );
}

#[test]
fn r10_merge_of_non_objects_replaces() {
    assert_eq!(
        ok(Some(json!([1])), "", Method::Merge, json!({"a": 1})),
        json!({"a": 1})
    );
    assert_eq!(
        ok(Some(json!({"a": 1})), "", Method::Merge, json!(5)),
        json!(5)
    );
}

#[test]
fn r10_assign_is_shallow() {
    let got = ok(
        Some(json!({"u": {"a": 1}, "x": 1})),
        "",
        Method::Assign,
        json!({"u": {"b": 2}}),
    );
    assert_eq!(got, json!({"u": {"b": 2}, "x": 1}));
    assert_eq!(
        ok(Some(json!("s")), "", Method::Assign, json!({"a": 1})),
        json!({"a": 1})
    );
}

#[test]
fn r10_push_onto_missing_creates_array() {
    assert_eq!(
        ok(None, ".list", Method::Push, json!(1)),
        json!({"list": [1]})
    );
    assert_eq!(
        ok(Some(json!({"list": null})), ".list", Method::Push, json!(1)),
        json!({"list": [1]})
    );
    assert_eq!(
        ok(
            Some(json!({"list": [0]})),
            ".list",
            Method::Push,
            json!([1])
        ),
        json!({"list": [0, [1]]})
    );
}

#[test]
fn r10_push_onto_non_array_is_type_error() {
    let msg = type_err(Some(json!({"n": 3})), ".n", Method::Push, json!(1));
    assert_eq!(msg, "type error at .n: cannot push onto a number");
}

#[test]
fn r10_concat_rows() {
    assert_eq!(
        ok(None, ".a", Method::Concat, json!([1])),
        json!({"a": [1]})
    );
    assert_eq!(
        ok(None, ".a", Method::Concat, json!("x")),
        json!({"a": "x"})
    );
    assert_eq!(
        ok(Some(json!({"a": [1]})), ".a", Method::Concat, json!([2, 3])),
        json!({"a": [1, 2, 3]})
    );
    assert_eq!(
        ok(Some(json!({"a": "ab"})), ".a", Method::Concat, json!("cd")),
        json!({"a": "abcd"})
    );
    assert_eq!(
        ok(Some(json!({"a": null})), ".a", Method::Concat, json!("x")),
        json!({"a": "x"})
    );
    type_err(None, ".a", Method::Concat, json!(1));
    type_err(Some(json!({"a": [1]})), ".a", Method::Concat, json!("x"));
    type_err(Some(json!({"a": "x"})), ".a", Method::Concat, json!(["x"]));
    type_err(Some(json!({"a": {}})), ".a", Method::Concat, json!({}));
}

#[test]
fn r10_unknown_method_name_is_rejected() {
    assert_eq!("merge".parse::<Method>(), Ok(Method::Merge));
    assert_eq!(
        "replace".parse::<Method>(),
        Err(UnknownMethod {
            name: "replace".into()
        })
    );
}

#[test]
fn r10_existing_keys_keep_position_new_keys_append() {
    let got = ok(
        Some(json!({"b": 1, "a": 1})),
        "",
        Method::Merge,
        json!({"c": 2, "a": 2}),
    );
    let keys: Vec<_> = got.as_object().unwrap().keys().map(str::to_owned).collect();
    assert_eq!(keys, ["b", "a", "c"]);
    let got = ok(Some(json!({"b": 1, "a": 1})), ".b", Method::Set, json!(0));
    let keys: Vec<_> = got.as_object().unwrap().keys().map(str::to_owned).collect();
    assert_eq!(keys, ["b", "a"]);
}

#[test]
fn r11_missing_intermediates_are_created_as_objects() {
    assert_eq!(
        ok(None, ".a.b[2]", Method::Set, json!(1)),
        json!({"a": {"b": {"2": 1}}})
    );
    assert_eq!(
        ok(Some(json!({"a": null})), ".a.b", Method::Set, json!(1)),
        json!({"a": {"b": 1}})
    );
}

#[test]
fn r11_arrays_are_entered_by_canonical_index_within_bounds() {
    let cur = Some(json!({"a": [{"x": 1}, {"x": 2}]}));
    assert_eq!(
        ok(cur.clone(), ".a[1].x", Method::Set, json!(9)),
        json!({"a": [{"x": 1}, {"x": 9}]})
    );
    assert_eq!(
        ok(cur.clone(), ".a.0.x", Method::Set, json!(9)),
        json!({"a": [{"x": 9}, {"x": 2}]})
    );
    assert_eq!(
        ok(cur.clone(), ".a[2]", Method::Set, json!(3)),
        json!({"a": [{"x": 1}, {"x": 2}, 3]})
    );
    assert_eq!(
        ok(cur.clone(), ".a[2].y", Method::Set, json!(3)),
        json!({"a": [{"x": 1}, {"x": 2}, {"y": 3}]})
    );
    assert_eq!(
        type_err(cur.clone(), ".a[-1]", Method::Set, json!(0)),
        "type error at .a: a negative index cannot be written through"
    );
    assert_eq!(
        type_err(cur.clone(), ".a[3]", Method::Set, json!(0)),
        "type error at .a: index 3 is past the end of an array of 2"
    );
    type_err(cur.clone(), ".a.01", Method::Set, json!(0));
    type_err(cur, ".a.x", Method::Set, json!(0));
}

#[test]
fn r11_stepping_into_a_scalar_is_type_error() {
    assert_eq!(
        type_err(Some(json!({"a": "s"})), ".a.b.c", Method::Set, json!(0)),
        "type error at .a: cannot write inside a string"
    );
    type_err(Some(json!(true)), ".x", Method::Merge, json!(0));
}

#[test]
fn r11_check_write_agrees_with_write() {
    let cur = json!({"a": [1], "s": "x"});
    for (path, method, v) in [
        (".a", Method::Push, json!(1)),
        (".s", Method::Push, json!(1)),
        (".s.t", Method::Set, json!(1)),
    ] {
        let path = Path::parse(path).unwrap();
        let checked = check_write(Some(&cur), &path, method, &v);
        let written = write(&mut Some(cur.clone()), &path, method, v);
        assert_eq!(checked, written);
    }
}

#[test]
fn r10_r11_write_checked_writes_what_write_writes_after_a_check() {
    let cur = json!({"a": [1, {"b": 2}], "s": "x", "n": null, "o": {"k": {"z": 1}}});
    for (path, method, v) in [
        (".a", Method::Push, json!(3)),
        (".a", Method::Concat, json!([4, 5])),
        (".s", Method::Concat, json!("y")),
        (".a[1].b", Method::Set, json!({"c": 1})),
        (".a[2]", Method::Set, json!(6)),
        (".n.m.q", Method::Push, json!(1)),
        (".o", Method::Merge, json!({"k": {"y": 2}})),
        (".o", Method::Assign, json!({"k": 0})),
        (".o.k.z", Method::Erase, json!(null)),
        (".new[0]", Method::Set, json!(1)),
        ("", Method::Merge, json!({"s": "t"})),
    ] {
        let path = Path::parse(path).unwrap();
        check_write(Some(&cur), &path, method, &v).unwrap();
        let (mut written, mut checked) = (Some(cur.clone()), Some(cur.clone()));
        write(&mut written, &path, method, v.clone()).unwrap();
        write_checked(&mut checked, &path, method, v).unwrap();
        assert_eq!(checked, written, "{path} {method:?}");
    }
}

fn erased(view: Option<Value>, path: &str) -> Option<Value> {
    apply(view, path, Method::Erase, json!(null)).unwrap()
}

#[test]
fn r10b_erase_removes_a_key_and_the_others_keep_their_order() {
    let cur = Some(json!({"b": 1, "a": {"x": 1, "y": 2}, "c": 3}));
    let got = erased(cur.clone(), ".a").unwrap();
    assert_eq!(got, json!({"b": 1, "c": 3}));
    let keys: Vec<_> = got.as_object().unwrap().keys().map(str::to_owned).collect();
    assert_eq!(keys, ["b", "c"]);
    assert_eq!(
        erased(cur, ".a.x"),
        Some(json!({"b": 1, "a": {"y": 2}, "c": 3}))
    );
}

#[test]
fn r10b_erase_of_the_root_leaves_the_view_absent() {
    assert_eq!(erased(Some(json!({"a": 1})), ""), None);
    assert_eq!(erased(Some(json!(null)), ""), None);
    assert_eq!(erased(None, ""), None);
}

#[test]
fn r10b_erase_at_an_array_index_leaves_null_and_keeps_the_other_indexes() {
    let cur = Some(json!({"l": ["a", "b", "c"]}));
    assert_eq!(
        erased(cur.clone(), ".l[1]"),
        Some(json!({"l": ["a", null, "c"]}))
    );
    assert_eq!(
        erased(cur.clone(), ".l.0"),
        Some(json!({"l": [null, "b", "c"]}))
    );
    // A negative index addresses what a read of it finds (R8): the last element.
    assert_eq!(
        erased(cur.clone(), ".l[-1]"),
        Some(json!({"l": ["a", "b", null]}))
    );
    assert_eq!(erased(cur, ".l[-3]"), Some(json!({"l": [null, "b", "c"]})));
    let nested = Some(json!({"l": [{"x": 1, "y": 2}]}));
    assert_eq!(erased(nested, ".l[-1].x"), Some(json!({"l": [{"y": 2}]})));
}

#[test]
fn r10b_erase_where_the_path_reads_absent_changes_nothing() {
    let cur = json!({"a": {"x": 1}, "l": [1, 2], "s": "text", "n": null});
    for path in [
        ".b", ".a.y", ".a.x.z", ".l[2]", ".l[-3]", ".l.x", ".l.01", ".s.t", ".n.m", ".b.c.d",
    ] {
        assert_eq!(erased(Some(cur.clone()), path), Some(cur.clone()), "{path}");
    }
    assert_eq!(erased(None, ".a.b"), None);
}

#[test]
fn r10b_erase_then_accumulate_starts_from_nothing() {
    let cur = Some(json!({"log": [1, 2], "u": {"a": 1}}));
    let after = apply(cur, ".log", Method::Erase, json!(null)).unwrap();
    assert_eq!(
        ok(after.clone(), ".log", Method::Push, json!(3)),
        json!({"u": {"a": 1}, "log": [3]})
    );
    let after = apply(after, ".u", Method::Erase, json!(null)).unwrap();
    assert_eq!(
        ok(after, ".u", Method::Merge, json!({"b": 2})),
        json!({"u": {"b": 2}})
    );
    // A null hole left in an array takes any method as "no value yet" (D1: null intermediates).
    let holed = erased(Some(json!({"l": [[1], "s"]})), ".l[0]");
    assert_eq!(
        ok(holed.clone(), ".l[0]", Method::Concat, json!([7])),
        json!({"l": [[7], "s"]})
    );
    assert_eq!(
        ok(holed, ".l[0].k", Method::Set, json!(1)),
        json!({"l": [{"k": 1}, "s"]})
    );
}

#[test]
fn r10b_erase_ignores_the_value_and_is_never_a_type_error() {
    let cur = json!({"s": "text", "l": [1]});
    for (path, v) in [
        (".s.t", json!(1)),
        (".l[-9]", json!([1])),
        ("", json!({"a": 1})),
    ] {
        let p = Path::parse(path).unwrap();
        assert_eq!(check_write(Some(&cur), &p, Method::Erase, &v), Ok(()));
        assert!(write(&mut Some(cur.clone()), &p, Method::Erase, v).is_ok());
    }
}

#[test]
fn r10b_erase_is_a_method_name() {
    assert_eq!("erase".parse::<Method>(), Ok(Method::Erase));
    assert_eq!(Method::Erase.to_string(), "erase");
    assert_eq!(Method::ALL.len(), 6);
    assert_eq!(
        "delete".parse::<Method>().unwrap_err().to_string(),
        r#"unknown method "delete": expected set, merge, assign, push, concat or erase"#
    );
}
