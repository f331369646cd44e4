use super::*;
use crate::config::session_file::{parse, read_session};

fn spec(yaml: &str) -> (ReplaysSpec, Vec<String>) {
    let v: Value = serde_json::from_str(yaml).unwrap();
    let mut errors = vec![];
    let s = replays_section(v, &mut errors);
    (s, errors.iter().map(ToString::to_string).collect())
}

#[test]
fn sessions_inline_and_in_files_with_defaults() {
    let (s, errors) = spec(
        r#"{"sessions": [
            {"file": "replays/incident_001.yaml"},
            {"id": "inline-001", "input": "What was ACME's Q3 revenue?",
             "contract": "Research Agent Contract",
             "tool_responses": [{"tool": "market_data_api", "status": 504, "response": null,
                                 "latency_ms": 30000}]}],
            "on_miss": "strict", "match": {"ignore_json_fields": ["user", "stream_options"]},
            "sources": [{"type": "langsmith_run", "run_id": "abc123"}]}"#,
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        s.sessions[0],
        SessionEntry::File(PathBuf::from("replays/incident_001.yaml"))
    );
    let SessionEntry::Inline(inline) = &s.sessions[1] else {
        panic!("inline")
    };
    assert_eq!(inline.tool_responses[0].status, 504);
    assert_eq!(inline.tool_responses[0].latency_ms, 30000);
    assert_eq!(s.on_miss, OnMiss::Strict);
    assert_eq!(s.ignore_json_fields, ["user", "stream_options"]);
    assert_eq!(
        s.sources,
        [Source::LangsmithRun {
            run_id: "abc123".into()
        }]
    );
    let (s, errors) =
        spec(r#"{"sessions": [{"id": "a", "input": "hi", "tool_responses": [{"tool": "t"}]}]}"#);
    assert!(errors.is_empty(), "{errors:?}");
    let SessionEntry::Inline(a) = &s.sessions[0] else {
        panic!("inline")
    };
    assert_eq!((a.tool_responses[0].status, s.on_miss), (200, OnMiss::Live));
}

/// Found by tests/fuzz.rs (`sessions`): `replay export` writes a mutated prompt's DEL or
/// U+0085 as is in JSON, which the YAML parser refused or turned into a space.
#[test]
fn a_json_session_keeps_every_character_of_its_strings() {
    let text = "{\"id\": \"a\u{7f}b\", \"input\": \"c\u{85}d\u{2028}\"}";
    let v = parse(text).unwrap();
    assert_eq!(
        (&v["id"], &v["input"]),
        (&"a\u{7f}b".into(), &"c\u{85}d\u{2028}".into())
    );
    assert_eq!(
        parse("id: a\ninput: b\n").unwrap()["input"],
        "b",
        "YAML still reads"
    );
}

#[test]
fn bad_sessions_are_named_by_path() {
    let (_, errors) = spec(
        r#"{"sessions": [
            {"id": "a", "input": "x", "tool_responses": [{"tool": "t", "status": 700}]},
            {"id": "a", "input": "y"},
            {"id": "b"},
            {"id": "c", "input": "z", "tool_responses": [{"tool": "", "latency_ms": 9999999}]},
            {"file": "x.yaml", "id": "d"},
            "no"],
            "on_miss": "retry"}"#,
    );
    let want = [
        "replays.on_miss: unknown variant `retry`",
        "replays.sessions[0].tool_responses[0].status: 700 is not an HTTP status",
        "replays.sessions[1].id: `a` names another session too",
        "replays.sessions[2]: missing field `input`",
        "replays.sessions[3].tool_responses[0].tool: must not be empty",
        "replays.sessions[3].tool_responses[0].latency_ms: 9999999 is over 600000",
        "replays.sessions[4].id: unknown field `id`",
        "replays.sessions[5]: invalid type: string \"no\"",
    ];
    for w in want {
        assert!(
            errors.iter().any(|e| e.starts_with(w)),
            "{w}\nin {errors:#?}"
        );
    }
}

#[test]
fn a_session_file_reads_and_a_bad_one_names_file_field_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("incident.yaml");
    std::fs::write(
        &good,
        "id: incident-001\ninput: \"What was ACME's Q3 revenue?\"\nexpected_failure: the agent \
         invented figures when the market API timed out\ntool_responses:\n  - tool: market_data_api\n    \
         status: 504\n    latency_ms: 30000\n",
    )
    .unwrap();
    let s = read_session(&good).unwrap();
    assert_eq!(
        (s.id.as_str(), s.tool_responses[0].status),
        ("incident-001", 504)
    );

    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "id: incident-002\ninput: hi\ntool_responses:\n  - tool: search\n    status: 200\n  - tool: search\n    status: 1000\n",
    )
    .unwrap();
    let err = read_session(&bad).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: tool_responses[1].status: 1000 is not an HTTP status (100–599, or 0 for a \
             refused connection) (line 7)",
            bad.display()
        )
    );
    std::fs::write(
        &bad,
        "id: x\ninput: hi\ntool_responses:\n  - tool: search\n    stauts: 200\n",
    )
    .unwrap();
    let err = read_session(&bad).unwrap_err().to_string();
    assert!(
        err.contains("tool_responses[0].stauts: unknown field `stauts`")
            && err.ends_with("(line 5)"),
        "{err}"
    );
    std::fs::write(&bad, "id: x\nid: y\ninput: hi\n").unwrap();
    let err = read_session(&bad).unwrap_err().to_string();
    assert!(err.contains("duplicate key `id` (lines 1 and 2)"), "{err}");
    let err = read_session(&dir.path().join("missing.yaml")).unwrap_err();
    assert!(err.to_string().contains("missing.yaml: "), "{err}");
}

#[test]
fn a_file_that_is_no_session_is_refused_without_quoting_it() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("hostname");
    std::fs::write(&host, "build-runner-07\n").unwrap();
    let err = read_session(&host).unwrap_err().to_string();
    assert!(
        err.ends_with("the top level is a string of 15 characters, expected a mapping (`key: value` lines); is this the right file?")
            && !err.contains("build-runner"),
        "{err}"
    );
    std::fs::write(&host, "- a\n- b\n").unwrap();
    let err = read_session(&host).unwrap_err().to_string();
    assert!(
        err.ends_with("invalid type: sequence, expected a map in YAML source string"),
        "{err}"
    );
    let long = dir.path().join("long.yaml");
    let value = "9".repeat(500_000);
    std::fs::write(
        &long,
        format!("id: x\ninput: hi\ntool_responses:\n  - tool: search\n    status: \"{value}\"\n"),
    )
    .unwrap();
    let err = read_session(&long).unwrap_err().to_string();
    assert!(
        err.len() < 500
            && err.contains(
                "tool_responses[0].status: invalid type: string (500000 characters, not shown)"
            ),
        "{err}"
    );
    let err = read_session(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("/dev/zero: a character device, not a regular file"),
        "{err}"
    );
}

#[test]
fn sources_are_checked_and_an_unimported_project_is_named() {
    let v: Value = serde_json::from_str(
        r#"{"sources": [
            {"type": "langsmith", "project": "p", "filter": {"date_range": "last_week"}, "auto_import": true},
            {"type": "langsmith_run", "run_id": "../x"},
            {"type": "langsmith", "project": "q", "filter": {"status": "all", "date_range": "last_12_hours"}}]}"#,
    )
    .unwrap();
    let (mut errors, mut warnings) = (vec![], vec![]);
    let s = replays_section(v, &mut errors);
    check_sources(&s, &mut warnings, &mut errors);
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("replays.sources[0].filter.date_range")
            && errors[0].contains("last_N_days"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("replays.sources[1].run_id"),
        "{errors:?}"
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("replays.sources[2]: LangSmith project `q` is not imported"),
        "{warnings:?}"
    );
    let Source::Langsmith { filter, .. } = &s.sources[2] else {
        panic!("a project source")
    };
    assert_eq!(filter.status, StatusFilter::All);
    assert_eq!(date_range_ms("last_12_hours"), Ok(43_200_000));
    assert_eq!(date_range_ms("last_7_days"), Ok(604_800_000));
    assert!(date_range_ms("last_0_days").is_err());
}
