use super::*;
use crate::exchange::tests_support::exchange;
use crate::exchange::{Provider, Target};
use std::sync::Arc;

fn pricing() -> Pricing {
    let v = serde_json::json!({"models": {"gpt-x": {"input": 1.0, "output": 2.0}}});
    let table = crate::cost::parse_table(&v).unwrap();
    Pricing::of(None, false, &[&table])
}

fn answer(input: Option<u64>, output: Option<u64>, model: &str) -> Arc<crate::exchange::Exchange> {
    let llm = Target::Llm {
        provider: Provider::Openai,
    };
    Arc::new(
        exchange(llm, "https://api.openai.com/v1/chat/completions")
            .usage(input, output, model)
            .build(),
    )
}

fn usage(traffic: &[Arc<crate::exchange::Exchange>]) -> RunUsage {
    let p = pricing();
    RunUsage {
        spent: Tally::of(traffic, &p),
        because_of_faults: vec![],
        pricing: PricingInfo::of(&p),
        scenarios: vec![],
    }
}

#[test]
fn the_summary_line_gives_tokens_and_cost() {
    let u = usage(&[
        answer(Some(20), Some(10), "gpt-x"),
        answer(Some(20), Some(10), "gpt-x"),
    ]);
    assert_eq!(
        u.summary_line().unwrap(),
        "LLM usage: 2 call(s), 60 tokens (40 in, 20 out), 0.000080 USD"
    );
}

#[test]
fn unknown_usage_is_unknown_never_zero() {
    let u = usage(&[
        answer(Some(20), Some(10), "gpt-x"),
        answer(None, None, "gpt-x"),
    ]);
    let line = u.summary_line().unwrap();
    assert_eq!(
        line,
        "LLM usage: 2 call(s), tokens unknown (at least 30), cost unknown (at least 0.000040 USD); \
         1 answer(s) reported no usage"
    );
    let u = usage(&[answer(None, None, "gpt-x")]);
    let line = u.summary_line().unwrap();
    assert!(
        line.contains("tokens unknown, cost unknown (USD)"),
        "{line}"
    );
    assert!(!line.contains(" 0 "), "{line}");
    let u = usage(&[answer(Some(5), Some(5), "llama-local")]);
    let line = u.summary_line().unwrap();
    assert!(
        line.ends_with("10 tokens (5 in, 5 out), cost unknown (USD); no price for llama-local"),
        "{line}"
    );
}

#[test]
fn no_llm_answer_no_line() {
    assert_eq!(usage(&[]).summary_line(), None);
}
