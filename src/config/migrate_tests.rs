use super::*;

const V2: &str = r#"version: "2.0"
agent:
  endpoint: "http://localhost:8790/invoke"   # the agent
  timeout: 30000
chaos:
  tool_faults:
    - tool: web_search
      mode: error
      error_code: 503
      delay_ms: 500
      payload: |
        a long
        text
    - {tool: crm, mode: error, delay_ms: 5, probability: 0.5}
    - {tool: crm, mode: timeout, error_code: 500}
    - delay_ms: 9
      tool: "*"
      mode: malformed
contract:
  name: c
  invariants: [{id: a, type: completes}]
  chaos_matrix:
    - name: down
      tool_faults: [{tool: market_data, mode: error, error_code: 503, payload: x}]
"#;

fn yaml(text: &str) -> Value {
    Figment::from(Yaml::string(text)).extract().unwrap()
}

#[test]
fn unused_v2_fields_are_commented_out_or_cut_and_the_rest_is_kept() {
    let m = migrate(V2).unwrap();
    let before = yaml(V2);
    let after = yaml(&m.text);
    // What a mode uses is untouched; what it does not is gone, block or flow alike.
    let rules = &after["chaos"]["tool_faults"];
    assert_eq!(rules[0]["error_code"], 503);
    assert!(
        rules[0].get("delay_ms").is_none() && rules[0].get("payload").is_none(),
        "{}",
        m.text
    );
    assert_eq!(
        rules[1],
        serde_json::json!({"tool": "crm", "mode": "error", "probability": 0.5})
    );
    assert_eq!(
        rules[2],
        serde_json::json!({"tool": "crm", "mode": "timeout"})
    );
    assert_eq!(
        rules[3],
        serde_json::json!({"tool": "*", "mode": "malformed"})
    );
    let scenario = &after["contract"]["chaos_matrix"][0]["tool_faults"][0];
    assert!(scenario.get("payload").is_none(), "{}", m.text);
    // Everything else reads the same, and the user's comment stays.
    assert_eq!(after["agent"]["endpoint"], before["agent"]["endpoint"]);
    assert_eq!(
        after["contract"]["invariants"],
        before["contract"]["invariants"]
    );
    assert!(m.text.contains("# the agent"));
    assert!(
        m.text
            .contains("# delay_ms: 500  # flakestorm migrate: mode `error` does not use it")
    );
    assert!(
        m.text.contains("      # payload: |  #")
            && m.text.contains("        # a long\n        # text\n")
    );
    assert!(m.text.contains("- # delay_ms: 9"), "{}", m.text);
    let said = m.changes.join("\n");
    for path in [
        "chaos.tool_faults[0].delay_ms: commented out",
        "chaos.tool_faults[0].payload: commented out",
        "chaos.tool_faults[1].delay_ms: removed",
        "chaos.tool_faults[2].error_code: removed",
        "chaos.tool_faults[3].delay_ms: commented out",
        "contract.chaos_matrix[0].tool_faults[0].payload: removed",
    ] {
        assert!(said.contains(path), "{path} not in:\n{said}");
    }
}

#[test]
fn proxy_era_fields_come_as_comments_where_no_value_can_be_inferred() {
    let m = migrate(V2).unwrap();
    // Inside the agent block, at its indentation, before its first field.
    assert!(
        m.text.contains("agent:\n  # command: \"python agent.py\""),
        "{}",
        m.text
    );
    assert!(m.text.contains("  # ready_url: "));
    // One entry per named tool (not "*"), sorted, each with a glob to fill in.
    let tail = m
        .text
        .split("added by `flakestorm migrate`")
        .nth(1)
        .unwrap();
    assert!(tail.contains("# tools:\n#   - name: crm\n"), "{tail}");
    assert!(
        tail.contains("#   - name: market_data\n") && tail.contains("#   - name: web_search\n")
    );
    assert!(!tail.contains("name: \"*\""));
    // Comments only: the migrated file has no `tools:` nor `agent.command` value.
    let after = yaml(&m.text);
    assert!(after.get("tools").is_none() && after["agent"].get("command").is_none());
    assert!(
        m.changes
            .iter()
            .any(|c| c.starts_with("tools: crm, market_data, web_search"))
    );
}

#[test]
fn a_current_file_has_nothing_to_change() {
    let text = "agent:\n  endpoint: http://127.0.0.1:1/invoke\n  command: python a.py\n\
                tools: [{name: w, match_url: 'http://x/*'}]\n\
                chaos: {tool_faults: [{tool: w, mode: error, error_code: 503}]}\n";
    let m = migrate(text).unwrap();
    assert_eq!(m.text, text);
    assert!(m.changes.is_empty(), "{:?}", m.changes);
}

#[test]
fn tools_already_declared_are_not_added_again_and_a_flow_agent_gets_its_comments_at_the_end() {
    let text = "agent: {endpoint: 'http://127.0.0.1:1/invoke'}\n\
                tools:\n  - {name: web_search, match_url: 'http://x/*'}\n\
                chaos:\n  tool_faults:\n    - {tool: web_search, mode: error}\n    - {tool: crm, mode: error}\n";
    let m = migrate(text).unwrap();
    let tail = m
        .text
        .split("added by `flakestorm migrate`")
        .nth(1)
        .unwrap();
    assert!(
        tail.contains("#   - name: crm") && !tail.contains("web_search"),
        "{tail}"
    );
    assert!(
        !tail.contains("# tools:\n"),
        "the file has a tools: list: {tail}"
    );
    assert!(tail.contains("# agent:\n#   command: "), "{tail}");
    assert_eq!(yaml(&m.text), yaml(text));
}

#[test]
fn a_tool_whose_rules_give_its_urls_gets_a_real_entry() {
    let text = "agent: {endpoint: 'http://127.0.0.1:1/invoke'}\n\
                chaos:\n  tool_faults:\n\
                \x20   - {tool: email_fetch, match_url: 'https://mail.example/api/*', mode: error}\n\
                \x20   - {tool: email_fetch, match_url: ['https://mail2.example/*'], mode: slow}\n\
                \x20   - {tool: crm, mode: error}\n";
    let m = migrate(text).unwrap();
    let after = yaml(&m.text);
    assert_eq!(
        after["tools"],
        serde_json::json!([{"name": "email_fetch",
            "match_url": ["https://mail.example/api/*", "https://mail2.example/*"]}]),
        "{}",
        m.text
    );
    // The tool no rule gave a URL stays a comment under the same list.
    assert!(
        m.text
            .contains("#   - name: crm\n#     match_url: [\"https://CHANGE-ME.example/*\"]")
    );
    assert!(!m.text.contains("# tools:"), "{}", m.text);
    assert!(
        m.changes
            .iter()
            .any(|c| c.starts_with("tools: email_fetch added with the match_url"))
    );
}

#[test]
fn several_cut_keys_in_one_flow_rule_leave_valid_yaml() {
    let text = "chaos:\n  tool_faults:\n\
                \x20   - {tool: x, mode: error, delay_ms: 5, payload: y}\n\
                \x20   - {tool: x, mode: malformed, delay_ms: 5, error_code: 500, probability: 0.5}\n\
                \x20   - {delay_ms: 1, tool: x, payload: z, mode: error}\n";
    let m = migrate(text).unwrap();
    let rules = &yaml(&m.text)["chaos"]["tool_faults"];
    assert_eq!(
        rules[0],
        serde_json::json!({"tool": "x", "mode": "error"}),
        "{}",
        m.text
    );
    assert_eq!(
        rules[1],
        serde_json::json!({"tool": "x", "mode": "malformed", "probability": 0.5}),
        "{}",
        m.text
    );
    assert_eq!(
        rules[2],
        serde_json::json!({"tool": "x", "mode": "error"}),
        "{}",
        m.text
    );
    assert!(m.text.contains("- {tool: x, mode: error}\n"), "{}", m.text);
    let removed = m
        .changes
        .iter()
        .filter(|c| c.contains(": removed ("))
        .count();
    assert_eq!(removed, 6, "{:?}", m.changes);
}

#[test]
fn crlf_and_lone_cr_line_ends_are_lines_as_the_parser_counts_them() {
    for nl in ["\r\n", "\r"] {
        let text = [
            "chaos:",
            "  tool_faults:",
            "    - tool: x",
            "      mode: error",
            "      delay_ms: 5",
            "      probability: 0.5",
            "",
        ]
        .join(nl);
        let m = migrate(&text).unwrap();
        let rule = &yaml(&m.text)["chaos"]["tool_faults"][0];
        assert_eq!(
            rule,
            &serde_json::json!({"tool": "x", "mode": "error", "probability": 0.5}),
            "{:?}",
            m.text
        );
        let note = format!("# delay_ms: 5  # flakestorm migrate: mode `error` does not use it{nl}");
        assert!(m.text.contains(&note), "{:?}", m.text);
    }
}

#[test]
fn rules_for_every_tool_get_a_tools_skeleton_to_fill_in() {
    let text = "agent: {endpoint: \"http://localhost:8790/invoke\"}\nchaos:\n  tool_faults:\n    - {tool: \"*\", mode: error, error_code: 503}\n";
    let m = migrate(text).unwrap();
    assert!(
        m.text.contains(
            "# tools:\n#   - name: CHANGE-ME\n#     match_url: [\"https://CHANGE-ME.example/*\"]\n"
        ),
        "{}",
        m.text
    );
    assert!(yaml(&m.text).get("tools").is_none(), "comments only");
    assert!(m.changes.iter().any(|c| c.starts_with("tools: a skeleton")));
    // Not when the file declares tools, nor when the rules name theirs (they get entries).
    let declared = format!("{text}tools: [{{name: s, match_url: [\"http://s/*\"]}}]\n");
    assert!(!migrate(&declared).unwrap().text.contains("CHANGE-ME"));
    assert!(!migrate(V2).unwrap().text.contains("name: CHANGE-ME"));
}

#[test]
fn a_v2_timeout_in_seconds_gets_a_comment_saying_it_is_milliseconds() {
    let text = "agent:\n  endpoint: \"http://localhost:8790/invoke\"\n  timeout: 30\n";
    let m = migrate(text).unwrap();
    assert!(
        m.text.contains(
            "  # CHANGE-ME: timeout is in milliseconds here, so 30 lets each call take 30 ms; \
             for 30 seconds write 30000\n  timeout: 30\n"
        ),
        "{}",
        m.text
    );
    assert_eq!(
        yaml(&m.text)["agent"]["timeout"],
        30,
        "the value is the user's to change"
    );
    assert!(
        m.changes
            .iter()
            .any(|c| c.starts_with("agent.timeout: 30 is milliseconds"))
    );
    assert!(
        !migrate(V2)
            .unwrap()
            .text
            .contains("timeout is in milliseconds"),
        "30000 is fine"
    );
}
