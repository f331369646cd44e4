//! JUnit XML, as GitHub Actions reporters, GitLab and Jenkins read it: one `testsuite` per
//! phase, one `testcase` per contract cell (`classname` = phase.scenario, `name` = the
//! invariant) or per chaos and mutation case (`name` = the prompt or variant), plus one
//! `run verdict` testcase per phase so a run that did not pass for reasons no cell shows
//! (traffic that never crossed the proxy, a score under the pass mark) is not green.
//! A failed check is a `failure`; a cell or case that could not be tested is an `error`
//! (never the agent's failure, never a pass); not applicable is `skipped`. `ci`'s skipped
//! phases are a suite with one skipped testcase. Outcome classes: `classes.rs`.

use std::fmt::Write;

mod cells;
mod classes;
mod trials;

use super::text::{clip, inert, line};
use super::view::{CaseView, Overview, PhaseLine, Section};
use crate::checks::Verdict;
use crate::run::RunKind;
use crate::run::RunVerdict;
use crate::text::{Quotes, xml_escape};

/// Case names longer than this are clipped (the JSON report has the full text).
const NAME_CHARS: usize = 120;
/// Failure bodies longer than this are clipped.
const BODY_CHARS: usize = 4000;

/// What a testcase says: nothing (passed), or one child element.
enum Outcome {
    Passed,
    Failure { message: String, body: String },
    Error { message: String },
    Skipped { message: String },
}

struct Suite {
    name: String,
    properties: Vec<(&'static str, String)>,
    cases: Vec<Case>,
}

struct Case {
    classname: String,
    name: String,
    seconds: f64,
    outcome: Outcome,
    /// A case's outcome class; a cell's classes and, with trials, its consistency
    /// figures (testcase `properties`).
    properties: Vec<(String, String)>,
    /// With trials that disagree: each failing trial's reason (Surefire's
    /// `flakyFailure`, which rerun-aware readers show as flaky).
    flaky: Vec<String>,
}

pub fn render(o: &Overview<'_>) -> String {
    let mut suites: Vec<Suite> = vec![];
    for s in &o.sections {
        let mut cases = match s.phase {
            RunKind::Contract => cells::of(s),
            RunKind::Chaos | RunKind::Mutation | RunKind::Replay | RunKind::Ci => cases(s),
        };
        cases.extend(s.unrun.iter().map(|(id, why)| Case {
            classname: format!("replay.{id}"),
            name: (*id).to_string(),
            seconds: 0.0,
            outcome: Outcome::Error {
                message: format!("could not run: {why}"),
            },
            properties: vec![],
            flaky: vec![],
        }));
        cases.push(verdict_case(s));
        let mut properties = vec![
            ("score", format!("{:.1}", s.score)),
            ("min_score", format!("{}", s.min_score)),
            ("verdict", s.judgement.verdict.label().to_string()),
            ("seed", s.seed.to_string()),
        ];
        if let Some(d) = o.config_digest {
            properties.push(("config_digest", d.to_string()));
        }
        if let Some(u) = s.usage {
            properties.extend(crate::report::usage::properties(&u.spent));
        }
        let name = s.phase.to_string();
        suites.push(Suite {
            name,
            properties,
            cases,
        });
    }
    for p in o.phases.iter().filter(|p| p.skipped.is_some()) {
        suites.push(Suite {
            name: p.name.to_string(),
            properties: vec![],
            cases: vec![skipped_phase(p)],
        });
    }
    let all: Vec<&Case> = suites.iter().flat_map(|s| &s.cases).collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"flakestorm {}\" {}>",
        o.kind,
        counts(&all)
    );
    for suite in &suites {
        let refs: Vec<&Case> = suite.cases.iter().collect();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" {}>",
            attr(&suite.name),
            counts(&refs)
        );
        if !suite.properties.is_empty() {
            out.push_str("    <properties>\n");
            for (k, v) in &suite.properties {
                let _ = writeln!(out, "      <property name=\"{k}\" value=\"{}\"/>", attr(v));
            }
            out.push_str("    </properties>\n");
        }
        for c in &suite.cases {
            testcase(&mut out, c);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// `tests`, `failures`, `errors`, `skipped` and `time` attributes.
fn counts(cases: &[&Case]) -> String {
    let n = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
    let time: f64 = cases.iter().map(|c| c.seconds).sum();
    format!(
        "tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{time:.3}\"",
        cases.len(),
        n(|o| matches!(o, Outcome::Failure { .. })),
        n(|o| matches!(o, Outcome::Error { .. })),
        n(|o| matches!(o, Outcome::Skipped { .. })),
    )
}

fn testcase(out: &mut String, c: &Case) {
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
        attr(&c.classname),
        attr(&c.name),
        c.seconds
    );
    if matches!(c.outcome, Outcome::Passed) && c.properties.is_empty() && c.flaky.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    if !c.properties.is_empty() {
        out.push_str("      <properties>\n");
        for (k, v) in &c.properties {
            let _ = writeln!(
                out,
                "        <property name=\"{}\" value=\"{}\"/>",
                attr(k),
                attr(v)
            );
        }
        out.push_str("      </properties>\n");
    }
    let _ = match &c.outcome {
        Outcome::Passed => Ok(()),
        Outcome::Failure { message, body } => writeln!(
            out,
            "      <failure message=\"{}\" type=\"fail\">{}</failure>",
            attr(message),
            text(body)
        ),
        Outcome::Error { message } => writeln!(
            out,
            "      <error message=\"{}\" type=\"not_tested\"/>",
            attr(message)
        ),
        Outcome::Skipped { message } => {
            writeln!(out, "      <skipped message=\"{}\"/>", attr(message))
        }
    };
    for why in &c.flaky {
        let _ = writeln!(
            out,
            "      <flakyFailure message=\"{}\" type=\"fail\"/>",
            attr(why)
        );
    }
    out.push_str("    </testcase>\n");
}

/// A check's verdict as a testcase outcome.
fn outcome(v: &Verdict, body: String) -> Outcome {
    match v {
        Verdict::Pass(_) => Outcome::Passed,
        Verdict::Fail(why) => Outcome::Failure {
            message: why.clone(),
            body,
        },
        Verdict::NotTested(why) => Outcome::Error {
            message: format!("not tested: {why}"),
        },
        Verdict::NotApplicable(why) => Outcome::Skipped {
            message: format!("not applicable: {why}"),
        },
    }
}

/// Chaos, mutation and replay: one testcase per case, with its unit's trials figures.
fn cases(s: &Section<'_>) -> Vec<Case> {
    let with_trials = |c| {
        let mut k = case(s.phase, c);
        k.properties.extend(trials::of_case(s, c));
        k
    };
    s.cases.iter().map(with_trials).collect()
}

/// Chaos and mutation: one testcase per case.
fn case(phase: RunKind, c: &CaseView<'_>) -> Case {
    let (classname, input) = match &c.mutation {
        Some((kind, _)) => (format!("{phase}.{kind}"), &c.case.prompt),
        None => (format!("{phase}.{}", c.case.scenario), &c.case.prompt),
    };
    let failed: Vec<String> = c
        .checks
        .iter()
        .filter_map(|(label, v)| match v {
            Verdict::Fail(why) => Some(format!("{label}: {why}")),
            Verdict::Pass(_) | Verdict::NotApplicable(_) | Verdict::NotTested(_) => None,
        })
        .collect();
    let mut body = String::new();
    for f in &failed {
        let _ = writeln!(body, "{f}");
    }
    if let Some((_, original)) = &c.mutation {
        let _ = writeln!(body, "made from: {original:?}");
    }
    let _ = match (&c.case.answer, &c.case.error) {
        (Some(a), _) => writeln!(body, "answer: {a}"),
        (None, Some(e)) => writeln!(body, "error: {e}"),
        (None, None) => Ok(()),
    };
    let class = c.case.outcome.as_ref();
    if let Some(o) = class {
        classes::body(&mut body, o, "");
    }
    let outcome = match (c.passed, &c.case.not_judged) {
        (Some(true), _) => Outcome::Passed,
        (Some(false), _) => Outcome::Failure {
            message: format!(
                "{}{}",
                classes::tag(class),
                failed.first().map_or("a check failed", String::as_str)
            ),
            body,
        },
        (None, Some(why)) => Outcome::Error {
            message: format!("not judged: {why}"),
        },
        (None, None) => {
            let why = c
                .checks
                .iter()
                .find_map(|(_, v)| match v {
                    Verdict::NotTested(w) => Some(w.clone()),
                    Verdict::Pass(_) | Verdict::Fail(_) | Verdict::NotApplicable(_) => None,
                })
                .unwrap_or_else(|| "no check could judge this case".into());
            Outcome::Error {
                message: format!("not tested: {why}"),
            }
        }
    };
    // Trials of one input are testcases of their own: named apart, or readers merge them.
    let name = match c.case.trial {
        Some(t) => format!("{} (trial {t})", line(input, NAME_CHARS)),
        None => line(input, NAME_CHARS),
    };
    Case {
        classname,
        name,
        seconds: c.case.latency_ms / 1000.0,
        outcome,
        properties: classes::property(class)
            .into_iter()
            .chain(c.case.usage.iter().flat_map(|u| {
                let p = crate::report::usage::properties(&u.spent);
                p.into_iter().map(|(k, v)| (format!("usage.{k}"), v))
            }))
            .collect(),
        flaky: vec![],
    }
}

/// The phase's own verdict: a failure when it failed, an error when it could not judge.
fn verdict_case(s: &Section<'_>) -> Case {
    let reasons = s.judgement.reasons.join("\n");
    let message = s
        .judgement
        .reasons
        .first()
        .cloned()
        .unwrap_or_else(|| s.judgement.verdict.label().to_string());
    let outcome = match s.judgement.verdict {
        RunVerdict::Pass => Outcome::Passed,
        RunVerdict::Fail => Outcome::Failure {
            message,
            body: reasons,
        },
        RunVerdict::NotTested | RunVerdict::Error => Outcome::Error {
            message: format!(
                "{}, {}: {reasons}",
                s.judgement.verdict.label(),
                s.judgement.verdict.no_score().unwrap_or_default()
            ),
        },
    };
    Case {
        classname: s.phase.to_string(),
        name: match s.judgement.verdict.no_score() {
            Some(_) => "run verdict (no score)".to_string(),
            None => format!(
                "run verdict (score {:.1}, pass mark {})",
                s.score, s.min_score
            ),
        },
        seconds: 0.0,
        outcome,
        properties: vec![],
        flaky: vec![],
    }
}

fn skipped_phase(p: &PhaseLine<'_>) -> Case {
    Case {
        classname: p.name.to_string(),
        name: format!("{} phase", p.name),
        seconds: 0.0,
        outcome: Outcome::Skipped {
            message: p.skipped.unwrap_or_default().to_string(),
        },
        properties: vec![],
        flaky: vec![],
    }
}

/// An attribute value: escaped, on one line, clipped.
fn attr(s: &str) -> String {
    xml_escape(&line(s, BODY_CHARS), Quotes::Both)
}

/// Element text: escaped, clipped.
fn text(s: &str) -> String {
    xml_escape(&clip(&inert(s), BODY_CHARS), Quotes::Both)
}
