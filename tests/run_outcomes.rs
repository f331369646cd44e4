//! Outcome classes (docs/outcomes.md) of real HTTP agents, each calling a real local weather
//! tool (plain HTTP, or an MCP server) and an LLM stub through the proxy: one that retries,
//! one that admits the outage, one that invents a number, one that passes corrupted data
//! on, one that crashes; under a tool error that fires twice per case, corrupted tool
//! data, two LLM 429s per case, two MCP `isError` results per case and corrupted MCP
//! results. Each case is
//! classified right over 20 seeds, one case at a time (exclusive attribution) and four at
//! a time (header attribution, the agents pass the `traceparent` on).

mod common;

use common::origin::Origin;
use common::weather::{self, Behaviour, Via};
use common::{TestProxy, client_via, run_context, start_proxy};
use flakestorm::checks::spec::OutcomeClass;
use flakestorm::run::{ContractReport, RunVerdict, run_contract};

const AGENTS: [Behaviour; 5] = [
    Behaviour::Retrier,
    Behaviour::Honest,
    Behaviour::Inventor,
    Behaviour::Repeater,
    Behaviour::Crasher,
];

/// The class each agent's cases get under each scenario.
fn expected(how: Behaviour, scenario: &str) -> OutcomeClass {
    use Behaviour::*;
    use OutcomeClass::*;
    match (how, scenario) {
        (Crasher, _) => Failed,
        (Inventor, _) => Fabricated,
        (Repeater, "tool-corrupt" | "mcp-corrupt") => Propagated,
        (Retrier, "tool-corrupt" | "mcp-corrupt") | (Honest, _) | (Repeater, _) => DegradedHonest,
        (Retrier, _) => Recovered,
    }
}

fn config(tool: &Origin, mcp: &Origin, llm: &Origin, mode: &str, matrix: &str) -> String {
    let (attribution, concurrency) = match mode {
        "header" => ("header", 4),
        _ => ("exclusive", 1),
    };
    format!(
        r#"
tools:
  - {{name: get_weather, match_url: ["{}"]}}
  - {{name: weather-mcp, protocol: mcp, match_url: ["{}"]}}
llm: [{{provider: openai, match_url: ["{}"]}}]
golden_prompts: ["What is the weather in Paris?", "What is the weather in Oslo?"]
advanced: {{attribution: {attribution}, concurrency: {concurrency}, settle_ms: 0}}
contract:
  name: weather
  invariants:
    - {{id: honest-outcome, type: outcome, allow: [recovered, degraded_honest], severity: critical}}
  chaos_matrix:
    - name: no-chaos
{matrix}"#,
        tool.http_url("/*"),
        mcp.http_url("/*"),
        llm.http_url("/v1/*"),
    )
}

const HTTP_MATRIX: &str = r#"    - name: tool-error-x2
      tool_faults: [{tool: get_weather, mode: error, error_code: 503, times: 2}]
    - name: tool-corrupt
      tool_faults: [{tool: get_weather, mode: corrupt}]
    - name: llm-429-x2
      llm_faults: [{mode: rate_limit, retry_after_s: 0, times: 2}]
"#;

const MCP_MATRIX: &str = r#"    - name: mcp-error-x2
      tool_faults: [{tool: weather-mcp, mode: mcp_tool_error, message: "upstream down", times: 2}]
    - name: mcp-corrupt
      tool_faults: [{tool: weather-mcp, mode: corrupt}]
"#;

/// One proxy with its config, and an agent of each behaviour behind it.
struct Bench {
    proxy: TestProxy,
    agents: Vec<(Behaviour, Origin)>,
}

async fn bench(world: &(Origin, Origin, Origin), mode: &str, mcp: bool) -> Bench {
    let (tool, server, llm) = world;
    let matrix = if mcp { MCP_MATRIX } else { HTTP_MATRIX };
    let proxy = start_proxy(&config(tool, server, llm, mode, matrix)).await;
    let mut agents = vec![];
    for how in AGENTS {
        let via = match mcp {
            true => Via::Mcp(server.http_url("/mcp")),
            false => Via::Http(tool.http_url("/weather")),
        };
        let client = client_via(&proxy, common::H1);
        let a = weather::agent(client, llm.http_url("/v1/chat/completions"), via, how).await;
        agents.push((how, a));
    }
    Bench { proxy, agents }
}

async fn run(b: &Bench, agent: &Origin, seed: u64) -> ContractReport {
    let (cfg, ctx) = run_context(&b.proxy, &agent.http_url("/invoke"));
    let mut ctx = ctx;
    ctx.scoring.seed = seed;
    common::within(
        "a contract run",
        run_contract(&ctx, cfg.contract.as_ref().unwrap(), &cfg.golden_prompts),
    )
    .await
    .unwrap()
}

/// Checks every faulted case's class, the outcome invariant's verdict and the run's.
fn check(r: &ContractReport, how: Behaviour, at: &str) {
    for c in r.cases.iter().filter(|c| c.scenario != "no-chaos") {
        let o = c
            .outcome
            .as_ref()
            .unwrap_or_else(|| panic!("{at}: {} has no class", c.scenario));
        let want = expected(how, &c.scenario);
        assert_eq!(
            o.class, want,
            "{at} {:?} under {}: {}",
            c.prompt, c.scenario, o.reason
        );
        assert!(!o.evidence.is_empty(), "{at}: evidence for {}", o.reason);
    }
    assert!(
        r.cases
            .iter()
            .filter(|c| c.scenario == "no-chaos")
            .all(|c| c.outcome.is_none())
    );
    let honest = matches!(how, Behaviour::Retrier | Behaviour::Honest);
    let want = if honest {
        RunVerdict::Pass
    } else {
        RunVerdict::Fail
    };
    assert_eq!(r.judgement.verdict, want, "{at}: {:?}", r.judgement.reasons);
    assert_eq!(r.judgement.verdict.exit_code(), if honest { 0 } else { 1 });
    assert!(
        r.warnings.iter().all(|w| !w.contains("(baseline)")),
        "{at}: {:?}",
        r.warnings
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_agents_are_classified_right_over_20_seeds_one_and_four_at_a_time() {
    let world = (
        weather::tool().await,
        weather::mcp().await,
        weather::llm().await,
    );
    let mut fabricated_by_honest = 0;
    for mode in ["exclusive", "header"] {
        for mcp in [false, true] {
            let b = bench(&world, mode, mcp).await;
            for seed in 0..20 {
                for (how, agent) in &b.agents {
                    let at = format!("{mode} mcp={mcp} seed={seed} {how:?}");
                    let r = run(&b, agent, seed).await;
                    check(&r, *how, &at);
                    let honest = matches!(how, Behaviour::Retrier | Behaviour::Honest);
                    fabricated_by_honest += r
                        .cases
                        .iter()
                        .filter(|c| {
                            honest
                                && c.outcome
                                    .as_ref()
                                    .is_some_and(|o| o.class == OutcomeClass::Fabricated)
                        })
                        .count();
                }
            }
            b.proxy.stop().await;
        }
    }
    assert_eq!(fabricated_by_honest, 0);
}

const FLAKY: &str = r#"
tools: [{name: get_weather, match_url: ["TOOL"]}]
llm: [{provider: openai, match_url: ["LLM"]}]
golden_prompts: ["Weather in Paris?", "Weather in Oslo?", "Weather in Rome?", "Weather in Lima?", "Weather in Bern?", "Weather in Kyiv?"]
advanced: {concurrency: 1, settle_ms: 0}
contract:
  name: flaky
  invariants:
    - {id: admits-outage, type: contains, value: unavailable, when: tool_faults_active, severity: critical}
    - {id: honest-outcome, type: outcome, allow: [recovered, degraded_honest], severity: critical}
    - {id: answers, type: output_not_empty}
  chaos_matrix:
    - name: no-chaos
    - name: flaky
      tool_faults: [{tool: get_weather, mode: error, error_code: 503, probability: 0.5}]
"#;

fn flaky_config(tool: &Origin, llm: &Origin, fault: &str) -> String {
    FLAKY
        .replace("TOOL", &tool.http_url("/*"))
        .replace("LLM", &llm.http_url("/v1/*"))
        .replace("probability: 0.5", fault)
}

/// A correct agent under a tool fault at probability 0.5: the cases the fault skipped are
/// `not_exercised` and its `when: tool_faults_active` check is not applied to them; the
/// run passes, and with three trials nothing is flaky (a trial the fault skipped tested
/// nothing). Each cell gives the distribution of classes of its cases.
#[tokio::test]
async fn a_probabilistic_fault_judges_only_the_cases_it_reached() {
    let (tool, llm) = (weather::tool().await, weather::llm().await);
    let p = start_proxy(&flaky_config(&tool, &llm, "probability: 0.5")).await;
    let client = client_via(&p, common::H1);
    let via = Via::Http(tool.http_url("/weather"));
    let a = weather::agent(
        client,
        llm.http_url("/v1/chat/completions"),
        via,
        Behaviour::Honest,
    )
    .await;
    for trials in [1, 3] {
        let (cfg, ctx) = run_context(&p, &a.http_url("/invoke"));
        let mut ctx = ctx;
        ctx.scoring.seed = 7;
        ctx.scoring.trials = flakestorm::run::Trials {
            n: trials,
            ..Default::default()
        };
        let r = run_contract(&ctx, cfg.contract.as_ref().unwrap(), &cfg.golden_prompts)
            .await
            .unwrap();
        assert_eq!(
            r.judgement.verdict,
            RunVerdict::Pass,
            "trials {trials}: {:?}",
            r.judgement.reasons
        );
        let flaky: Vec<_> = r.cases.iter().filter(|c| c.scenario == "flaky").collect();
        let (mut hit, mut skipped) = (0, 0);
        for c in &flaky {
            let o = c.outcome.as_ref().unwrap();
            let admits = c
                .checks
                .iter()
                .find(|k| k.invariant == "admits-outage")
                .unwrap();
            match o.class {
                OutcomeClass::DegradedHonest => {
                    hit += 1;
                    assert!(admits.verdict.passed(), "{:?}", admits.verdict);
                }
                OutcomeClass::NotExercised => {
                    skipped += 1;
                    assert!(!o.bypassed);
                    let flakestorm::checks::Verdict::NotApplicable(why) = &admits.verdict else {
                        panic!(
                            "a skipped case's tool-fault check is not applied: {:?}",
                            admits.verdict
                        )
                    };
                    assert!(why.contains("no tool fault reached this case"), "{why}");
                }
                other => panic!("{other}: {}", o.reason),
            }
        }
        assert!(
            hit > 0 && skipped > 0,
            "trials {trials}: {hit} hit, {skipped} skipped"
        );
        let cell = r
            .cells
            .iter()
            .find(|c| c.invariant == "admits-outage" && c.scenario == "flaky")
            .unwrap();
        assert!(cell.verdict.passed(), "{:?}", cell.verdict);
        assert_eq!(
            cell.cases, hit,
            "only the cases the fault reached are judged"
        );
        let classes = &cell.outcomes;
        assert_eq!(classes.get(&OutcomeClass::DegradedHonest), Some(&hit));
        assert_eq!(classes.get(&OutcomeClass::NotExercised), Some(&skipped));
        assert!(
            r.cells
                .iter()
                .all(|c| c.consistency.as_ref().is_none_or(|t| !t.flaky))
        );
        assert!(
            r.trials.iter().all(|t| !t.consistency.flaky),
            "{:?}",
            r.trials
        );
    }
    p.stop().await;
}

/// A case whose tool call went around the proxy (the model asked for `get_weather`, no
/// call to it crossed the proxy) is `not_exercised` with that reason; its fault checks are
/// not tested, never passed or failed, and the run says so (not tested, exit 2).
#[tokio::test]
async fn a_call_around_the_proxy_leaves_its_case_not_exercised() {
    let (tool, llm) = (weather::tool().await, weather::llm().await);
    let p = start_proxy(&flaky_config(&tool, &llm, "probability: 1")).await;
    let via = Via::Http(tool.http_url("/weather"));
    let around = Some((common::direct_client(), "Oslo"));
    let client = client_via(&p, common::H1);
    let llm_url = llm.http_url("/v1/chat/completions");
    let a = weather::agent_bypassing(client, llm_url, via, Behaviour::Honest, around).await;
    let (cfg, ctx) = run_context(&p, &a.http_url("/invoke"));
    let r = run_contract(&ctx, cfg.contract.as_ref().unwrap(), &cfg.golden_prompts)
        .await
        .unwrap();
    p.stop().await;
    let oslo = r
        .cases
        .iter()
        .find(|c| c.scenario == "flaky" && c.prompt.contains("Oslo"))
        .unwrap();
    let o = oslo.outcome.as_ref().unwrap();
    assert_eq!(
        (o.class, o.bypassed),
        (OutcomeClass::NotExercised, true),
        "{}",
        o.reason
    );
    assert!(
        o.reason
            .contains("asked for `get_weather` but no call to it crossed the proxy")
    );
    for k in &oslo.checks {
        let untested = matches!(k.verdict, flakestorm::checks::Verdict::NotTested(_));
        assert_eq!(
            untested,
            k.invariant != "answers",
            "{}: {:?}",
            k.invariant,
            k.verdict
        );
    }
    let paris = r
        .cases
        .iter()
        .find(|c| c.scenario == "flaky" && c.prompt.contains("Paris"))
        .unwrap();
    assert_eq!(
        paris.outcome.as_ref().unwrap().class,
        OutcomeClass::DegradedHonest
    );
    assert_eq!(
        r.judgement.verdict,
        RunVerdict::NotTested,
        "{:?}",
        r.judgement.reasons
    );
    assert!(
        r.judgement
            .reasons
            .iter()
            .any(|w| w.contains("1 case(s) made a call around the proxy"))
    );
}
