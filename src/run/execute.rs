//! One run of a given kind, as the CLI and the daemon's runs API start it: what the config
//! must hold for that kind (checked before anything starts: the CLI's exit 2, the API's
//! 400), and the phases it runs. Where the report goes and how it is shown belong to the
//! caller.

use serde::{Deserialize, Serialize};

use super::{
    ChaosReport, CiReport, ContractReport, MutationReport, ReplayReport, RunContext, RunError,
    RunVerdict, Scored, run_chaos, run_contract, run_mutation, run_replay,
};
use crate::chaos::spec::CompiledChaos;
use crate::config::Config;

/// What a run does. Its list (`all`) and names are derived, serde's (a test checks).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RunKind {
    /// The contract matrix (`contract run`).
    Contract,
    /// Golden prompts under one chaos (`run --chaos-only`).
    Chaos,
    /// Mutated prompts, optionally under chaos (`run`, `run --chaos`).
    Mutation,
    /// Recorded incidents replayed (`replay run`).
    Replay,
    /// Every phase once, one score (`ci`).
    Ci,
}

impl RunKind {
    /// Every kind, in declaration order.
    pub fn all() -> RunKindIter {
        <RunKind as strum::IntoEnumIterator>::iter()
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The report's default file name.
    pub fn report_file(self) -> String {
        format!("{}.json", self.as_str())
    }
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::str::FromStr for RunKind {
    type Err = String;

    fn from_str(s: &str) -> Result<RunKind, String> {
        RunKind::all().find(|k| k.as_str() == s).ok_or_else(|| {
            let all: Vec<&str> = RunKind::all().map(RunKind::as_str).collect();
            format!("unknown run kind `{s}` (one of {})", all.join(", "))
        })
    }
}

/// A run to make: its kind, and for chaos a built-in profile instead of `chaos:`.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub kind: RunKind,
    /// Mutations under chaos (`run --chaos`); implied by `profile` for mutation runs.
    pub under_chaos: bool,
    pub profile: Option<String>,
}

/// A request checked against its config, ready to execute.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub kind: RunKind,
    /// The chaos to inject (its name and rules), for chaos runs and mutations under chaos.
    chaos: Option<(String, CompiledChaos)>,
    /// `ci`: the phases that cannot run, with the reason.
    skipped: Vec<(RunKind, String)>,
}

/// Checks that `config` can make the run `req` asks for; `RunError::NotRunnable` says why
/// not.
pub fn prepare(config: &Config, req: &RunRequest) -> Result<Prepared, RunError> {
    runnable(config, req).map_err(RunError::NotRunnable)
}

fn runnable(config: &Config, req: &RunRequest) -> Result<Prepared, String> {
    let checks = |what: &str| match config.invariants.is_empty() {
        true => Err(format!(
            "a {what} run needs `invariants:` to check the answers with"
        )),
        false => Ok(()),
    };
    let mut p = Prepared {
        kind: req.kind,
        chaos: None,
        skipped: vec![],
    };
    match req.kind {
        RunKind::Contract if config.contract.is_none() => {
            return Err("a contract run needs a `contract:` section".into());
        }
        RunKind::Contract => {}
        RunKind::Chaos => {
            p.chaos = Some(chaos_to_inject(config, req.profile.as_deref())?);
            checks("chaos")?;
        }
        RunKind::Mutation => {
            if req.under_chaos || req.profile.is_some() {
                p.chaos = Some(chaos_to_inject(config, req.profile.as_deref())?);
            }
            checks("mutation")?;
        }
        RunKind::Replay if config.replays.sessions.is_empty() => {
            return Err(NO_SESSIONS.into());
        }
        RunKind::Replay => {}
        RunKind::Ci => p.skipped = super::ci::ci_skips(config),
    }
    Ok(p)
}

/// The chaos a run injects: `profile`, else the config's `chaos:` section (named `chaos`).
pub(super) fn chaos_to_inject(
    config: &Config,
    profile: Option<&str>,
) -> Result<(String, CompiledChaos), String> {
    let (name, chaos) = match profile {
        Some(p) => (
            p.to_string(),
            crate::chaos::profiles::load(p).map_err(|e| e.to_string())?,
        ),
        None => ("chaos".to_string(), config.chaos.clone()),
    };
    if chaos.is_empty() {
        return Err(
            "nothing to inject: add a `chaos:` section or name a profile (--chaos-profile)".into(),
        );
    }
    Ok((name, chaos))
}

/// Why a replay run cannot start.
const NO_SESSIONS: &str = "a replay run needs sessions: add `replays.sessions` or name session files (replay run FILE|DIR)";

/// A finished run's report, of its kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Report {
    Contract(ContractReport),
    Chaos(ChaosReport),
    Mutation(MutationReport),
    Replay(ReplayReport),
    /// Boxed: it holds the others.
    Ci(Box<CiReport>),
}

impl Report {
    /// The kind of run that wrote it.
    pub fn kind(&self) -> RunKind {
        match self {
            Report::Contract(_) => RunKind::Contract,
            Report::Chaos(_) => RunKind::Chaos,
            Report::Mutation(_) => RunKind::Mutation,
            Report::Replay(_) => RunKind::Replay,
            Report::Ci(_) => RunKind::Ci,
        }
    }

    pub fn verdict(&self) -> RunVerdict {
        match self {
            Report::Contract(r) => r.judgement.verdict,
            Report::Chaos(r) => r.judgement.verdict,
            Report::Mutation(r) => r.judgement.verdict,
            Report::Replay(r) => r.judgement.verdict,
            Report::Ci(r) => r.judgement.verdict,
        }
    }

    /// The run's score, 0–100 (`ci`: the overall).
    pub fn score(&self) -> f64 {
        match self {
            Report::Contract(r) => r.score.value,
            Report::Chaos(r) => r.score,
            Report::Mutation(r) => r.score,
            Report::Replay(r) => r.score,
            Report::Ci(r) => r.overall,
        }
    }

    pub fn judgement(&self) -> &super::Judgement {
        match self {
            Report::Contract(r) => &r.judgement,
            Report::Chaos(r) => &r.judgement,
            Report::Mutation(r) => &r.judgement,
            Report::Replay(r) => &r.judgement,
            Report::Ci(r) => &r.judgement,
        }
    }

    /// The score of each phase that ran, by phase name.
    pub fn phase_scores(&self) -> Vec<(RunKind, f64)> {
        match self {
            Report::Contract(r) => vec![(RunKind::Contract, r.score.value)],
            Report::Chaos(r) => vec![(RunKind::Chaos, r.score)],
            Report::Mutation(r) => vec![(RunKind::Mutation, r.score)],
            Report::Replay(r) => vec![(RunKind::Replay, r.score)],
            Report::Ci(r) => r
                .phases
                .iter()
                .filter_map(|p| Some((p.name, p.score?)))
                .collect(),
        }
    }

    /// The contract matrix's cells (of a contract run, or of `ci`'s contract phase).
    pub fn cells(&self) -> &[super::CellResult] {
        match self {
            Report::Contract(r) => &r.cells,
            Report::Ci(r) => r.contract.as_ref().map_or(&[], |c| c.cells.as_slice()),
            Report::Chaos(_) | Report::Mutation(_) | Report::Replay(_) => &[],
        }
    }

    /// Every score the run stores, by name: each phase's, and `overall` for `ci`.
    pub fn scores(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(Scored, f64)> = self
            .phase_scores()
            .into_iter()
            .map(|(p, s)| (Scored::Phase(p), s))
            .collect();
        if let Report::Ci(r) = self {
            out.push((Scored::Overall, r.overall));
        }
        out.into_iter().map(|(k, s)| (k.to_string(), s)).collect()
    }

    /// When and by which flakestorm it ran.
    pub fn info_mut(&mut self) -> &mut Option<super::RunInfo> {
        match self {
            Report::Contract(r) => &mut r.run,
            Report::Chaos(r) => &mut r.run,
            Report::Mutation(r) => &mut r.run,
            Report::Replay(r) => &mut r.run,
            Report::Ci(r) => &mut r.run,
        }
    }

    /// The digest of the config file it ran with (`config::Loaded::digest`).
    pub fn config_digest(&self) -> Option<&str> {
        match self {
            Report::Contract(r) => r.config_digest.as_deref(),
            Report::Chaos(r) => r.config_digest.as_deref(),
            Report::Mutation(r) => r.config_digest.as_deref(),
            Report::Replay(r) => r.config_digest.as_deref(),
            Report::Ci(r) => r.config_digest.as_deref(),
        }
    }

    /// When and by which flakestorm it ran (reports older than this field: none).
    pub fn info(&self) -> Option<&super::RunInfo> {
        match self {
            Report::Contract(r) => r.run.as_ref(),
            Report::Chaos(r) => r.run.as_ref(),
            Report::Mutation(r) => r.run.as_ref(),
            Report::Replay(r) => r.run.as_ref(),
            Report::Ci(r) => r.run.as_ref(),
        }
    }

    /// Where warnings about the run as a whole go (`ci`: its contract's, else its first
    /// phase's).
    pub fn warnings_mut(&mut self) -> Option<&mut Vec<String>> {
        match self {
            Report::Contract(r) => Some(&mut r.warnings),
            Report::Chaos(r) => Some(&mut r.warnings),
            Report::Mutation(r) => Some(&mut r.warnings),
            Report::Replay(r) => Some(&mut r.warnings),
            Report::Ci(r) => match (&mut r.contract, &mut r.mutation, &mut r.chaos) {
                (Some(c), _, _) => Some(&mut c.warnings),
                (None, Some(m), _) => Some(&mut m.warnings),
                (None, None, Some(c)) => Some(&mut c.warnings),
                (None, None, None) => r.replay.as_mut().map(|r| &mut r.warnings),
            },
        }
    }
}

/// Runs `p` against the agent in `ctx`.
pub async fn execute(ctx: &RunContext, config: &Config, p: &Prepared) -> Result<Report, RunError> {
    let started_at_ms = crate::exchange::now_unix_ms();
    let clock = tokio::time::Instant::now();
    let mut report = run_kind(ctx, config, p).await?;
    *report.info_mut() = Some(super::RunInfo {
        flakestorm: env!("CARGO_PKG_VERSION").into(),
        started_at_ms,
        duration_ms: clock.elapsed().as_secs_f64() * 1000.0,
        // A command may carry expanded secrets: a script agent is named by its kind.
        agent: Some(match ctx.agent.target().script {
            true => "agent.command (a script, run once per case)".into(),
            false => crate::agent::shown_url(ctx.agent.endpoint()),
        }),
        trials: super::TrialsInfo::of(&ctx.scoring.trials),
        merged_shards: None,
    });
    Ok(report)
}

async fn run_kind(ctx: &RunContext, config: &Config, p: &Prepared) -> Result<Report, RunError> {
    let golden = &config.golden_prompts;
    if p.kind != RunKind::Ci {
        ctx.phase(p.kind);
    }
    let chaos = p.chaos.as_ref().map(|(n, c)| (n.as_str(), c));
    Ok(match p.kind {
        RunKind::Contract => match &config.contract {
            Some(c) => Report::Contract(run_contract(ctx, c, golden).await?),
            None => return Err(RunError::NotRunnable("no `contract:` section".into())),
        },
        RunKind::Chaos => {
            let Some((name, rules)) = chaos else {
                return Err(RunError::NotRunnable("no chaos to inject".into()));
            };
            Report::Chaos(run_chaos(ctx, name, rules, golden, &config.invariants).await?)
        }
        RunKind::Mutation => Report::Mutation(run_mutation(ctx, chaos, config).await?),
        RunKind::Replay => {
            let sessions = &config.replays.sessions;
            Report::Replay(run_replay(ctx, config, sessions).await)
        }
        RunKind::Ci => Report::Ci(Box::new(super::ci::run(ctx, config, &p.skipped).await?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> Config {
        let base = std::path::Path::new(".");
        let (o, v) = (Default::default(), Default::default());
        crate::config::load_text(yaml, "test", base, &o, &v)
            .expect("a valid config")
            .config
    }

    #[test]
    fn kinds_round_trip() {
        for k in RunKind::all() {
            assert_eq!(k.as_str().parse(), Ok(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(
            "contracts".parse::<RunKind>(),
            Err(
                "unknown run kind `contracts` (one of contract, chaos, mutation, replay, ci)"
                    .into()
            )
        );
    }

    #[test]
    fn a_run_the_config_cannot_make_says_what_is_missing() {
        let bare = config("golden_prompts: [hi]\n");
        let req = |kind| RunRequest {
            kind,
            under_chaos: false,
            profile: None,
        };
        let why = |kind| prepare(&bare, &req(kind)).unwrap_err().to_string();
        assert_eq!(
            why(RunKind::Contract),
            "a contract run needs a `contract:` section"
        );
        assert!(why(RunKind::Chaos).starts_with("nothing to inject"));
        assert_eq!(
            why(RunKind::Mutation),
            "a mutation run needs `invariants:` to check the answers with"
        );
        assert!(why(RunKind::Replay).starts_with("a replay run needs sessions"));
        let ci = prepare(&bare, &req(RunKind::Ci)).unwrap();
        let phases: Vec<&str> = ci.skipped.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(phases, ["replay", "mutation", "contract", "chaos"]);
        assert_eq!(ci.skipped[0].1, "no `replays.sessions`");
        let profile = RunRequest {
            profile: Some("nope".into()),
            ..req(RunKind::Chaos)
        };
        let why = prepare(&bare, &profile).unwrap_err().to_string();
        assert!(why.contains("nope"));
    }
}
