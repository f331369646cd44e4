use crate::config::{ReportFormat, Severity, Submitted, When, load_submitted};
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;

fn write(yaml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    std::fs::write(&path, yaml).unwrap();
    (dir, path)
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Every expected error (by prefix) is there, and nothing else.
fn assert_exactly(errors: &[String], expect: &[&str]) {
    for e in expect {
        assert!(
            errors.iter().any(|got| got.starts_with(e)),
            "missing {e:?} in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), expect.len(), "{errors:#?}");
}

fn errors_of(yaml: &str, vars: &[(&str, &str)]) -> Vec<String> {
    let (_dir, path) = write(yaml);
    let err = load_with_env(Some(&path), &Overrides::default(), &env(vars)).unwrap_err();
    err.errors.iter().map(ToString::to_string).collect()
}

#[test]
fn every_problem_is_reported_at_once_with_its_path() {
    let errors = errors_of(
        r#"
proxy:
  listen: "localhost:80"
  intercept: ["api.[openai.com"]
control:
  listn: "127.0.0.1:1"
tools:
  - name: search
    match_url: "https://api.search.example/*"
  - name: search
    match_url: []
  - name: extra
advanced:
  concurrency: 0
bogus: 1
"#,
        &[],
    );
    let expect = [
        "proxy.listen: `localhost:80` is not an IP:port address",
        "proxy.intercept[0]: invalid glob `api.[openai.com`",
        "control.listn: unknown field `listn`, expected one of `listen`, `token`, `max_parallel_runs`",
        "tools[2].match_url: needs at least one URL glob",
        "tools[1].name: duplicate tool `search`",
        "tools[1].match_url: needs at least one URL glob",
        "advanced.concurrency: 0 is out of range 1..=100",
        "bogus: unknown section",
    ];
    assert_exactly(&errors, &expect);
}

#[test]
fn bad_enum_values_name_the_allowed_ones() {
    let errors = errors_of(
        "llm:\n  - provider: openia\n    match_url: 'http://x/*'\nadvanced:\n  attribution: magic\n",
        &[],
    );
    assert!(
        errors[0]
            .starts_with("llm[0].provider: unknown variant `openia`, expected one of `openai`"),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with("advanced.attribution: unknown variant `magic`"),
        "{errors:?}"
    );
}

#[test]
fn layers_file_then_env_then_flags_and_expands_vars() {
    let (dir, path) =
        write("proxy:\n  listen: 127.0.0.1:1000\ncontrol:\n  token: \"${API_TOKEN}\"\n");
    let vars = env(&[
        ("FLAKESTORM_PROXY__LISTEN", "127.0.0.1:2000"),
        ("FLAKESTORM_CONTROL__LISTEN", "127.0.0.1:3000"),
        ("FLAKESTORM_API_TOKEN", "not-a-section"),
        ("API_TOKEN", "s3cret"),
    ]);
    let o = Overrides {
        control_listen: Some("127.0.0.1:4000".into()),
        ..Overrides::default()
    };
    let c = load_with_env(Some(&path), &o, &vars).unwrap().config;
    assert_eq!(c.proxy.listen, "127.0.0.1:2000", "env beats file");
    assert_eq!(c.control.listen, "127.0.0.1:4000", "flags beat env");
    assert_eq!(c.control.token.as_deref(), Some("s3cret"));
    assert_eq!(
        c.ca.dir,
        dir.path().join("certs"),
        "relative paths follow the config file"
    );
}

#[test]
fn missing_variables_and_unsafe_control_are_errors() {
    let errors = errors_of(
        "control:\n  listen: 0.0.0.0:8081\n  token: \"${NOT_SET}\"\n",
        &[],
    );
    assert_eq!(
        errors,
        ["control.token: environment variable `NOT_SET` is not set"]
    );
    let errors = errors_of("control:\n  listen: 0.0.0.0:8081\n", &[]);
    assert!(errors[0].starts_with(
        "control.token: required when control.listen (0.0.0.0:8081) is not a loopback"
    ));
}

#[test]
fn defaults_need_no_file() {
    let loaded = load_with_env(None, &Overrides::default(), &BTreeMap::new()).unwrap();
    assert_eq!(loaded.config.proxy.listen, "127.0.0.1:8080");
    assert_eq!(loaded.config.control.listen, "127.0.0.1:8081");
    assert_eq!(loaded.config.proxy.intercept, ["*"]);
    assert!(loaded.warnings.is_empty());
}

#[test]
fn yaml_syntax_errors_say_where() {
    let errors = errors_of("proxy:\n  listen: [\n", &[]);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("line"), "{errors:?}");
}

/// A Flakestorm v2 file (config.md's research-agent shape) loads unchanged; the sections
/// this build does not apply yet are named in warnings, never silently dropped.
#[test]
fn v2_config_loads_with_warnings_for_sections_not_applied() {
    let (_dir, path) = write(include_str!("../../tests/fixtures/v2-research-agent.yaml"));
    let vars = env(&[("OPENAI_API_KEY", "sk-test")]);
    let loaded = load_with_env(Some(&path), &Overrides::default(), &vars).unwrap();
    // `mutations`, `model` and `replays` are applied (mutation and replay runs).
    assert!(
        !loaded
            .warnings
            .iter()
            .any(|w| w.starts_with("`mutations`") || w.starts_with("`model`")),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(loaded.config.mutations.count, 20);
    assert_eq!(
        loaded.config.mutations.types,
        [
            crate::mutate::kind::MutationType::Paraphrase,
            crate::mutate::kind::MutationType::Noise,
            crate::mutate::kind::MutationType::ToneShift,
            crate::mutate::kind::MutationType::PromptInjection
        ]
    );
    assert_eq!(
        loaded.config.model.as_ref().map(|m| m.provider),
        Some(crate::exchange::Provider::Openai)
    );
    assert!(
        !loaded.warnings.iter().any(|w| w.starts_with("`replays` ")),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(loaded.config.advanced.seed, Some(42));
    let agent = loaded.config.agent.as_ref().unwrap();
    assert_eq!(
        (agent.endpoint.to_string().as_str(), agent.timeout),
        (
            "http://localhost:8790/invoke",
            std::time::Duration::from_secs(30)
        )
    );
    // The chaos section is applied: its rules load, and the tool it names without a
    // `tools:` entry is pointed out.
    assert_eq!(loaded.config.chaos.tool_faults.len(), 1);
    assert_eq!(loaded.config.chaos.llm_faults.len(), 1);
    assert_eq!(loaded.config.chaos.context_attacks.rules().len(), 1);
    let contract = loaded.config.contract.as_ref().unwrap();
    assert_eq!(contract.name, "Research Agent Contract");
    let inv = &contract.invariants[0];
    assert_eq!(
        (inv.id.as_str(), inv.severity, inv.when),
        ("always-cite-source", Severity::Critical, When::Always)
    );
    let names: Vec<&str> = contract
        .chaos_matrix
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["no-chaos", "search-down"]);
    assert_eq!(contract.chaos_matrix[1].chaos.tool_faults.len(), 1);
    assert_eq!(loaded.config.golden_prompts.len(), 2);
    assert_eq!(
        loaded.config.output.format,
        [ReportFormat::Json, ReportFormat::Html]
    );
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("tool `web_search` has no `tools:` entry")),
        "{:?}",
        loaded.warnings
    );
    assert!(
        !loaded.warnings.iter().any(|w| w.contains("output.format")),
        "every format is rendered: {:?}",
        loaded.warnings
    );
    // It resets the agent before each case and runs 10 cases at a time.
    assert!(
        loaded.warnings.iter().any(|w| w.starts_with(
            "agent.reset_endpoint with advanced.concurrency 10: a reset before one case"
        )),
        "{:?}",
        loaded.warnings
    );
    // One agent process under exclusive attribution: its cases under chaos run one at a time.
    assert!(
        loaded.warnings.iter().any(|w| w.starts_with(
            "advanced.concurrency 10 with one agent process (attribution: exclusive): cases \
             under chaos run one at a time"
        )),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
}

/// Every shipped config file parses, and the commented default matches the built-in one.
#[test]
fn shipped_configs_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            // demo.yaml takes its ports from the environment.
            let vars = env(&[
                ("DEMO_TOOL_PORT", "1"),
                ("DEMO_LLM_PORT", "2"),
                ("DEMO_AGENT_PORT", "3"),
            ]);
            let loaded = load_with_env(Some(&path), &Overrides::default(), &vars)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                loaded.warnings.is_empty(),
                "{}: {:?}",
                path.display(),
                loaded.warnings
            );
            seen += 1;
        }
    }
    assert!(seen >= 1);
    let default = load_with_env(
        Some(&dir.join("flakestorm.yaml")),
        &Overrides::default(),
        &BTreeMap::new(),
    )
    .unwrap();
    let builtin = load_with_env(None, &Overrides::default(), &BTreeMap::new()).unwrap();
    let mut expected = builtin.config;
    expected.ca.dir = dir.join("certs");
    expected.data_dir = dir.join(".flakestorm");
    expected.output.path = dir.join("reports");
    expected.replays.base = dir.to_path_buf();
    assert_eq!(
        default.config, expected,
        "config/flakestorm.yaml documents the real defaults"
    );
}

#[test]
fn chaos_errors_name_the_rule_and_the_allowed_values() {
    let errors = errors_of(
        r#"
tools:
  - {name: search, match_url: "https://s.example/*"}
chaos:
  tool_faults:
    - {tool: serch, mode: error}
    - {tool: search, mode: explode}
    - {tool: search, mode: timeout, delay: 5}
    - {mode: error, probability: 1.5}
  llm_faults:
    - {mode: response_drift, drift_type: sideways}
    - {mode: truncated_response, max_tokens: 0, tool: search}
  context_attacks:
    - {type: memory_poisoning, payload: "x", strategy: sometimes}
"#,
        &[],
    );
    let expect = [
        "chaos.tool_faults[0].tool: `serch` is not a name from `tools:` (declared: search)",
        "chaos.tool_faults[1].mode: unknown variant `explode`, expected one of `timeout`, `error`",
        "chaos.tool_faults[2].delay: unknown field `delay`, expected `delay_ms` or `then`",
        "chaos.tool_faults[3].tool: required: a name from `tools:`",
        "chaos.tool_faults[3].probability: 1.5 is outside 0..=1",
        "chaos.llm_faults[0].drift_type: unknown variant `sideways`, expected one of `json_field_rename`",
        "chaos.llm_faults[1].tool: llm_faults apply to LLM calls",
        "chaos.llm_faults[1].max_tokens: 0 is outside 1..=10000000",
        "chaos.context_attacks[0].strategy: unknown variant `sometimes`, expected one of `prepend`, `append`, `replace`",
    ];
    assert_exactly(&errors, &expect);
}

#[test]
fn v2_fields_a_mode_does_not_use_are_warnings() {
    let (_dir, path) = write(
        "chaos:\n  tool_faults:\n    - {tool: '*', mode: error, error_code: 502, delay_ms: 100, payload: x}\n",
    );
    let loaded = load_with_env(Some(&path), &Overrides::default(), &BTreeMap::new()).unwrap();
    assert_eq!(
        loaded.warnings[..2],
        [
            "chaos.tool_faults[0].delay_ms: not used by mode `error`; ignored",
            "chaos.tool_faults[0].payload: not used by mode `error`; ignored"
        ]
    );
    // v2's `tool: "*"` meant the agent endpoint; here it means the agent's own tool calls.
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
    let v2 = &loaded.warnings[2];
    assert!(
        v2.contains("in Flakestorm v2 they faulted the call to the agent endpoint")
            && v2.contains("Declare the tools under `tools:`"),
        "{v2}"
    );
}

#[test]
fn agent_errors_say_what_to_do_instead() {
    let errors = errors_of(
        "agent:\n  endpoint: localhost:8790\n  type: python\n  reset_function: reset_state\n  response_path: 'a..b'\n  timeout: 0\n",
        &[],
    );
    // A v2 python agent's endpoint is a module path: its `type` error says what to do.
    let expect = [
        "agent.type: `python` agents are not driven directly",
        "agent.timeout: must be greater than 0",
        "agent.reset_function: Python reset hooks are not supported; expose a reset route and set agent.reset_endpoint",
        "agent.response_path: `a..b` is not a response path",
    ];
    assert_exactly(&errors, &expect);
    // Behind HTTP (`type: http`, the default), the endpoint must be a URL.
    let errors = errors_of("agent:\n  endpoint: localhost:8790\n  type: http\n", &[]);
    assert_exactly(
        &errors,
        &["agent.endpoint: `localhost:8790` is not an http(s) URL"],
    );
}

#[test]
fn an_agent_pool_needs_port_everywhere_and_a_sane_size() {
    let pool = |extra: &str| {
        format!(
            "agent:\n  endpoint: 'http://127.0.0.1:{{port}}/invoke'\n  command: 'python3 agent.py {{port}}'\n{extra}"
        )
    };
    assert_exactly(
        &errors_of(&pool("  instances: 0\n"), &[]),
        &["agent.instances: 0 is out of range 1..=64"],
    );
    assert_exactly(
        &errors_of(&pool("  instances: 65\n"), &[]),
        &["agent.instances: 65 is out of range 1..=64"],
    );
    assert_exactly(
        &errors_of(
            &pool(
                "  reset_endpoint: 'http://127.0.0.1:9000/reset'\n  ready_url: 'http://127.0.0.1:{port}/health'\n",
            ),
            &[],
        ),
        &["agent.reset_endpoint: `http://127.0.0.1:9000/reset` has no `{port}`"],
    );
    let one_process = "agent:\n  endpoint: 'http://127.0.0.1:8790/invoke'\n  command: 'python3 agent.py'\n  instances: 4\n  env: {PORT: '{port}'}\n";
    assert_exactly(
        &errors_of(one_process, &[]),
        &[
            "agent.instances: 4 instances need `{port}` in agent.command",
            "agent.env.PORT: the value takes `{port}`, which is filled in only for agents flakestorm starts",
        ],
    );
    let fixed_endpoint = "agent:\n  endpoint: 'http://127.0.0.1:8790/invoke'\n  command: 'python3 agent.py {port}'\n";
    assert_exactly(
        &errors_of(fixed_endpoint, &[]),
        &["agent.endpoint: `http://127.0.0.1:8790/invoke` has no `{port}`"],
    );
    let started_elsewhere =
        "agent:\n  endpoint: 'http://127.0.0.1:{port}/invoke'\n  instances: 2\n";
    assert_exactly(
        &errors_of(started_elsewhere, &[]),
        &[
            "agent.endpoint: `http://127.0.0.1:{port}/invoke` takes `{port}`",
            "agent.instances: 2 instances need agent.command",
        ],
    );
    assert_exactly(
        &errors_of("advanced: {settle_ms: 60001}\n", &[]),
        &["advanced.settle_ms: 60001 is out of range 0..=60000"],
    );
    assert_exactly(
        &errors_of("advanced: {settle_max_ms: 200}\n", &[]),
        &["advanced.settle_max_ms: 200 is shorter than advanced.settle_ms (500)"],
    );
    assert_exactly(
        &errors_of("advanced: {settle_max_ms: 600001}\n", &[]),
        &["advanced.settle_max_ms: 600001 is out of range 0..=600000"],
    );
    let (_dir, path) = write(&pool("  instances: 3\n"));
    let loaded = load_with_env(Some(&path), &Overrides::default(), &env(&[])).unwrap();
    let agent = loaded.config.agent.unwrap();
    let size = |a: &crate::config::AgentTarget, c, ms, cases| {
        let s = a.pool_size(c, ms, cases);
        (s.start, s.most)
    };
    assert_eq!(
        size(&agent, 10, 500, None),
        (3, 3),
        "instances bounds the pool"
    );
    assert_eq!(size(&agent, 2, 0, Some(1)), (3, 3), "as many as asked");
    let mut unset = agent.clone();
    unset.instances = None;
    assert_eq!(
        size(&unset, 4, 500, None),
        (16, 64),
        "4 running + 12 spares at the start, growing when cases wait"
    );
    assert_eq!(
        size(&unset, 4, 500, Some(50)),
        (16, 50),
        "no more than cases"
    );
    assert_eq!(
        size(&unset, 10, 500, Some(3)),
        (3, 3),
        "3 cases, 3 instances"
    );
    assert_eq!(
        size(&unset, 4, 0, None),
        (4, 4),
        "nothing settles: no spare"
    );
    assert_eq!(size(&unset, 40, 500, None), (64, 64), "at most 64");
    assert_eq!(
        size(&unset, 100, 500, None),
        (100, 100),
        "never fewer than run at once"
    );
    assert_eq!(
        size(&unset, 100, 0, Some(80)),
        (80, 80),
        "nor more than cases"
    );
    let second = agent.at_port(4242);
    assert_eq!(second.endpoint.to_string(), "http://127.0.0.1:4242/invoke");
    assert_eq!(second.command.as_deref(), Some("python3 agent.py 4242"));
    assert_eq!(
        size(&second, 10, 500, None),
        (1, 1),
        "an instance is not a pool"
    );
}

/// What settling will cost is said at load when it costs more than it looks: no spare
/// instance beside the cases in flight, or a window beyond a sane bound.
#[test]
fn settling_that_costs_a_window_per_case_is_warned_of_at_load() {
    let warnings = |yaml: &str| {
        let (_dir, path) = write(yaml);
        load_with_env(Some(&path), &Overrides::default(), &env(&[]))
            .unwrap()
            .warnings
    };
    let pool = "agent:\n  endpoint: 'http://127.0.0.1:{port}/invoke'\n  command: 'python3 agent.py {port}'\n";
    let no_spare = warnings(&format!(
        "{pool}  instances: 4\nadvanced: {{concurrency: 4}}\n"
    ));
    let said = no_spare
        .iter()
        .find(|w| w.starts_with("agent.instances: 4 leaves no spare instance"))
        .unwrap_or_else(|| panic!("{no_spare:#?}"));
    assert!(said.contains("one window per 4 cases"), "{said}");
    assert!(said.contains("set agent.instances to 8 or more"), "{said}");
    let spares = warnings(&format!(
        "{pool}  instances: 8\nadvanced: {{concurrency: 4}}\n"
    ));
    assert!(
        !spares.iter().any(|w| w.contains("no spare")),
        "{spares:#?}"
    );
    let nothing_to_settle = warnings(&format!(
        "{pool}  instances: 4\nadvanced: {{concurrency: 4, settle_ms: 0}}\n"
    ));
    assert!(!nothing_to_settle.iter().any(|w| w.contains("no spare")));
    let long = warnings(&format!(
        "{pool}advanced: {{settle_ms: 20000, settle_max_ms: 60000}}\n"
    ));
    assert!(
        long.iter()
            .any(|w| w.starts_with("advanced.settle_ms: 20000 follows every case for 20.0 s")),
        "{long:#?}"
    );
}

#[test]
fn trials_and_their_k_are_in_range() {
    assert_exactly(
        &errors_of("advanced: {trials: 0}\n", &[]),
        &["advanced.trials: 0 is out of range 1..=100"],
    );
    assert_exactly(
        &errors_of("advanced: {trials: 101}\n", &[]),
        &["advanced.trials: 101 is out of range 1..=100"],
    );
    assert_exactly(
        &errors_of(
            "advanced: {trials: 8}\nscoring: {consistency: pass_k, k: 9}\n",
            &[],
        ),
        &["scoring.k: 9 is outside 1..=8 (advanced.trials: pass^k needs k trials)"],
    );
    assert_exactly(
        &errors_of("scoring: {critical_pass_k: 0}\n", &[]),
        &[
            "scoring.critical_pass_k: 0 is outside 0 < x <= 1 (the pass^k a critical cell must keep)",
        ],
    );
    assert_exactly(
        &errors_of("scoring: {consistency: always}\n", &[]),
        &["scoring.consistency: unknown variant `always`, expected `mean` or `pass_k`"],
    );
    let (_dir, path) = write("advanced: {trials: 4}\nscoring: {consistency: pass_k, k: 2}\n");
    let mut c = load_with_env(Some(&path), &Overrides::default(), &env(&[]))
        .unwrap()
        .config;
    assert_eq!((c.advanced.trials, c.scoring.k), (4, Some(2)));
    let flags = ("--trials", "--trial");
    let e = crate::config::override_trials(&mut c, Some(1), Some(2), flags).unwrap_err();
    let e: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_exactly(
        &e,
        &[
            "--trial: 2 is outside 1..=1",
            "scoring.k: 2 is above the 1 trial(s) each case runs",
        ],
    );
}

#[test]
fn invariants_load_with_their_errors_at_the_field() {
    let errors = errors_of(
        "invariants:\n  - {type: regex, pattern: '(unclosed'}\n  - {type: contanis, value: x}\n  - {type: latency}\n  - {type: similarity, expected: hi, threshold: 2}\n  - {type: contains, value: ok, negate: true, description: fine}\n",
        &[],
    );
    let expect = [
        "invariants[0].pattern: invalid regex `(unclosed`",
        "invariants[1].type: unknown variant `contanis`, expected one of `contains`",
        "invariants[2].max_ms: missing field `max_ms`",
        "invariants[3].threshold: 2 is outside 0..=1",
    ];
    assert_exactly(&errors, &expect);
}

#[test]
fn contract_scoring_and_output_errors_name_their_paths() {
    let errors = errors_of(
        r#"
contract:
  name: C
  invariants:
    - {id: cite, type: regex, pattern: source, severity: urgent}
    - {id: cite, type: contains, value: x, when: sometimes}
    - {type: completes}
  chaos_matrix:
    - name: down
      tool_faults: [{tool: '*', mode: eror}]
    - name: down
scoring: {mutation: 0.5, chaos: 0.5, contract: 0.5, replay: 0}
output: {format: [json, pdf]}
golden_prompts: ["ok", " "]
"#,
        &[],
    );
    let expect = [
        "contract.invariants[0].severity: unknown variant `urgent`, expected one of `critical`, `high`, `medium`, `low`",
        "contract.invariants[1].id: duplicate invariant id `cite`",
        "contract.invariants[1].when: unknown variant `sometimes`",
        "contract.invariants[2].id: required",
        "contract.chaos_matrix[0].tool_faults[0].mode: unknown variant `eror`",
        "contract.chaos_matrix[1].name: duplicate scenario `down`",
        "scoring: weights sum to 1.5; they must sum to 1.0",
        "output.format[1]: unknown variant `pdf`",
        "golden_prompts[1]: must not be empty",
    ];
    assert_exactly(&errors, &expect);
    let errors = errors_of("chaos_matrix: [{name: x}]\n", &[]);
    assert!(
        errors[0].starts_with("chaos_matrix: needs a `contract:` section"),
        "{errors:?}"
    );
}

#[test]
fn digest_is_the_sha256_of_the_file() {
    // FIPS 180-2's "abc" vector.
    assert_eq!(
        super::digest(b"abc"),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

/// Issue #9: two `chaos:` sections lost the first one's rules and `validate` said ok.
#[test]
fn duplicate_keys_are_errors_naming_both_lines() {
    let errors = errors_of(
        "chaos:\n  tool_faults: [{tool: '*', mode: error, error_code: 503}]\nproxy:\n  listen: 127.0.0.1:1\n  listen: 127.0.0.1:2\nchaos:\n  llm_faults: []\n",
        &[],
    );
    assert_exactly(
        &errors,
        &[
            "proxy.listen: duplicate key `listen` (lines 4 and 5)",
            "chaos: duplicate key `chaos` (lines 1 and 6)",
        ],
    );
}

/// Issue #9: `validate` spent seconds on deeply nested YAML; refused at the depth limit.
#[test]
fn deep_nesting_in_a_file_is_refused() {
    let errors = errors_of(
        &format!("tools: {}{}\n", "[".repeat(40_000), "]".repeat(40_000)),
        &[],
    );
    assert_exactly(&errors, &["nesting deeper than 64 levels"]);
}

/// Issue #9: serde stops at the first bad field; every bad field of a section is reported.
#[test]
fn every_error_inside_a_section_is_reported() {
    let errors = errors_of(
        "proxy:\n  connect_timeout_ms: soon\n  max_header_bytes: -1\n  bogus: 1\n  users:\n    - {name: a, password: p, extra: 1}\nadvanced:\n  concurrency: many\n  attribution: magic\n",
        &[],
    );
    assert_exactly(
        &errors,
        &[
            "proxy.connect_timeout_ms: invalid type: string \"soon\", expected u64",
            "proxy.max_header_bytes: invalid value: integer `-1`",
            "proxy.bogus: unknown field `bogus`",
            "proxy.users[0].extra: unknown field `extra`",
            "advanced.concurrency: invalid type: string \"many\"",
            "advanced.attribution: unknown variant `magic`",
        ],
    );
}

/// Issue #9: an API key pasted into a number field was printed back in the error.
#[test]
fn no_secret_is_echoed_in_an_error() {
    let key = "sk-proj-4f9Qm2Lx7Rt8Vb1Nc6Zd3Wy5";
    let errors = errors_of(
        &format!(
            "proxy:\n  connect_timeout_ms: \"{key}\"\ncontrol:\n  listen: \"{key}\"\nadvanced:\n  attribution: \"{key}\"\njournal:\n  capacity: \"${{KEY}}\"\ntools: \"{key}\"\n"
        ),
        &[("KEY", "ghp_abcdefghijklmnop1234")],
    );
    assert_eq!(errors.len(), 5, "{errors:#?}");
    for e in &errors {
        assert!(!e.contains(key) && !e.contains("ghp_"), "{e}");
    }
    assert!(
        errors.iter().any(|e| {
            e.starts_with(
        "proxy.connect_timeout_ms: invalid type: string (32 characters, not shown), expected u64"
    )
        }),
        "{errors:#?}"
    );
}

/// Issue #9: literal credentials load, with a warning recommending `${VAR}`.
#[test]
fn literal_secrets_are_warned_about() {
    let (_dir, path) = write(
        "control:\n  token: t0ps3cret\nproxy:\n  users: [{name: a, password: hunter2}]\nadvanced:\n  embeddings: {url: 'http://127.0.0.1:1/v1/embeddings', model: m, api_key: sk-abc}\n",
    );
    let loaded = load_with_env(Some(&path), &Overrides::default(), &env(&[])).unwrap();
    let named: Vec<&str> = loaded
        .warnings
        .iter()
        .filter(|w| w.contains("literal secret"))
        .map(|w| w.split(':').next().unwrap())
        .collect();
    assert_eq!(
        named,
        [
            "control.token",
            "proxy.users[0].password",
            "advanced.embeddings.api_key"
        ]
    );
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| !w.contains("t0ps3cret") && !w.contains("hunter2"))
    );
}

/// Issue #9: `proxy: "<string>"` plus `--listen` started `serve` although `validate`
/// reported the section; a flag or env layer no longer replaces a broken section.
#[test]
fn listen_flag_does_not_hide_a_broken_section() {
    let (_dir, path) = write("proxy: \"127.0.0.1:9000\"\ncontrol: 8081\n");
    let o = Overrides {
        proxy_listen: Some("127.0.0.1:9001".into()),
        control_listen: Some("127.0.0.1:9002".into()),
        ..Overrides::default()
    };
    for vars in [
        env(&[]),
        env(&[("FLAKESTORM_PROXY__LISTEN", "127.0.0.1:9003")]),
    ] {
        let with = load_with_env(Some(&path), &o, &vars).unwrap_err();
        let without = load_with_env(Some(&path), &Overrides::default(), &env(&[])).unwrap_err();
        assert_eq!(with.errors, without.errors);
        let paths: Vec<&str> = with.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["proxy", "control"]);
    }
}

/// Issue #9: v2 files with `{type: refusal_check}` and no `dangerous_prompts` failed to
/// load; they get the built-in list (v2's own field was a boolean).
#[test]
fn refusal_check_without_prompts_uses_the_built_in_list() {
    use crate::checks::spec::Check;
    let (_dir, path) = write(
        "invariants:\n  - {type: refusal_check}\n  - {type: refusal_check, dangerous_prompts: true}\n  - {type: refusal_check, dangerous_prompts: ['how to x']}\n",
    );
    let loaded = load_with_env(Some(&path), &Overrides::default(), &env(&[])).unwrap();
    let noted: Vec<&str> = loaded
        .warnings
        .iter()
        .filter(|w| w.contains("built-in"))
        .map(|w| w.split(':').next().unwrap())
        .collect();
    assert_eq!(noted, ["invariants[0]", "invariants[1]"]);
    let c = loaded.config;
    let lists: Vec<usize> = c
        .invariants
        .iter()
        .map(|i| match &i.check {
            Check::RefusalCheck { dangerous_prompts } => dangerous_prompts.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    let n = crate::checks::spec::DEFAULT_DANGEROUS_PROMPTS.len();
    assert_eq!(lists, [n, n, 1]);
    assert!(n >= 5);
    let errors = errors_of(
        "invariants:\n  - {type: refusal_check, dangerous_prompts: []}\n  - {type: refusal_check, dangerous_prompts: 5}\n",
        &[],
    );
    assert_exactly(
        &errors,
        &[
            "invariants[0].dangerous_prompts: needs at least one prompt",
            "invariants[1].dangerous_prompts: invalid type: integer `5`, expected a list of prompts (or true, as in Flakestorm v2)",
        ],
    );
}

#[test]
fn every_bad_match_url_glob_is_reported_with_its_index() {
    let errors = errors_of(
        r#"
tools:
  - name: search
    match_url: "https://api.search.example/*"
  - name: mail
    match_url: ["https://mail.example/*", "https://[mail"]
llm:
  - provider: openai
    match_url: "http://llm/{a"
"#,
        &[],
    );
    let expect = [
        "tools[1].match_url[1]: invalid glob `https://[mail`: unclosed character class; missing ']'",
        "llm[0].match_url[0]: invalid glob `http://llm/{a`: unclosed alternate group; missing '}'",
    ];
    assert_exactly(&errors, &expect);
}

/// Relative paths in `replays` are the config file's: session files, and an inline
/// session's `contract:` file (resolved when the run reads it).
#[test]
fn replay_paths_are_relative_to_the_config_file() {
    let (dir, path) = write(
        "replays:\n  sessions:\n    - file: incidents/a.yaml\n    - {id: b, input: hi, contract: contracts/c.yaml}\n",
    );
    let loaded = load_with_env(Some(&path), &Overrides::default(), &env(&[])).unwrap();
    let r = &loaded.config.replays;
    assert_eq!(r.base, dir.path());
    assert_eq!(
        r.sessions[0],
        crate::config::replays::SessionEntry::File(dir.path().join("incidents/a.yaml"))
    );
}

/// Options that do not fit their mode or provider are load errors with their path, like
/// numbers out of range (`chaos::fit`).
#[test]
fn llm_options_that_do_not_fit_are_errors_with_their_path() {
    let errors = errors_of(
        r#"
chaos:
  llm_faults:
    - {mode: content_filter, signal: refusal, provider: ollama}
    - {mode: server_error, after_events: 2}
    - {mode: content_filter, signal: sometimes}
"#,
        &[],
    );
    let expect = [
        "chaos.llm_faults[0].provider: Ollama has no content-filter or refusal signal",
        "chaos.llm_faults[1].after_events: only a mid-stream error has a position: set `in_stream: true`",
        "chaos.llm_faults[2].signal: unknown variant `sometimes`, expected one of `filtered`",
    ];
    assert_exactly(&errors, &expect);
}

#[test]
fn a_submitted_config_takes_no_layers_and_sets_the_daemons_sections_aside() {
    let vars = env(&[
        ("FLAKESTORM_AGENT__ENDPOINT", "http://elsewhere.example/x"),
        ("K", "v"),
    ]);
    let text = "agent: {endpoint: 'http://127.0.0.1:1/x', headers: {a: '${K}'}}\n\
                proxy: {upstream_ca_file: /nonexistent/ca.pem, listen: 'not an address'}\n";
    let base = PathBuf::from(".");
    let loaded = load_submitted(Submitted::Text { text, base: &base }, &vars).unwrap();
    let agent = loaded.config.agent.unwrap();
    assert_eq!(agent.endpoint.to_string(), "http://127.0.0.1:1/x");
    assert_eq!(agent.headers["a"], "v");
    assert!(loaded.named.sections.iter().any(|s| s == "proxy"));
    assert_eq!(
        loaded.config.proxy.upstream_ca_file, None,
        "set aside unread"
    );

    let text = "agent: {endpoint: 'http://127.0.0.1:1/x', headers: {a: '${NOPE}'}}\n";
    let e = load_submitted(Submitted::Text { text, base: &base }, &vars).unwrap_err();
    let e = e.errors[0].to_string();
    assert!(
        e.starts_with("agent.headers.a: `${NOPE}` has no value") && e.contains("expose_env"),
        "{e}"
    );
}

#[test]
fn a_json_config_keeps_every_character_of_its_strings() {
    // What `token_manipulation` puts into prompts, in a config sent as a JSON object.
    let text = serde_json::json!({"golden_prompts": ["a\u{85}b\u{7f}c"]}).to_string();
    let base = PathBuf::from(".");
    let loaded = load_text(&text, "t", &base, &Overrides::default(), &BTreeMap::new()).unwrap();
    assert_eq!(loaded.config.golden_prompts, ["a\u{85}b\u{7f}c"]);
    let sent = Submitted::Text {
        text: &text,
        base: &base,
    };
    let loaded = load_submitted(sent, &BTreeMap::new()).unwrap();
    assert_eq!(loaded.config.golden_prompts, ["a\u{85}b\u{7f}c"]);
}

/// A replay session file given as the config (v2 users keep them side by side) is said to
/// be one, once, instead of an "unknown section" per field.
#[test]
fn a_session_file_given_as_the_config_is_named_as_one() {
    let errors = errors_of(
        "id: incident-42\ninput: \"What was ACME's Q3 revenue?\"\ntool_responses:\n  - {tool: web_search, response: \"503\"}\nexpected_failure: made up a number\ncontract: Research agent\n",
        &[],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("this is a replay session file")
            && errors[0].contains("flakestorm replay run FILE"),
        "{errors:?}"
    );
    // A config that also has an `input:` key is a config with an unknown section.
    let errors = errors_of(
        "agent: {endpoint: \"http://127.0.0.1:9/\"}\nid: x\ninput: y\n",
        &[],
    );
    assert!(
        errors.iter().all(|e| e.contains("unknown section")),
        "{errors:?}"
    );
}

/// MCP in a file: `protocol: mcp` tools, MCP modes and selectors load; an MCP rule on a
/// plain HTTP tool is a warning; a bad `mcp_tool` glob and an MCP selector on an LLM fault
/// are errors at their paths.
#[test]
fn mcp_rules_load_and_misplaced_ones_are_said() {
    let yaml = "tools:\n  - {name: crm, match_url: 'https://crm.example/*', protocol: mcp}\n  \
                - {name: search, match_url: 'https://s.example/*'}\n\
                chaos:\n  tool_faults:\n    - {tool: crm, mode: mcp_error, code: -32602, mcp_tool: 'send_*'}\n    \
                - {tool: search, mode: mcp_tool_error}\n  context_attacks:\n    \
                - {type: mcp_rug_pull, tool: crm}\n    - {type: mcp_shadowing, tool: crm, shadows: get_weather}\n";
    let (_dir, path) = write(yaml);
    let loaded = load_with_env(Some(&path), &Overrides::default(), &BTreeMap::new()).unwrap();
    assert_eq!(
        loaded.warnings,
        [
            "chaos.tool_faults[1]: `mcp_tool_error` acts on MCP messages and tool `search` is not \
          declared `protocol: mcp`: it applies only where MCP traffic is recognised on its URLs"
        ]
    );
    let errors = errors_of(
        "tools: [{name: crm, match_url: 'https://c/*', protocol: mcp}]\nchaos:\n  tool_faults:\n    \
         - {tool: crm, mode: mcp_tool_error, mcp_tool: '[a'}\n  llm_faults:\n    - {mode: empty, mcp_method: x}\n  \
         context_attacks:\n    - {type: overflow, mcp_tool: x}\n",
        &[],
    );
    assert!(
        errors[0].starts_with("chaos.tool_faults[0].mcp_tool: invalid glob"),
        "{errors:?}"
    );
    assert_eq!(
        errors[1],
        "chaos.llm_faults[0].mcp_method: llm_faults apply to LLM calls, not MCP"
    );
    assert_eq!(
        errors[2],
        "chaos.context_attacks[0].mcp_tool: `overflow` rewrites LLM requests, not MCP messages"
    );
    let errors = errors_of(
        "tools: [{name: crm, match_url: 'https://c/*', protocol: grpc}]\n",
        &[],
    );
    assert!(
        errors[0].contains("unknown variant `grpc`, expected `http` or `mcp`"),
        "{errors:?}"
    );
}

/// A stdio MCP tool (`flakestorm wrap`): named without a URL, given its bridge's; a URL, a
/// name a wrap cannot give, or a missing `protocol: mcp` are errors at their paths.
#[test]
fn stdio_tools_load_without_a_url_and_misdeclared_ones_are_said() {
    let yaml = "tools:\n  - {name: files, protocol: mcp, transport: stdio}\n\
                chaos:\n  tool_faults:\n    - {tool: files, mode: mcp_tool_error, mcp_tool: read}\n";
    let (_dir, path) = write(yaml);
    let loaded = load_with_env(Some(&path), &Overrides::default(), &BTreeMap::new()).unwrap();
    let files = &loaded.config.tools[0];
    assert_eq!(
        &files.match_url[..],
        ["http://*.stdio.flakestorm.invalid/files"]
    );
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let errors = errors_of(
        "tools:\n  - {name: a, transport: stdio}\n  \
         - {name: b, protocol: mcp, transport: stdio, match_url: 'https://b/*'}\n  \
         - {name: 'c d', protocol: mcp, transport: stdio}\n  - {name: e}\n",
        &[],
    );
    assert_eq!(
        errors,
        [
            "tools[0].transport: `stdio` is MCP's stdio transport: add `protocol: mcp`",
            "tools[1].match_url: a `transport: stdio` tool has no URL: `flakestorm wrap --tool \
             NAME` carries its messages; remove match_url",
            "tools[2].name: a stdio tool's name is what `flakestorm wrap --tool` gives: letters, \
             digits, `-`, `_` and `.` (at most 64)",
            "tools[3].match_url: needs at least one URL glob",
        ]
    );
}
