//! Trials as every output shows them (docs/trials.md): pass^k and pass@k with the trials
//! passed (c of n) and the estimator named, in the terminal, Markdown and HTML; one trial
//! alone (`--trial 2`) shows pass^1 once; and a run scored by the mean (pass^1) whose cell
//! has a pass^k of 0 says so in one line. The agent is a script that fails every fourth
//! call, so one prompt over four trials passes three: pass^1 0.75, pass^4 0, pass@4 1.

mod common;

use common::cli::{flakestorm, write_config};

const CONFIG: &str = r#"agent: {command: 'sh answer.sh {prompt}'}
golden_prompts: [hi]
advanced: {concurrency: 1, trials: 4}
contract:
  name: every-fourth
  invariants:
    - {id: cites, type: contains, value: source}
  chaos_matrix:
    - name: calm
"#;

/// Counts its calls in a file beside it: the fourth, eighth, … answer cites nothing.
const AGENT: &str = "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count\n\
                     if [ $((n % 4)) -eq 0 ]; then echo 'no idea'; else echo 'per the source'; fi\n";

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), CONFIG);
    std::fs::write(dir.path().join("answer.sh"), AGENT).unwrap();
    dir
}

fn rendered(dir: &std::path::Path, format: &str) -> String {
    let out = dir.join(format!("rendered.{format}"));
    let (code, _, err) = flakestorm(
        &[
            "report",
            "out/t.json",
            "-f",
            format,
            "-o",
            out.to_str().unwrap(),
        ],
        dir,
    );
    assert_eq!(code, 0, "{err}");
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn every_output_names_pass_k_pass_at_k_and_the_estimator() {
    let dir = folder();
    let (code, out, err) = flakestorm(&["contract", "run", "-o", "out/t.json"], dir.path());
    let figures = "3 of 4 trials passed, pass^1 0.75, pass^4 0.00, pass@4 1.00";
    assert!(
        out.contains(&format!("  FLAKY cites under calm: {figures}\n")),
        "{out}\n{err}"
    );
    assert!(
        out.contains("pass^k = C(c,k)/C(n,k) is the unbiased estimator"),
        "{out}"
    );
    // Scored by the mean, the run passes at 75: one line says what that hides.
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("score 75.0/100 (pass mark 70): PASS"), "{out}");
    let note = "note: the cells are scored by pass^1 (scoring.consistency: mean), which hides \
                that 1 of them has a pass^n of 0.00";
    assert!(out.contains(note), "{out}");
    assert_eq!(
        out.matches("scoring.consistency: mean").count(),
        1,
        "one line: {out}"
    );

    let md = rendered(dir.path(), "markdown");
    assert!(
        md.contains(&format!("| calm | cites | flaky: {figures} |")),
        "{md}"
    );
    assert!(
        md.contains("pass^k = C(c,k)/C(n,k) is the unbiased estimator"),
        "{md}"
    );
    assert!(md.contains("> ⚠️ The cells are scored by pass^1"), "{md}");
    let html = rendered(dir.path(), "html");
    assert!(html.contains("<h3 id=\"contract-trials\">Consistency over trials</h3>"));
    assert!(html.contains(&format!("flaky: {figures}</td>")), "{html}");
    assert!(html.contains("pass^k = C(c,k)&#x2f;C(n,k) is the unbiased estimator"));
    assert!(html.contains("the cells are scored by pass^1 (scoring.consistency: mean)"));
    let xml = rendered(dir.path(), "junit");
    assert!(
        xml.contains("<property name=\"pass@k\" value=\"1.0000\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<property name=\"estimator\" value=\"unbiased: pass^k = C(c,k)/C(n,k)\"/>")
    );
}

#[test]
fn one_trial_alone_shows_pass_1_once_and_pass_k_shows_no_note() {
    let dir = folder();
    let (_, out, err) = flakestorm(&["contract", "run", "--trial", "2"], dir.path());
    assert!(
        out.contains("  cites under calm: 1 of 1 trials passed, pass^1 1.00\n"),
        "{out}\n{err}"
    );
    assert!(!out.contains("pass^1 1.00, pass^1"), "{out}");
    // Scored by pass^4, the score says it all: no note.
    let scored = CONFIG.replace(
        "advanced: {concurrency: 1, trials: 4}",
        "advanced: {concurrency: 1, trials: 4}\nscoring: {consistency: pass_k}",
    );
    write_config(dir.path(), &scored);
    std::fs::remove_file(dir.path().join("count")).unwrap();
    let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
    assert_eq!(code, 1, "pass^4 0 scores 0: {out}\n{err}");
    assert!(
        out.contains("FLAKY cites under calm: 3 of 4 trials passed"),
        "{out}"
    );
    assert!(
        !out.contains("note: the cells are scored by pass^1"),
        "{out}"
    );
}

/// The same agent calling its search tool first (through the proxy, where the chaos
/// fails it; it answers the same either way), under chaos and mutations.
fn chaos_config(tool: std::net::SocketAddr) -> String {
    format!(
        r#"tools: [{{name: search, match_url: 'http://{tool}/*'}}]
agent: {{command: 'sh answer.sh {{prompt}}', env: {{TOOL_URL: 'http://{tool}/q'}}}}
golden_prompts: [hi]
advanced: {{concurrency: 1, trials: 4}}
invariants: [{{type: contains, value: source}}]
chaos:
  tool_faults: [{{tool: search, mode: error, error_code: 503}}]
mutations: {{types: [noise], count: 1}}
"#
    )
}

/// A chaos-only run's prompts, and `ci`'s chaos and mutation phases, show their trials
/// in every report format as a contract's cells do, and the line when the mean hides a
/// pass^k of 0 (`ci`'s phases too, in the terminal as well).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_and_mutation_runs_show_their_trials_in_every_format() {
    let tool = common::origin::search_tool().await;
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &chaos_config(tool.addr));
    let agent = format!("curl -s -o /dev/null \"$TOOL_URL\"\n{AGENT}");
    std::fs::write(dir.path().join("answer.sh"), agent).unwrap();
    let d = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || chaos_and_ci(&d))
        .await
        .unwrap();
}

fn chaos_and_ci(dir: &std::path::Path) {
    let figures = "3 of 4 trials passed, pass^1 0.75, pass^4 0.00, pass@4 1.00";
    let (code, out, err) = flakestorm(&["run", "--chaos-only", "-o", "out/t.json"], dir);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(&format!("FLAKY \"hi\": {figures}")), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/t.json")).unwrap()).unwrap();
    let run = &json["consistency"];
    assert_eq!(
        (&run["trials"], &run["passed"]),
        (&4.into(), &3.into()),
        "{json}"
    );
    assert_eq!(run["pass_hat_k"][3], 0.0, "{run}");
    let md = rendered(dir, "markdown");
    assert!(
        md.contains(&format!("| chaos | hi | flaky: {figures} |")),
        "{md}"
    );
    assert!(
        md.contains("pass^k = C(c,k)/C(n,k) is the unbiased estimator"),
        "{md}"
    );
    assert!(md.contains("> ⚠️ The prompts are scored by pass^1"), "{md}");
    let html = rendered(dir, "html");
    assert!(html.contains("<h3 id=\"chaos-trials\">Consistency over trials</h3>"));
    assert!(html.contains(&format!("flaky: {figures}</td>")), "{html}");
    assert!(html.contains("the prompts are scored by pass^1 (scoring.consistency: mean)"));
    let xml = rendered(dir, "junit");
    let pass_at = "<property name=\"pass@k\" value=\"1.0000\"/>";
    assert_eq!(
        xml.matches(pass_at).count(),
        4,
        "each trial's testcase: {xml}"
    );
    assert!(xml.contains("<property name=\"estimator\" value=\"unbiased: pass^k"));

    std::fs::remove_file(dir.join("count")).unwrap();
    let (_, out, err) = flakestorm(&["ci", "-o", "out/t.json"], dir);
    for what in ["variants", "prompts"] {
        let note = format!("note: the {what} are scored by pass^1 (scoring.consistency: mean)");
        assert!(out.contains(&note), "{what}: {out}\n{err}");
    }
    let md = rendered(dir, "markdown");
    assert!(md.contains("> ⚠️ The prompts are scored by pass^1"), "{md}");
    assert!(
        md.contains("> ⚠️ The variants are scored by pass^1"),
        "{md}"
    );
    assert!(md.contains("| noise | "), "{md}");
}
