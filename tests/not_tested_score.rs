//! A run that tested nothing shows no score: `contract score` prints NOT TESTED (and exits
//! 2) rather than a number a gate would read as 100, `--quiet` says the verdict alone, and
//! neither the terminal nor any report format shows a number; a config error (a wrong
//! `agent.response_path`) leaves every cell `?` (not tested), never `✗`.

mod common;

use common::cli::{flakestorm, write_config};

/// A script agent that answers without any traffic, under a tool fault it never meets.
const UNTOUCHED: &str = r#"tools: [{name: search, match_url: 'http://127.0.0.1:9/*'}]
agent: {command: 'echo hello {prompt}'}
golden_prompts: [hi]
invariants: [{type: completes}]
chaos:
  tool_faults: [{tool: search, mode: error, error_code: 503}]
contract:
  name: untouched
  invariants: [{id: answers, type: completes}]
  chaos_matrix:
    - name: search-down
      tool_faults: [{tool: search, mode: error, error_code: 503}]
"#;

#[test]
fn contract_score_of_a_not_tested_run_prints_no_score() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), UNTOUCHED);
    let (code, out, err) = flakestorm(&["contract", "score"], dir.path());
    assert_eq!((code, out.as_str()), (2, "NOT TESTED\n"), "{err}");
    let (code, out, err) = flakestorm(&["contract", "run", "--quiet"], dir.path());
    assert_eq!((code, out.as_str()), (2, "contract NOT TESTED\n"), "{err}");
    let (code, out, err) = flakestorm(&["run", "--chaos-only", "--quiet"], dir.path());
    assert_eq!((code, out.as_str()), (2, "chaos NOT TESTED\n"), "{err}");
}

/// Renders `json` (a saved report) as `format` with `flakestorm report`.
fn rendered(dir: &std::path::Path, json: &str, format: &str) -> String {
    let out = dir.join(format!("rendered.{format}"));
    let (code, _, err) = flakestorm(
        &["report", json, "-f", format, "-o", out.to_str().unwrap()],
        dir,
    );
    assert_eq!(code, 0, "{err}");
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn no_format_shows_a_score_for_a_run_that_tested_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), UNTOUCHED);
    let (code, out, err) = flakestorm(&["contract", "run", "-o", "out/nt.json"], dir.path());
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains("\nNOT TESTED, no score: the run did not test all it claims"),
        "{out}"
    );
    assert!(
        !out.contains("/100"),
        "the terminal prints no score:\n{out}"
    );
    let json = "out/nt.json";
    let html = rendered(dir.path(), json, "html");
    let banner = &html[html.find("class=\"banner").unwrap()..html.find("</dl>").unwrap()];
    assert!(banner.contains("NOT TESTED"), "{banner}");
    assert!(
        banner.contains("no score: the run did not test all it claims"),
        "{banner}"
    );
    assert!(
        !banner.contains("score <b>"),
        "the banner shows no number:\n{banner}"
    );
    assert!(!html.contains("score <b>"), "nor does the section");
    let md = rendered(dir.path(), json, "markdown");
    let head = md.lines().next().unwrap();
    assert!(
        head.starts_with("## flakestorm contract: ⚠️ NOT TESTED — no score: "),
        "{head}"
    );
    assert!(!md.contains("/100"), "{md}");
    let xml = rendered(dir.path(), json, "junit");
    assert!(xml.contains("name=\"run verdict (no score)\""), "{xml}");
    assert!(!xml.contains("score 100.0"), "{xml}");
}

/// A script agent (answer.sh, beside the config) answering JSON without the `output` the
/// config reads its answers at.
const WRONG_PATH: &str = r#"agent: {command: 'sh answer.sh {prompt}', response_path: '$.output'}
golden_prompts: [hi, there]
invariants: [{type: completes}]
contract:
  name: wrong-path
  invariants:
    - {id: answers, type: completes}
    - {id: cites-source, type: contains, value: source}
  chaos_matrix:
    - name: calm
"#;

#[test]
fn a_config_error_shows_every_cell_not_tested_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), WRONG_PATH);
    let answer = "printf '{\"result\": \"a cited source\"}\\n'\n";
    std::fs::write(dir.path().join("answer.sh"), answer).unwrap();
    let (code, out, err) = flakestorm(&["contract", "run", "-o", "out/rp.json"], dir.path());
    assert_eq!(code, 2, "{out}\n{err}");
    // The matrix: `?` (not tested), never `✗`, each cell with the config's error.
    let matrix: Vec<&str> = out.lines().skip(3).take(2).collect();
    assert_eq!(matrix.len(), 2, "{out}");
    for row in &matrix {
        assert!(row.trim_end().ends_with('?') && !row.contains('✗'), "{out}");
    }
    assert!(
        out.contains("? not tested: cites-source under calm (medium): not judged: config error: agent.response_path `$.output`"),
        "{out}"
    );
    assert!(
        out.contains("\nERROR, no score: the run could not judge the agent"),
        "{out}"
    );
    let json = "out/rp.json";
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(json)).unwrap()).unwrap();
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["verdict"], "not_tested", "{c}");
        assert!(
            c["reason"].as_str().unwrap().contains("config error"),
            "{c}"
        );
    }
    let html = rendered(dir.path(), json, "html");
    assert_eq!(
        html.matches("<td class=\"c nt\"").count(),
        2,
        "two `?` cells"
    );
    assert!(!html.contains("<td class=\"c fail\""));
    let md = rendered(dir.path(), json, "markdown");
    assert!(
        md.contains("| calm | cites-source | medium | ⚠️ not tested | not judged: config error:"),
        "{md}"
    );
    assert!(!md.contains("❌ fail"), "{md}");
    let xml = rendered(dir.path(), json, "junit");
    assert!(
        !xml.contains("<failure"),
        "no cell is the agent's failure:\n{xml}"
    );
    assert_eq!(
        xml.matches("type=\"not_tested\"").count(),
        3,
        "2 cells and the verdict"
    );
}

/// A script agent that calls its search tool (through the proxy, where the chaos fails
/// it) and answers JSON without the `output` the config reads its answers at.
fn wrong_path_under_chaos(tool: std::net::SocketAddr) -> String {
    format!(
        r#"tools: [{{name: search, match_url: 'http://{tool}/*'}}]
agent: {{command: 'sh answer.sh {{prompt}}', response_path: '$.output', env: {{TOOL_URL: 'http://{tool}/q'}}}}
golden_prompts: [hi, there]
invariants: [{{type: contains, value: source}}]
chaos:
  tool_faults: [{{tool: search, mode: error, error_code: 503}}]
mutations: {{types: [noise], count: 1}}
"#
    )
}

/// Chaos-only and mutation runs under the same config error: every prompt and variant
/// `?` (not judged, the config's error), none `✗`, the run ERROR with no score, in the
/// terminal, the JSON, HTML, Markdown and JUnit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_error_leaves_chaos_and_mutation_prompts_not_judged() {
    let tool = common::origin::search_tool().await;
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &wrong_path_under_chaos(tool.addr));
    let answer =
        "curl -s -o /dev/null \"$TOOL_URL\"\nprintf '{\"result\": \"a cited source\"}\\n'\n";
    std::fs::write(dir.path().join("answer.sh"), answer).unwrap();
    let d = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        for (args, json, unit) in [
            (
                &["run", "--chaos-only", "-o", "out/c.json"][..],
                "out/c.json",
                "prompts",
            ),
            (&["run", "-o", "out/m.json"][..], "out/m.json", "mutants"),
        ] {
            judged_nothing(&d, args, json, unit);
        }
    })
    .await
    .unwrap();
}

/// Runs `args`, then checks every output of its report `json` says not judged.
fn judged_nothing(dir: &std::path::Path, args: &[&str], json: &str, unit: &str) {
    let (code, out, err) = flakestorm(args, dir);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(!out.contains('✗'), "{out}");
    assert!(
        out.contains(": config error: agent.response_path `$.output`")
            && out.contains("? not judged: "),
        "{out}"
    );
    assert!(
        out.contains("\nERROR, no score: the run could not judge"),
        "{out}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(json)).unwrap()).unwrap();
    assert_eq!(report["verdict"], "error");
    let units = report[unit].as_array().unwrap();
    assert_eq!(units.len(), 2, "{report}");
    for u in units {
        assert_eq!(
            (&u["judged"], &u["passed"]),
            (&false.into(), &false.into()),
            "{u}"
        );
        assert_eq!(u["checks"][0]["verdict"], "not_tested", "{u}");
        assert!(
            u["checks"][0]["reason"]
                .as_str()
                .unwrap()
                .starts_with("config error")
        );
    }
    let html = rendered(dir, json, "html");
    assert!(!html.contains("score <b>") && !html.contains('✗'), "{html}");
    assert_eq!(
        html.matches("not judged: config error").count(),
        2,
        "{html}"
    );
    let md = rendered(dir, json, "markdown");
    assert!(md.contains("0 of 0 judged cases failed (2 cases)."), "{md}");
    assert!(md.contains("⚠️ 2 not judged, e.g.: config error"), "{md}");
    assert!(!md.contains("/100") && !md.contains('❌'), "{md}");
    let xml = rendered(dir, json, "junit");
    assert!(!xml.contains("<failure"), "{xml}");
    assert_eq!(
        xml.matches("<error message=\"not judged: config error")
            .count(),
        2,
        "{xml}"
    );
}
