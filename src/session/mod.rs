//! One run's life, above the run engine (`run`), the store and the report writers, the same
//! for the CLI's run commands, the daemon's submitted runs and the demo: the proxy it runs
//! behind (handed in by whoever started it: the serving daemon's, or a daemon the CLI or
//! the demo started for this run), the embeddings endpoint tried, the agent started and
//! answering, the `RunContext`, the run store's recorder and the progress hooks, the
//! journal's bodies kept for tapes, and the end: the agent stopped (a crash becomes a
//! warning of the report), the report and its tapes written (`write`), the run recorded,
//! and what its user is told (`told`). Callers decide only what is theirs: where the
//! report goes, and (the daemon) turns and cancelling.

mod ending;
mod shown;
mod spans;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use ending::{Ended, Told, write};
pub use shown::{Show, shown};

use crate::agent::{Launched, Pool, Process, ProxyAt, launch};
use crate::chaos::Engine;
use crate::config::{Loaded, Tapes};
use crate::journal::{Holding, Journal, KeepBodies, OpenLane};
use crate::run::{Embedder, Prepared, Progress, Report, RunContext, RunError, execute};
use crate::store::{Recorder, RunKind, RunStatus, Store, StoreError};

/// The proxy a run's agent talks through, as the run sees it.
#[derive(Clone)]
pub struct Proxy {
    pub engine: Engine,
    pub journal: Journal,
    pub addr: SocketAddr,
    /// The CA certificate the agent must trust.
    pub ca_cert: PathBuf,
    pub store: Store,
    /// Opens a lane of this proxy for each instance of an agent pool.
    pub lanes: OpenLane,
    /// Where `flakestorm wrap` bridges stdio MCP servers through this proxy.
    pub wrap_dir: Option<PathBuf>,
}

/// Called once the proxy is up, before the agent is readied (the demo serves its
/// in-process agent there).
pub type BeforeAgent = Box<dyn FnOnce(&Proxy) -> Result<(), String> + Send>;

/// How a caller wants its session.
pub struct Options {
    /// Where `agent.command`'s output goes.
    pub agent_log: PathBuf,
    /// The pass mark (`--min-score`, else `scoring.min_score`).
    pub min_score: f64,
    /// The run's seed; else the engine's.
    pub seed: Option<u64>,
    /// `--trial`: run only this trial (1-based) of each case.
    pub trial: Option<u32>,
    /// `--shard K/N`: run only this shard's cases.
    pub shard: Option<crate::run::Shard>,
    /// Told as the run goes (a progress display, the daemon's events).
    pub progress: Option<Progress>,
    pub before_agent: Option<BeforeAgent>,
    /// How many cases the run makes, when known (`run::Prepared::cases`): an agent pool
    /// starts no more instances than that.
    pub cases: Option<usize>,
}

/// Why a session could not start: the problem in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

impl From<crate::agent::LaunchError> for StartError {
    fn from(e: crate::agent::LaunchError) -> StartError {
        StartError(e.to_string())
    }
}

/// A run, from its proxy and agent to its recorded end.
pub struct Session {
    proxy: Proxy,
    process: Option<Process>,
    pool: Option<std::sync::Arc<Pool>>,
    loaded: Loaded,
    recorder: Option<Recorder>,
    _bodies: Option<KeepBodies>,
    /// The journal keeps this run's exchanges past its byte budget until the run ends.
    _holding: Holding,
    /// The run's OTLP spans, when exported: its cases' exchanges are held until its end.
    spans: Option<crate::otel::RunScope>,
    /// Why its `telemetry.otlp` is not the one in force (a daemon's), for its report.
    telemetry_note: Option<String>,
    pub ctx: RunContext,
}

impl Session {
    /// Starts a session for `loaded` behind `proxy`: the embeddings endpoint tried, then
    /// the agent readied through the proxy. Whatever was started is stopped again when a
    /// later step fails; the proxy is its starter's to stop.
    pub async fn start(loaded: Loaded, proxy: Proxy, opts: Options) -> Result<Session, StartError> {
        let config = &loaded.config;
        if config.agent.is_none() {
            let why = "runs need an `agent:` section (endpoint of the agent under test)";
            return Err(StartError(why.into()));
        }
        let embedder = Embedder::for_config(config)
            .await
            .map_err(|e| StartError(e.to_string()))?;
        let log = &opts.agent_log;
        let readied = ready_agent(&loaded, &proxy, (log, opts.cases), opts.before_agent).await;
        let (Launched { agent, process }, pool) = readied?;
        let process = process.map(|p| Process::new(Some(p)));
        let parts = crate::run::Parts {
            seed: opts.seed.unwrap_or_else(|| proxy.engine.seed()),
            engine: proxy.engine.clone(),
            journal: proxy.journal.clone(),
            agent,
            config_digest: loaded.digest.clone(),
            min_score: opts.min_score,
            embedder,
        };
        let mut ctx = RunContext {
            pool: pool.clone(),
            process: process.clone(),
            progress: opts.progress,
            shard: opts.shard,
            ..RunContext::of(config, parts)
        };
        ctx.scoring.trials.only = opts.trial;
        // Tapes are cut from the journal's bodies, kept while this run wants them.
        let bodies =
            (config.output.tapes != Tapes::None).then(|| proxy.journal.keep_bodies_while());
        let holding = proxy.journal.hold_while();
        let seed = ctx.scoring.seed;
        let spans = proxy.journal.otel().map(|o| o.begin_run(seed));
        let telemetry_note =
            crate::otel::run_asks_elsewhere(proxy.journal.otel(), &config.telemetry);
        if let Some(why) = &telemetry_note {
            tracing::warn!("{why}");
        }
        Ok(Session {
            spans,
            telemetry_note,
            proxy,
            process,
            pool,
            loaded,
            recorder: None,
            _bodies: bodies,
            _holding: holding,
            ctx,
        })
    }

    /// The config the session runs.
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    /// The proxy the agent talks through.
    pub fn proxy(&self) -> &Proxy {
        &self.proxy
    }

    /// Records this session's run in `recorder` (its cases as they end, before any other
    /// hook hears of them, so a store flushed after a `case` event holds the case; its end
    /// in `finish`).
    pub fn record(&mut self, recorder: Recorder) {
        self.ctx.progress = Some(match self.ctx.progress.take() {
            Some(p) => recorder.hooks().tee(p),
            None => recorder.hooks(),
        });
        self.recorder = Some(recorder);
    }

    /// Starts recording a run of `kind` in the session's store.
    pub fn record_new(&mut self, kind: RunKind) -> Recorder {
        let digest = self.loaded.digest.clone();
        let r = Recorder::begin(
            &self.proxy.store,
            kind,
            digest,
            Some(self.ctx.scoring.seed),
            RunStatus::Running,
        );
        self.record(r.clone());
        r
    }

    /// Runs `prepared` against the agent.
    pub async fn execute(&self, prepared: &Prepared) -> Result<Report, RunError> {
        execute(&self.ctx, &self.loaded.config, prepared).await
    }

    /// Stops the agent; a warning when it had exited during the run (crashed), with the
    /// end of its log.
    pub async fn stop_agent(&mut self) -> Vec<String> {
        let mut warnings = self.ctx.agent.take_notes();
        if let Some(pool) = self.pool.take() {
            warnings.extend(pool.warnings.iter().cloned());
            warnings.extend(pool.take_notes());
            warnings.extend(pool.stop().await);
        }
        if let Some(p) = self.process.take()
            && let Some(p) = p.take().await
        {
            warnings.extend(p.end_of_run().await);
        }
        warnings
    }

    /// Why this run's `telemetry.otlp` is not applied, when it is not (also a warning of
    /// its report).
    pub fn telemetry_note(&self) -> Option<&str> {
        self.telemetry_note.as_deref()
    }

    /// The end of a run that made a report: the agent stopped (a crash is a warning of the
    /// report), the report written to `json` and beside it in the config's formats, its
    /// tapes, and the run recorded. The proxy is left running: `stop` ends the session.
    pub async fn finish(&mut self, mut report: Report, json: &Path) -> Ended {
        let crashed = self.stop_agent().await;
        if let Some(w) = report.warnings_mut() {
            w.extend(crashed);
            w.extend(self.telemetry_note.take());
        }
        if let Some(scope) = self.spans.take() {
            scope
                .end(spans::run_span(&report, self.ctx.scoring.seed))
                .await;
        }
        let output = &self.loaded.config.output;
        let (formats, tapes) = (output.format.clone(), output.tapes);
        let journal = self.proxy.journal.clone();
        let mut ended = write(report, formats, json, Some((tapes, journal))).await;
        if let Some(r) = &self.recorder {
            if !ended.taped.is_empty() {
                r.set_tapes(&crate::run::tapes::tapes_dir(json));
            }
            ended.stored = match ended.written.json() {
                Some(_) => r.finish(&ended.report, &ended.written.files).await,
                None => {
                    let why = ended.written.failed.join("; ");
                    r.fail(RunStatus::Error, Some(why)).await
                }
            };
        }
        ended
    }

    /// The end of a run that made no report: the agent stopped and, when recorded, the
    /// run's `status` and `reason` stored.
    pub async fn fail(
        &mut self,
        status: RunStatus,
        reason: Option<String>,
    ) -> Result<(), StoreError> {
        self.stop_agent().await;
        match &self.recorder {
            Some(r) => r.fail(status, reason).await,
            None => Ok(()),
        }
    }

    /// Stops the agent, if still running. The proxy is left to whoever started it.
    pub async fn stop(mut self) {
        self.stop_agent().await;
    }
}

/// The caller's step (the demo's agent), then `agent.command` started with the proxy's
/// environment and the agent's pre-flight.
async fn ready_agent(
    loaded: &Loaded,
    proxy: &Proxy,
    (log, cases): (&Path, Option<usize>),
    before: Option<BeforeAgent>,
) -> Result<(Launched, Option<std::sync::Arc<Pool>>), StartError> {
    if let Some(before) = before {
        before(proxy).map_err(StartError)?;
    }
    let config = &loaded.config;
    // `capture: netns` serves its namespace on a lane: a pool, of one when the command
    // takes no `{port}`.
    let pooled =
        |a: &&crate::config::AgentTarget| a.pooled() || a.capture == crate::capture::Mode::Netns;
    if let Some(spec) = config.agent.as_ref().filter(pooled) {
        let size = spec.pool_size(config.concurrency(), config.advanced.settle_ms, cases);
        let pool = Pool::start(
            config,
            size,
            &proxy.lanes,
            &proxy.ca_cert,
            proxy.wrap_dir.as_deref(),
            log,
        )
        .await?;
        let launched = Launched {
            agent: pool.first(),
            process: None,
        };
        return Ok((launched, Some(std::sync::Arc::new(pool))));
    }
    let at = ProxyAt {
        addr: proxy.addr,
        ca_cert: &proxy.ca_cert,
        wrap_dir: proxy.wrap_dir.as_deref(),
    };
    Ok((launch(config, at, log).await?, None))
}
