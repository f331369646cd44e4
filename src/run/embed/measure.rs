//! The similarity measure a batch of cases is judged with: lexical without an embedder,
//! otherwise the embeddings of every text the similarity checks will compare, fetched in
//! one batched pass before any cell is judged. An endpoint failure neither aborts the run
//! nor falls back to lexical: those checks become not applicable and the report warns.

use std::collections::HashMap;
use std::sync::Arc;

use crate::checks::Similarity;
use crate::checks::spec::Check;
use crate::run::CaseResult;

/// The measure for judging `cases` with `checks`. `baselines` are the no-chaos answers by
/// prompt (`behavior_unchanged: auto`); `warnings` gets the endpoint's error, once.
pub(crate) async fn measure<'a>(
    ctx: &crate::run::Scoring,
    checks: impl IntoIterator<Item = &'a Check>,
    cases: &'a [CaseResult],
    baselines: &'a HashMap<String, String>,
    warnings: &mut Vec<String>,
) -> Similarity {
    let Some(embedder) = &ctx.embedder else {
        return Similarity::Lexical;
    };
    let Some(texts) = texts(checks, cases, baselines) else {
        return Similarity::Lexical; // no check compares texts
    };
    match embedder.embed(&texts).await {
        Ok(vectors) => Similarity::Embedded(Arc::new(vectors)),
        Err(e) => {
            let warning = format!(
                "{e}: similarity and behavior_unchanged checks that needed it are not applicable"
            );
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
            Similarity::Unavailable(e.to_string().into())
        }
    }
}

/// Every text the checks compare: `expected`, fixed baselines, the answers and, for
/// `baseline: auto`, the cases' baselines. `None` when no check compares texts.
fn texts<'a>(
    checks: impl IntoIterator<Item = &'a Check>,
    cases: &'a [CaseResult],
    baselines: &'a HashMap<String, String>,
) -> Option<Vec<&'a str>> {
    let (mut fixed, mut compares, mut auto) = (vec![], false, false);
    for check in checks {
        match check {
            Check::Similarity { expected, .. } => fixed.push(expected.as_str()),
            Check::BehaviorUnchanged { baseline, .. } if baseline == "auto" => auto = true,
            Check::BehaviorUnchanged { baseline, .. } => fixed.push(baseline.as_str()),
            Check::Contains { .. }
            | Check::ContainsAny { .. }
            | Check::Regex { .. }
            | Check::ExcludesPattern { .. }
            | Check::Latency { .. }
            | Check::ValidJson {}
            | Check::ExcludesPii {}
            | Check::RefusalCheck { .. }
            | Check::OutputNotEmpty {}
            | Check::Completes {}
            | Check::ToolCalled { .. }
            | Check::ToolNotCalled { .. }
            | Check::MaxToolCalls { .. }
            | Check::MaxLlmCalls { .. }
            | Check::MaxTokens { .. }
            | Check::MaxCost { .. }
            | Check::HonorsRetryAfter {}
            | Check::NoExfiltration {}
            | Check::Outcome { .. } => continue,
        }
        compares = true;
    }
    let answers = cases.iter().filter_map(|c| c.answer.as_deref());
    let auto_baselines = cases
        .iter()
        .filter(|_| auto)
        .filter_map(|c| baselines.get(&c.prompt).map(String::as_str));
    compares.then(|| {
        fixed
            .into_iter()
            .chain(answers)
            .chain(auto_baselines)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(prompt: &str, answer: Option<&str>) -> CaseResult {
        CaseResult::for_test(prompt, answer)
    }

    #[test]
    fn collects_exactly_the_compared_texts() {
        let cases = [case("p", Some("answer")), case("q", None)];
        let baselines: HashMap<String, String> =
            [("p".into(), "base p".into()), ("q".into(), "base q".into())].into();
        let sim = Check::Similarity {
            expected: "expected".into(),
            threshold: 0.8,
        };
        let auto = Check::BehaviorUnchanged {
            baseline: "auto".into(),
            similarity_threshold: 0.75,
        };
        let other = Check::Completes {};
        assert_eq!(texts([&other], &cases, &baselines), None);
        assert_eq!(
            texts([&sim, &other], &cases, &baselines),
            Some(vec!["expected", "answer"])
        );
        assert_eq!(
            texts([&auto], &cases, &baselines),
            Some(vec!["answer", "base p", "base q"])
        );
    }
}
