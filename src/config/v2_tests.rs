use super::*;

#[test]
fn a_v2_field_that_does_not_carry_over_is_named_as_such() {
    let mut errors = vec![
        ConfigError::new(
            "agent.query_params",
            "unknown field `query_params`, expected one of …",
        ),
        ConfigError::new(
            "contract.invariants[3].prompt_filter",
            "unknown field `prompt_filter`",
        ),
        ConfigError::new("name", "unknown section; expected one of proxy, …"),
        // Not an unknown field: left as the loader said it.
        ConfigError::new("agent.query_params", "expected a mapping"),
    ];
    explain(&mut errors);
    assert!(
        errors[0]
            .message
            .starts_with("Flakestorm v2's `query_params` does not carry over")
    );
    assert!(
        errors[1].message.contains("`probes:`"),
        "{}",
        errors[1].message
    );
    assert!(
        errors[2].message.contains("chaos profile file"),
        "{}",
        errors[2].message
    );
    assert_eq!(errors[3].message, "expected a mapping");
}

#[test]
fn terminal_is_dropped_from_the_report_formats_with_a_warning() {
    let mut w = vec![];
    let mut list = serde_json::json!({"format": ["terminal", "json"], "path": "r"});
    lenient_output(&mut list, &mut w);
    assert_eq!(list, serde_json::json!({"format": ["json"], "path": "r"}));
    let mut alone = serde_json::json!({"format": "terminal"});
    lenient_output(&mut alone, &mut w);
    assert_eq!(alone, serde_json::json!({}));
    let mut none = serde_json::json!({"format": "html"});
    lenient_output(&mut none, &mut w);
    assert_eq!(none, serde_json::json!({"format": "html"}));
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].starts_with("output.format: `terminal` dropped"));
}

#[test]
fn a_dict_form_attack_is_switched_by_enabled_as_in_v2_profiles() {
    let attacks = serde_json::json!({
        "indirect_injection": {"enabled": true, "payloads": ["x"]},
        "memory_poisoning": {"enabled": false, "payload": "y"},
        "overflow": {"inject_tokens": 10},
    });
    let list = crate::chaos::spec::attack_list(attacks).unwrap();
    let kinds: Vec<&str> = list.iter().map(|a| a["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["indirect_injection", "overflow"]);
    assert!(list[0].get("enabled").is_none());
    let bad = serde_json::json!({"overflow": {"enabled": "yes"}});
    let err = crate::chaos::spec::attack_list(bad).unwrap_err();
    assert_eq!(err, "overflow.enabled: expected true or false");
}

#[test]
fn an_invariant_keeps_what_its_type_uses_and_drops_v2_extras_with_a_warning() {
    let mut w = vec![];
    let mut item = serde_json::json!({"type": "latency", "max_ms": 5, "threshold": 0.8});
    super::super::invariants::lenient_v2_invariant(&mut item, "invariants[0]", &mut w);
    assert_eq!(item, serde_json::json!({"type": "latency", "max_ms": 5}));
    let mut keeps = serde_json::json!({"type": "similarity", "expected": "a", "threshold": 0.8});
    super::super::invariants::lenient_v2_invariant(&mut keeps, "invariants[1]", &mut w);
    assert_eq!(keeps["threshold"], 0.8);
    // Not a v2 extra: left for the loader to refuse.
    let mut other = serde_json::json!({"type": "latency", "max_ms": 5, "colour": "red"});
    super::super::invariants::lenient_v2_invariant(&mut other, "invariants[2]", &mut w);
    assert_eq!(other["colour"], "red");
    assert_eq!(
        w,
        [
            "invariants[0].threshold: not used by type `latency`; ignored (Flakestorm v2 allowed it on every invariant)"
        ]
    );
}
