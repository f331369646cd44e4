//! Failures at scale (a 900-case run): a cell's failing cases grouped by cause (the failing
//! invariant and the kind of its reason, numbers aside), each group naming its first few
//! cases and counting the rest; the section's causes across its cells, most cases first;
//! and the first failed case, shown under the matrix with its timeline so both are on the
//! page's first screen.

use serde::Serialize;

use super::timeline::{self, Timeline};
use super::{Link, marks, reason, text};
use crate::checks::Verdict;
use crate::report::outcomes;
use crate::report::view::{CaseView, Section};

/// Cases a group links by name; the rest are counted.
pub(super) const SHOWN: usize = 5;

/// One cause: an invariant failing for one kind of reason, on `count` cases.
#[derive(Serialize)]
pub(super) struct Cause {
    invariant: String,
    /// The first case's reason (its kind is what the group shares).
    reason: String,
    count: usize,
    scenarios: Vec<String>,
    /// The first `SHOWN` cases.
    cases: Vec<Link>,
    /// How many more cases the group has.
    more: usize,
}

/// A reason's kind: its text with numbers blanked (`took 3021 ms` and `took 2998 ms` are
/// one cause), cut to 200 characters.
fn kind(reason: &str) -> String {
    let mut out = String::new();
    for c in reason.chars().take(200) {
        match (c.is_ascii_digit(), out.ends_with('#')) {
            (true, true) => {}
            (true, false) => out.push('#'),
            (false, _) => out.push(c),
        }
    }
    out
}

/// A case's link, with its outcome badge.
pub(super) fn link(s: &Section<'_>, cv: &CaseView<'_>, i: usize) -> Link {
    Link {
        label: text::line(&cv.case.prompt, 60),
        href: CaseView::anchor(s.phase, i),
        badge: outcomes::badge(cv.case.outcome.as_ref()),
    }
}

/// The causes of the failures among `s`'s cases whose scenario `in_scope` accepts, for
/// the invariants `wanted` accepts: most cases first, then in the order first met.
pub(super) fn causes(
    s: &Section<'_>,
    in_scope: impl Fn(&str) -> bool,
    wanted: impl Fn(&str) -> bool,
) -> Vec<Cause> {
    let mut out: Vec<(String, Cause)> = vec![];
    for (i, cv) in s.cases.iter().enumerate() {
        if !in_scope(&cv.case.scenario) {
            continue;
        }
        for (inv, v) in &cv.checks {
            let Verdict::Fail(why) = v else { continue };
            if !wanted(inv) {
                continue;
            }
            let key = format!("{inv}\u{0}{}", kind(why));
            let at = match out.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    out.push((
                        key,
                        Cause {
                            invariant: text::line(inv, 60),
                            reason: text::line(why, 300),
                            count: 0,
                            scenarios: vec![],
                            cases: vec![],
                            more: 0,
                        },
                    ));
                    out.len() - 1
                }
            };
            let cause = &mut out[at].1;
            cause.count += 1;
            let scenario = text::line(&cv.case.scenario, 60);
            if !cause.scenarios.contains(&scenario) {
                cause.scenarios.push(scenario);
            }
            match cause.cases.len() < SHOWN {
                true => cause.cases.push(link(s, cv, i)),
                false => cause.more += 1,
            }
        }
    }
    let mut causes: Vec<Cause> = out.into_iter().map(|(_, c)| c).collect();
    causes.sort_by_key(|c| std::cmp::Reverse(c.count));
    causes
}

/// The first failed case, as the matrix's neighbour: where it is, why it failed, and its
/// timeline.
#[derive(Serialize)]
pub(super) struct First {
    case: Link,
    scenario: String,
    /// Its failed checks, `invariant: reason`.
    failures: Vec<String>,
    timeline: Option<Timeline>,
}

pub(super) fn first(s: &Section<'_>) -> Option<First> {
    let (i, cv) = s
        .cases
        .iter()
        .enumerate()
        .find(|(_, c)| c.passed == Some(false))?;
    let failures = cv
        .checks
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Fail(_)))
        .map(|(label, v)| text::line(&format!("{label}: {}", reason(v)), 300))
        .collect();
    let timeline = cv
        .case
        .traffic
        .as_deref()
        .and_then(|t| timeline::of(t, &marks::of(cv.case.outcome.as_ref())));
    Some(First {
        case: link(s, cv, i),
        scenario: text::line(&cv.case.scenario, 60),
        failures,
        timeline,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_do_not_split_a_cause() {
        assert_eq!(super::kind("took 3021 ms, over 2000"), "took # ms, over #");
        assert_eq!(super::kind("took 998 ms, over 2000"), "took # ms, over #");
    }
}
