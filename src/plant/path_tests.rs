use serde_json::json;

use super::*;

fn sel(path: &str, v: &Value) -> Vec<String> {
    JsonPath::parse(path)
        .unwrap()
        .select(v)
        .iter()
        .map(|l| render("$", l))
        .collect()
}

#[test]
fn every_step_of_the_subset_selects_what_it_names() {
    let v = json!({
        "current": {"temp_c": 21.5, "when": "2026-11-28"},
        "results": [{"price": 10}, {"price": 12}, {"name": "x", "price": 14}],
        "odd key": {"it's": 1}
    });
    assert_eq!(sel("$", &v), ["$"]);
    assert_eq!(sel("$.current.temp_c", &v), ["$.current.temp_c"]);
    assert_eq!(sel("$['current'][\"when\"]", &v), ["$.current.when"]);
    assert_eq!(sel("$.results[2].price", &v), ["$.results[2].price"]);
    assert_eq!(
        sel("$.results[*].price", &v),
        [
            "$.results[0].price",
            "$.results[1].price",
            "$.results[2].price"
        ]
    );
    assert_eq!(
        sel("$.current.*", &v),
        ["$.current.temp_c", "$.current.when"]
    );
    assert_eq!(
        sel("$..price", &v),
        [
            "$.results[0].price",
            "$.results[1].price",
            "$.results[2].price"
        ]
    );
    assert_eq!(
        sel("$['odd key']['it\\'s']", &v),
        ["$['odd key']['it\\'s']"]
    );
    assert_eq!(
        sel("$.results[9]", &v),
        Vec::<String>::new(),
        "out of range"
    );
    assert_eq!(sel("$.nope.deeper", &v), Vec::<String>::new());
    assert_eq!(
        sel("$.results..*", &v).len(),
        3 + 4,
        "elements and their members"
    );
}

#[test]
fn a_location_is_selected_once() {
    let v = json!({"a": {"a": 1}});
    assert_eq!(sel("$..a", &v), ["$.a", "$.a.a"]);
    let twice = json!({"x": [1, 2]});
    assert_eq!(sel("$..*", &twice), ["$.x", "$.x[0]", "$.x[1]"]);
}

#[test]
fn bad_paths_say_what_and_where() {
    let err = |p: &str| JsonPath::parse(p).unwrap_err().to_string();
    assert!(err("current.temp").starts_with("a path starts with `$`"));
    assert_eq!(err("$.a["), "unclosed `[` at character 4");
    assert_eq!(err("$.a[1"), "unclosed `[` at character 4");
    assert_eq!(err("$.a['b"), "unclosed `[` at character 4");
    assert_eq!(err("$."), "expected a key after `.` at character 3");
    assert_eq!(
        err("$.a[-1]"),
        "negative indexes are not supported at character 5"
    );
    assert_eq!(
        err("$.a[x]"),
        "expected a number, `*` or a quoted key after `[` at character 5"
    );
    assert_eq!(err("$.a[1x]"), "expected `]` at character 6");
    assert_eq!(
        err("$a"),
        "unexpected `a`: expected `.`, `..` or `[` at character 2"
    );
    assert!(
        err("$.a b").contains("cannot be in a bare key"),
        "{}",
        err("$.a b")
    );
    assert!(err("$..[0]").contains("not an index"));
    assert!(err("$[99999999999999999999999]").contains("too large"));
}

#[test]
fn paths_are_written_back_as_they_would_be_read() {
    let loc = [
        Seg::Key("results".into()),
        Seg::Index(2),
        Seg::Key("unit price".into()),
    ];
    let text = render("$", &loc);
    assert_eq!(text, "$.results[2]['unit price']");
    let v = json!({"results": [0, 1, {"unit price": 3}]});
    assert_eq!(sel(&text, &v), vec![text.clone()]);
    assert_eq!(
        render("$.result.structuredContent", &[Seg::Key("temp".into())]),
        "$.result.structuredContent.temp"
    );
}

#[test]
fn a_selection_is_bounded() {
    let big = Value::Array((0..(MAX_SELECTED + 10)).map(Value::from).collect());
    assert_eq!(
        JsonPath::parse("$[*]").unwrap().select(&big).len(),
        MAX_SELECTED
    );
    assert_eq!(
        JsonPath::parse("$..*").unwrap().select(&big).len(),
        MAX_SELECTED
    );
}
