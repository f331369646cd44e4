//! `max_tokens` and `max_cost`: a case's LLM spend (its usage's tally) against a limit,
//! never taking an unknown figure for 0.

use super::Verdict;
use crate::cost::Tally;

/// What `max_tokens` and `max_cost` limit.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Spent {
    Tokens,
    Cost,
}

/// `max_tokens`, `max_cost`: over the limit fails even when some answer's usage is
/// unknown (the figure is then a floor); at or under it passes only when every answer
/// reported (and, for cost, was priced): an unknown is never taken for 0.
pub(super) fn spent(
    usage: Option<&Tally>,
    max: f64,
    figure: fn(&Tally) -> Option<f64>,
    what: Spent,
) -> Verdict {
    let Some(t) = usage else {
        return Verdict::NotTested("the case's LLM usage was not recorded".into());
    };
    let show = |x: f64| match what {
        Spent::Cost => format!("{} {}", crate::cost::money(x), t.currency),
        Spent::Tokens => format!("{x} tokens"),
    };
    let partial = t.cost_note.as_deref();
    let whole = match what {
        Spent::Tokens => t.unknown_calls == 0,
        Spent::Cost => partial.is_none(),
    };
    match figure(t) {
        Some(n) if n > max => Verdict::Fail(match partial {
            Some(why) => format!("at least {} > {} ({why})", show(n), show(max)),
            None => format!("{} > {}", show(n), show(max)),
        }),
        Some(n) if whole => Verdict::Pass(format!("{} ≤ {}", show(n), show(max))),
        Some(n) => Verdict::NotTested(format!(
            "{} reported ≤ {}, but {}",
            show(n),
            show(max),
            partial.unwrap_or("some usage is unknown")
        )),
        None => Verdict::NotTested(format!(
            "unknown: {}",
            partial.unwrap_or("no LLM answer reported usage")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::traffic::TrafficCheck;
    use super::*;
    use crate::cost::{Pricing, Tally};
    use crate::exchange::Usage;

    fn tally(answers: &[(Option<u64>, Option<u64>, &str)]) -> Tally {
        let p = Pricing::default();
        let mut t = Tally::empty(&p.currency);
        for (i, o, m) in answers {
            let u = Usage {
                input_tokens: *i,
                output_tokens: *o,
                model: Some(m.to_string()),
            };
            t.add(&Tally::of_usage(&u, &p));
        }
        t
    }

    fn tokens(max: u64, t: &Tally) -> Verdict {
        TrafficCheck::MaxTokens { max }.verdict(&[], Some(t))
    }

    #[test]
    fn max_tokens_fails_over_the_limit_and_passes_under_it() {
        let t = tally(&[
            (Some(100), Some(20), "gpt-4o"),
            (Some(200), Some(30), "gpt-4o"),
        ]);
        assert_eq!(
            tokens(349, &t),
            Verdict::Fail("350 tokens > 349 tokens".into())
        );
        assert_eq!(
            tokens(350, &t),
            Verdict::Pass("350 tokens ≤ 350 tokens".into())
        );
    }

    #[test]
    fn an_answer_without_usage_is_never_taken_for_zero_tokens() {
        let t = tally(&[(Some(100), Some(20), "gpt-4o"), (None, None, "gpt-4o")]);
        assert!(tokens(500, &t).is_not_tested(), "{:?}", tokens(500, &t));
        let Verdict::Fail(why) = tokens(50, &t) else {
            panic!("{:?}", tokens(50, &t))
        };
        assert!(
            why.starts_with("at least 120 tokens > 50 tokens (1 LLM answer(s) reported no usage"),
            "{why}"
        );
        let none = tally(&[(None, None, "gpt-4o")]);
        assert_eq!((none.input_tokens, none.output_tokens), (None, None));
        assert!(tokens(1, &none).is_not_tested());
        let unattributed = TrafficCheck::MaxTokens { max: 1 }.verdict(&[], None);
        assert!(unattributed.is_not_tested());
    }

    #[test]
    fn max_cost_prices_with_the_table_and_says_what_it_cannot_price() {
        // gpt-4o-mini: 0.15 in, 0.60 out per million.
        let t = tally(&[(Some(1_000_000), Some(1_000_000), "gpt-4o-mini")]);
        let cost = |max| TrafficCheck::MaxCost { max }.verdict(&[], Some(&t));
        assert_eq!(
            cost(0.5),
            Verdict::Fail("0.750000 USD > 0.500000 USD".into())
        );
        assert!(cost(1.0).passed());
        let local = tally(&[(Some(10), Some(10), "llama3.2")]);
        let v = TrafficCheck::MaxCost { max: 1.0 }.verdict(&[], Some(&local));
        assert_eq!(
            v,
            Verdict::NotTested("unknown: no price for `llama3.2` (pricing.models)".into())
        );
    }
}
