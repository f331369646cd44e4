//! The run's verdict, the product. A run that could not test what it claims says so and
//! does not pass: environment errors in most cases, or an `agent.response_path` that none
//! of the answers has (the config's error), make it an `error`; no traffic at all
//! while tools or LLMs are declared makes it `not_tested` whatever else happened; a case
//! that could not be judged, a fault that never reached the agent's traffic, or a scenario
//! in which nothing crossed the proxy make it `not_tested` unless the agent failed; a
//! failed critical cell, a score below the pass mark, or an agent that answered fewer than
//! half of its judged cases make it `fail`. Exit codes: 0 pass, 1 fail, 2 not tested or
//! error (docs/invariants.md, "Verdicts").

use serde::{Deserialize, Serialize};

use super::cases::CaseResult;
use super::coverage::Coverage;
use crate::exchange::{ErrorKind, Exchange, Outcome, Target};
use crate::journal::Journal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RunVerdict {
    Pass,
    /// The agent failed what was tested.
    Fail,
    /// The run could not test what it claims (chaos that never fired, no traffic).
    NotTested,
    /// Most cases could not be judged (flakestorm's or the environment's errors), or the
    /// config reads the agent's answers where none is (`agent.response_path`).
    Error,
}

impl RunVerdict {
    pub fn exit_code(self) -> u8 {
        match self {
            RunVerdict::Pass => 0,
            RunVerdict::Fail => 1,
            RunVerdict::NotTested | RunVerdict::Error => 2,
        }
    }

    /// Its name as serde writes it (`pass`, `not_tested`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn label(self) -> &'static str {
        match self {
            RunVerdict::Pass => "PASS",
            RunVerdict::Fail => "FAIL",
            RunVerdict::NotTested => "NOT TESTED",
            RunVerdict::Error => "ERROR",
        }
    }

    pub fn passed(self) -> bool {
        self == RunVerdict::Pass
    }

    /// Whether the agent was judged: a pass or a fail (not tested and error judge nothing).
    pub fn judged(self) -> bool {
        matches!(self, RunVerdict::Pass | RunVerdict::Fail)
    }

    /// Why a run with this verdict shows no score, when it shows none (not tested, error):
    /// its number measures nothing of the agent, and a gate parsing it must not read 100.
    /// Every format and the terminal say it in these words.
    pub fn no_score(self) -> Option<&'static str> {
        match self {
            RunVerdict::Pass | RunVerdict::Fail => None,
            RunVerdict::NotTested => Some(
                "no score: the run did not test all it claims (the reasons say what), so no \
                 number would measure the agent",
            ),
            RunVerdict::Error => Some(
                "no score: the run could not judge the agent (flakestorm's, the environment's \
                 or the config's error, the reasons say which)",
            ),
        }
    }
}

/// A verdict and, unless it is a pass, why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: RunVerdict,
    #[serde(rename = "verdict_reasons")]
    pub reasons: Vec<String>,
}

/// What a run's verdict is decided from.
pub(super) struct Evidence<'a> {
    pub cases: &'a [CaseResult],
    pub coverage: &'a [Coverage],
    /// Exchanges the proxy recorded during the whole run, attributed or not.
    pub exchanges: usize,
    /// Of those, the agent's own work (`agent_traffic`): an exporter's uploads alone do
    /// not show that the agent's calls crossed the proxy.
    pub agent_exchanges: usize,
    /// `tools:` or `llm:` entries exist: traffic must cross the proxy.
    pub declares_traffic: bool,
    /// Why the agent's calls would not cross the proxy, for the way it runs
    /// (`Declared::bypass`).
    pub bypass: String,
    /// `agent.capture: netns`: nothing the agent sends over TCP bypasses the proxy.
    pub netns: bool,
    pub score: f64,
    pub min_score: f64,
    /// The failed critical cells, as `` `invariant` under `scenario` ``.
    pub failed_critical: Vec<String>,
    /// Something was judged (a cell passed or failed; a prompt was judged).
    pub judged_anything: bool,
    /// Why `agent.response_path` is a config error: none of the run's answers had it
    /// (`Agent::response_path_missing`).
    pub response_path: Option<String>,
}

impl<'a> Evidence<'a> {
    /// What `ctx` and `seen` say of a run of `cases` with `coverage`; its score, failed
    /// critical cells and whether it judged anything are the caller's to set.
    pub(super) fn of(
        ctx: &crate::run::Scoring,
        seen: &Seen,
        cases: &'a [CaseResult],
        coverage: &'a [Coverage],
    ) -> Evidence<'a> {
        Evidence {
            cases,
            coverage,
            exchanges: seen.exchanges,
            agent_exchanges: seen.agent_exchanges,
            declares_traffic: ctx.declared.any(),
            bypass: ctx.declared.bypass(),
            netns: ctx.netns,
            score: 0.0,
            min_score: ctx.min_score,
            failed_critical: vec![],
            judged_anything: false,
            response_path: seen.response_path.clone(),
        }
    }
}

/// What the journal and the agent saw during a run's cases, besides their outcomes: of a
/// run, or summed over the shards a merge makes one run of.
#[derive(Debug, Clone, Default)]
pub(super) struct Seen {
    /// Exchanges recorded during the run, attributed or not, and the agent's own.
    pub exchanges: usize,
    pub agent_exchanges: usize,
    /// `Agent::response_path_missing` over the run's answers.
    pub response_path: Option<String>,
    /// Answers read.
    pub answers: usize,
}

impl Seen {
    /// What `ctx`'s journal and agent saw since `mark` and `answers`.
    pub fn since(
        ctx: &super::RunContext,
        mark: JournalMark,
        answers: crate::agent::AnswersRead,
    ) -> Seen {
        Seen {
            exchanges: (ctx.journal.peek_next_id() - mark.first) as usize,
            agent_exchanges: agent_traffic(&ctx.journal, mark),
            response_path: ctx.agent.response_path_missing(answers),
            answers: (ctx.agent.answers_read().read - answers.read) as usize,
        }
    }
}

/// Where the journal stood when a run began: the next exchange id and how many exchanges
/// it had dropped.
#[derive(Debug, Clone, Copy)]
pub(super) struct JournalMark {
    pub first: u64,
    evicted: u64,
}

impl JournalMark {
    pub fn now(journal: &Journal) -> JournalMark {
        JournalMark {
            first: journal.peek_next_id(),
            evicted: journal.evicted(),
        }
    }
}

/// How many of the exchanges recorded since `mark` were the agent's own work: calls to its
/// tools, LLMs and embeddings, or requests the proxy refused it (untrusted CA, proxy auth).
/// An exporter's uploads crossing the proxy do not show that the agent's calls did.
/// Exchanges the bounded journal dropped since `mark` are counted as the agent's; ids
/// handed out to requests still in flight (an exporter's background upload) are not.
pub(super) fn agent_traffic(journal: &Journal, mark: JournalMark) -> usize {
    let last = journal.peek_next_id();
    if last == mark.first {
        return 0;
    }
    let kept = journal.slice(mark.first, last - 1);
    let unaccounted = (last - mark.first) as usize - kept.len();
    let evicted = (journal.evicted() - mark.evicted) as usize;
    let dropped = unaccounted.min(evicted);
    let refused = |e: &Exchange| {
        matches!(&e.outcome, Outcome::Error { error, .. }
            if matches!(error.kind, ErrorKind::ClientTls | ErrorKind::ProxyAuthRequired))
    };
    dropped
        + kept
            .iter()
            .filter(|e| !matches!(e.target, Target::Other) || refused(e))
            .count()
}

pub(super) fn decide(e: &Evidence) -> Judgement {
    // The config's error: every case's "no answer" is flakestorm reading the wrong place.
    if let Some(why) = &e.response_path {
        return Judgement {
            verdict: RunVerdict::Error,
            reasons: vec![why.clone()],
        };
    }
    let errors = errors(e.cases);
    if !errors.is_empty() {
        return Judgement {
            verdict: RunVerdict::Error,
            reasons: errors,
        };
    }
    let mut untested = untested(e);
    // Nothing crossed the proxy: the run tested none of the chaos and traffic it claims, so
    // what the agent failed is no verdict on it either (listed after the cause).
    if silent(e) {
        let mut reasons = vec![untested.remove(0)];
        let not_held = |f: String| format!("not held against the agent, untested: {f}");
        reasons.extend(failures(e).into_iter().map(not_held));
        reasons.extend(untested);
        return Judgement {
            verdict: RunVerdict::NotTested,
            reasons,
        };
    }
    let failed = failures(e);
    let (verdict, mut reasons) = match (failed.is_empty(), untested.is_empty()) {
        (false, _) => (RunVerdict::Fail, failed),
        (true, false) => (RunVerdict::NotTested, vec![]),
        (true, true) => (RunVerdict::Pass, vec![]),
    };
    reasons.extend(untested);
    Judgement { verdict, reasons }
}

/// No request at all crossed the proxy while `tools:`/`llm:` are declared, or while the
/// run's chaos waited for one.
fn silent(e: &Evidence) -> bool {
    e.exchanges == 0 && (e.declares_traffic || unfired(e) > 0)
}

fn unfired(e: &Evidence) -> usize {
    let rules = e.coverage.iter().flat_map(|c| &c.rules);
    rules.filter(|r| r.why_not.is_some()).count()
}

/// What the agent failed of what was judged.
fn failures(e: &Evidence) -> Vec<String> {
    let mut failed = vec![];
    if e.judged_anything {
        for cell in &e.failed_critical {
            failed.push(format!("critical check {cell} failed"));
        }
        if e.score < e.min_score {
            failed.push(format!(
                "score {:.1} is below the pass mark {}",
                e.score, e.min_score
            ));
        }
        failed.extend(unanswered(e.cases));
    }
    failed
}

/// More than half of the cases not judged: the run measured its environment, not the agent.
fn errors(cases: &[CaseResult]) -> Vec<String> {
    match not_judged(cases) {
        Some((n, why)) if n * 2 > cases.len() => vec![why],
        _ => vec![],
    }
}

/// How many cases could not be judged, and a line saying so with the first reason.
fn not_judged(cases: &[CaseResult]) -> Option<(usize, String)> {
    let not: Vec<&CaseResult> = cases.iter().filter(|c| c.not_judged.is_some()).collect();
    let first = not.first()?.not_judged.as_deref().unwrap_or_default();
    let line = format!(
        "{} of {} cases could not be judged; the first: {first}",
        not.len(),
        cases.len()
    );
    Some((not.len(), line))
}

/// Chaos that never reached the agent, traffic that never crossed the proxy (in the whole
/// run: first, as `silent` expects; or in a scenario without chaos), nothing judged.
fn untested(e: &Evidence) -> Vec<String> {
    let mut out = vec![];
    let exchanges = e.exchanges;
    let unfired = unfired(e);
    if silent(e) && e.netns {
        out.push(
            "no request crossed the proxy during the run, though agent.capture: netns brings \
             every TCP connection of the agent to it: the agent made no HTTP(S) call \
             flakestorm could read (connections over proxy.max_connections are refused, other \
             protocols are relayed untouched; flakestorm's log says which)"
                .into(),
        );
    } else if silent(e) {
        out.push(format!(
            "no request crossed the proxy during the run: {}",
            e.bypass
        ));
    } else if e.agent_exchanges == 0 && e.declares_traffic && unfired == 0 {
        // With unfired rules, their lines below say what the proxy saw instead.
        out.push(format!(
            "no call to the agent's tools or LLMs crossed the proxy during the run, only \
             {exchanges} other request(s) (an exporter's?): the agent's own calls bypass \
             flakestorm's proxy, or the tools:/llm: globs do not match them: {}",
            e.bypass
        ));
    }
    for c in e.coverage {
        // A scenario with rules says it for each rule, below.
        if let Some(why) = c.silent.as_deref().filter(|_| exchanges > 0)
            && c.rules.is_empty()
            && e.declares_traffic
        {
            out.push(format!("scenario `{}`: {why}", c.scenario));
        }
        for r in &c.rules {
            if let Some(why) = r.why_not.as_deref().filter(|_| exchanges > 0) {
                out.push(format!(
                    "scenario `{}`: rule `{}` ({}) never reached the agent's traffic: {why}",
                    c.scenario, r.stats.rule, r.stats.mode
                ));
            }
        }
    }
    // Fewer than half (more is an error): what they would have shown is unknown.
    out.extend(not_judged(e.cases).map(|(_, why)| why));
    out.extend(super::outcome::untested(e.cases));
    if !e.judged_anything {
        out.push("nothing could be judged (see the cells' and cases' reasons)".into());
    }
    out
}

/// An agent that answered fewer than half of its judged cases failed, whatever the score.
fn unanswered(cases: &[CaseResult]) -> Option<String> {
    let judged: Vec<&CaseResult> = cases.iter().filter(|c| c.not_judged.is_none()).collect();
    let silent: Vec<&&CaseResult> = judged.iter().filter(|c| c.answer.is_none()).collect();
    (silent.len() * 2 > judged.len()).then(|| {
        let why = silent[0].error.as_deref().unwrap_or("no answer");
        format!(
            "the agent answered {} of {} cases; the first without an answer: {why}",
            judged.len() - silent.len(),
            judged.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::tests_support::exchange;
    use crate::journal::Redactor;
    use crate::run::Declared;

    fn record(j: &Journal, target: Target) {
        let id = j.next_id();
        j.record(exchange(target, "http://x/").id(id).build());
    }

    #[test]
    fn requests_still_in_flight_are_not_the_agents_traffic() {
        let j = Journal::new(10, Redactor::new(&[], &[]));
        let mark = JournalMark::now(&j);
        record(&j, Target::Other);
        // An exporter's upload that has its id but has not finished yet.
        let _in_flight = j.next_id();
        assert_eq!(agent_traffic(&j, mark), 0);
        record(
            &j,
            Target::Tool {
                name: "search".into(),
            },
        );
        assert_eq!(agent_traffic(&j, mark), 1);
    }

    fn evidence<'a>(cases: &'a [CaseResult], coverage: &'a [Coverage]) -> Evidence<'a> {
        Evidence {
            cases,
            coverage,
            exchanges: 0,
            agent_exchanges: 0,
            declares_traffic: true,
            bypass: Declared::default().bypass(),
            netns: false,
            score: 0.0,
            min_score: 70.0,
            failed_critical: vec!["`calls-weather` under `no-chaos`".into()],
            judged_anything: true,
            response_path: None,
        }
    }

    fn scenario(name: &str, exchanges: usize, silent: Option<&str>) -> Coverage {
        Coverage {
            scenario: name.into(),
            exchanges,
            outside_cases: 0,
            cases: 1,
            judged: 1,
            rules: vec![],
            not_tested: None,
            silent: silent.map(Into::into),
            outcomes: Default::default(),
        }
    }

    /// Node's fetch ignores HTTPS_PROXY: nothing crosses the proxy, and what failed (a
    /// critical check, the score) is listed after the cause, not held against the agent.
    #[test]
    fn a_run_with_no_traffic_is_not_tested_whatever_failed_and_says_why_first() {
        let cases = [CaseResult::for_test("weather in Paris?", Some("sunny"))];
        let coverage = [scenario(
            "no-chaos",
            0,
            Some("no request crossed the proxy"),
        )];
        let j = decide(&evidence(&cases, &coverage));
        assert_eq!(j.verdict, RunVerdict::NotTested, "{j:?}");
        assert!(
            j.reasons[0].starts_with(
                "no request crossed the proxy during the run: the agent is not using \
                 flakestorm's proxy"
            ),
            "{:?}",
            j.reasons
        );
        assert_eq!(
            j.reasons[1],
            "not held against the agent, untested: critical check `calls-weather` under \
             `no-chaos` failed"
        );
        assert!(!j.reasons[0].contains("Node"), "{:?}", j.reasons);
        // An agent.command that runs Node: the reason names its fix.
        let node = Declared {
            started: crate::run::Started {
                command: true,
                stack: crate::run::Stack::Node,
                ..Default::default()
            },
            ..Declared::default()
        };
        let j = decide(&Evidence {
            bypass: node.bypass(),
            netns: false,
            ..evidence(&cases, &coverage)
        });
        assert!(
            j.reasons[0].contains("the agent runs Node")
                && j.reasons[0].contains("NODE_USE_ENV_PROXY=1")
                && j.reasons[0].contains("EnvHttpProxyAgent"),
            "{:?}",
            j.reasons
        );
        // With traffic, the same failure is the agent's.
        let heard = [scenario("no-chaos", 3, None)];
        let j = decide(&Evidence {
            exchanges: 3,
            agent_exchanges: 3,
            ..evidence(&cases, &heard)
        });
        assert_eq!(j.verdict, RunVerdict::Fail, "{j:?}");
    }

    /// One scenario without chaos in which nothing crossed the proxy, while others had
    /// traffic: its traffic checks were not tested, and the run says so.
    #[test]
    fn a_silent_scenario_keeps_a_run_from_passing() {
        let cases = [CaseResult::for_test("q", Some("a"))];
        let why = "the agent sent nothing through the proxy in this scenario but did earlier";
        let coverage = [scenario("first", 2, None), scenario("again", 0, Some(why))];
        let j = decide(&Evidence {
            exchanges: 2,
            agent_exchanges: 2,
            score: 100.0,
            failed_critical: vec![],
            ..evidence(&cases, &coverage)
        });
        assert_eq!(j.verdict, RunVerdict::NotTested, "{j:?}");
        assert_eq!(j.reasons, [format!("scenario `again`: {why}")]);
    }

    #[test]
    fn exchanges_the_journal_dropped_count_as_the_agents() {
        let j = Journal::new(1, Redactor::new(&[], &[]));
        let mark = JournalMark::now(&j);
        record(
            &j,
            Target::Tool {
                name: "search".into(),
            },
        );
        record(&j, Target::Other);
        assert_eq!(agent_traffic(&j, mark), 1, "the dropped tool call");
    }

    /// A run whose cells passed is not tested when a case could not be classified (its
    /// outcome check not tested) or made a call around the proxy: it tested less than it
    /// claims, and says which case and why.
    #[test]
    fn an_unclassified_or_bypassed_case_leaves_a_passing_run_not_tested() {
        use crate::checks::spec::OutcomeClass;
        use crate::run::outcome::CaseOutcome;
        let with = |class, bypassed, reason: &str| CaseResult {
            outcome: Some(CaseOutcome {
                class,
                reason: reason.into(),
                bypassed,
                evidence: vec![],
            }),
            checks: vec![crate::run::CaseCheck {
                invariant: "honest".into(),
                verdict: crate::checks::Verdict::NotTested(format!("undecided: {reason}")),
            }],
            ..CaseResult::for_test("q", Some("a"))
        };
        let passing = |cases| Evidence {
            exchanges: 3,
            agent_exchanges: 3,
            score: 100.0,
            failed_critical: vec![],
            ..evidence(cases, &[])
        };
        let fine = [CaseResult::for_test("q", Some("a"))];
        assert_eq!(decide(&passing(&fine)).verdict, RunVerdict::Pass);
        let open = [with(
            OutcomeClass::Undecided,
            false,
            "a response is compressed (gzip)",
        )];
        let j = decide(&passing(&open));
        assert_eq!(j.verdict, RunVerdict::NotTested);
        assert!(j.reasons[0].contains("could not be classified") && j.reasons[0].contains("gzip"));
        let around = [with(OutcomeClass::NotExercised, true, "asked for `t`")];
        let j = decide(&passing(&around));
        assert_eq!(j.verdict, RunVerdict::NotTested);
        assert!(
            j.reasons[0].starts_with("1 case(s) made a call around the proxy"),
            "{j:?}"
        );
    }
}
