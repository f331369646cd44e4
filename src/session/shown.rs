//! A run's report as the terminal shows it: the summary of its kind, the phases of `ci`,
//! or the score alone (`contract score`, `--quiet`).

use crate::run::{
    Report, RunVerdict, chaos_summary, mutation_summary, replay_summary, summary, summary_of,
    verdict_line, verdict_line_of,
};

/// How a run's end is shown: `--quiet` (the verdict line only) and `--json` (the report on
/// stdout instead of the summary).
#[derive(Debug, Clone, Copy, Default)]
pub struct Show {
    pub quiet: bool,
    pub json: bool,
    /// Only the score on stdout (`contract score`, a CI gate).
    pub score_only: bool,
}

impl Show {
    /// `contract score`: the score alone.
    pub const SCORE_ONLY: Show = Show {
        quiet: true,
        json: false,
        score_only: true,
    };

    /// The whole summary: neither `--quiet`, `--json` nor the score alone.
    pub fn summary(self) -> bool {
        !self.quiet && !self.json && !self.score_only
    }
}

/// Colours only on a terminal.
fn color() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

/// The report as `show` prints it (not `--json`).
pub fn shown(report: &Report, show: Show) -> String {
    let (verdict, score) = (report.verdict(), report.score());
    // A run that tested nothing, or could not judge, has no score to print: a gate that
    // parses the number must not read 100 from it.
    let scored = matches!(verdict, RunVerdict::Pass | RunVerdict::Fail);
    match report {
        Report::Contract(r) if show.score_only => {
            // The reasons on stderr when it is not a pass: stdout is the score alone.
            if !verdict.passed() {
                eprint!("{}", verdict_line(score, r.min_score, &r.judgement));
            }
            match scored {
                true => format!("{score:.1}\n"),
                false => format!("{}\n", verdict.label()),
            }
        }
        _ if show.quiet || show.score_only => {
            let label = report_label(report);
            match scored {
                true => format!("{label} {}: {score:.1}/100\n", verdict.label()),
                false => format!("{label} {}\n", verdict.label()),
            }
        }
        Report::Contract(r) => summary(r, color()),
        Report::Chaos(r) => chaos_summary(r, None),
        Report::Mutation(r) => mutation_summary(r, None),
        Report::Replay(r) => replay_summary(r),
        Report::Ci(r) => ci_summary(r),
    }
}

fn report_label(report: &Report) -> &'static str {
    match report {
        Report::Contract(_) => "contract",
        Report::Chaos(_) => "chaos",
        Report::Mutation(_) => "mutation",
        Report::Replay(_) => "replay",
        Report::Ci(_) => "ci",
    }
}

/// `ci`'s summary: each phase's, then the phases' scores and the overall verdict.
fn ci_summary(report: &crate::run::CiReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    // The phases carry no trials measure of their own: the run's is theirs.
    let measure = report.run.as_ref().and_then(|i| i.trials.as_ref());
    if let Some(m) = &report.mutation {
        let _ = writeln!(out, "{}", mutation_summary(m, measure));
    }
    if let Some(c) = &report.contract {
        out.push_str(&summary_of(c, color(), measure));
    }
    if let Some(c) = &report.chaos {
        let _ = write!(out, "\n{}", chaos_summary(c, measure));
    }
    if let Some(r) = &report.replay {
        let _ = write!(out, "\n{}", replay_summary(r));
    }
    out.push_str("\nphases:\n");
    for p in &report.phases {
        let _ = match (p.score, &p.skipped, p.verdict) {
            // Its score measures nothing of the agent, and the overall leaves it out.
            (Some(_), _, Some(RunVerdict::NotTested)) => writeln!(
                out,
                "  {:<9} not tested: left out of the overall  (weight {})",
                p.name, p.weight
            ),
            // An error judges nothing of the agent: no number, and the overall is none.
            (Some(_), _, Some(RunVerdict::Error)) => writeln!(
                out,
                "  {:<9} error, no score  (weight {})",
                p.name, p.weight
            ),
            (Some(s), _, v) => writeln!(
                out,
                "  {:<9} {s:>5.1}  {}  (weight {})",
                p.name,
                v.map_or("", RunVerdict::label),
                p.weight
            ),
            (None, Some(why), _) => writeln!(out, "  {:<9} skipped: {why}", p.name),
            (None, None, _) => writeln!(out, "  {:<9} -", p.name),
        };
    }
    out.push_str(&verdict_line_of(
        "overall",
        report.overall,
        report.min_score,
        &report.judgement,
    ));
    out
}
