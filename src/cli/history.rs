//! `flakestorm runs list|show|compare`: the run history kept in the store (docs/runs.md),
//! as tables for people or `--json` for scripts. Reads only; a data_dir without a store
//! has no runs (no file is created to say so). Not to be confused with `cli::runs`, which
//! prints a run's own output.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{ConfigArg, load};
use crate::config::Overrides;
use crate::store::{
    self, Change, ChangeKind, Filter, RunKind, RunRecord, RunStatus, Store, Subject,
};

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Stored runs, newest first.
    List {
        #[command(flatten)]
        at: StoreArg,
        /// Only runs of this kind (contract, chaos, mutation, replay, ci).
        #[arg(long, value_name = "KIND")]
        kind: Option<RunKind>,
        /// Only runs with this status (queued, running, passed, failed, cancelled,
        /// interrupted, error).
        #[arg(long, value_name = "STATUS")]
        status: Option<RunStatus>,
        /// At most this many runs.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
        /// Runs older than this id (the `next_cursor` of a previous page).
        #[arg(long, value_name = "ID")]
        cursor: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One run: status, scores, artifacts, cells and cases.
    Show {
        id: String,
        #[command(flatten)]
        at: StoreArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Record a finished run from its JSON report (a merged sharded run, another
    /// machine's run), so history, compare and --baseline see it.
    Import {
        /// The JSON report.
        report: PathBuf,
        #[command(flatten)]
        at: StoreArg,
    },
    /// Score deltas per phase and the cells and cases whose verdict changed from run A
    /// (the baseline) to run B, regressions first.
    Compare {
        a: String,
        b: String,
        #[command(flatten)]
        at: StoreArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Where the store is: `--data-dir`, else the config's `data_dir`.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// Config file whose data_dir holds the store (default: ./flakestorm.yaml if present,
    /// else .flakestorm).
    #[arg(short, long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The data folder holding flakestorm.db (overrides the config's data_dir).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

impl StoreArg {
    pub(super) fn data_dir(&self) -> Option<&std::path::Path> {
        self.data_dir.as_deref()
    }

    pub(super) fn config(&self) -> Option<&std::path::Path> {
        self.config.as_deref()
    }
}

/// Why a command stopped: printed, with its exit code.
pub(super) struct Stop(pub u8, pub String);

pub async fn run(command: RunsCommand) -> ExitCode {
    let result = match command {
        RunsCommand::Import { report, at } => import(&report, &at).await,
        RunsCommand::List {
            at,
            kind,
            status,
            limit,
            cursor,
            json,
        } => {
            let filter = Filter {
                kind,
                status,
                limit: Some(limit),
                cursor,
            };
            open(&at).and_then(|s| list(s.as_ref(), &filter, json))
        }
        RunsCommand::Show { id, at, json } => open(&at).and_then(|s| show(s.as_ref(), &id, json)),
        RunsCommand::Compare { a, b, at, json } => {
            open(&at).and_then(|s| compare(s.as_ref(), &a, &b, json))
        }
    };
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(Stop(code, why)) => {
            eprintln!("flakestorm: {why}");
            ExitCode::from(code)
        }
    }
}

/// The data folder `at` names: `--data-dir`, else the config's `data_dir`.
fn data_dir_of(at: &StoreArg) -> Result<PathBuf, Stop> {
    if let Some(d) = &at.data_dir {
        return Ok(d.clone());
    }
    let arg = ConfigArg {
        config: at.config.clone(),
        ca_dir: None,
    };
    let loaded = load(&arg, Overrides::default())
        .map_err(|_| Stop(2, "the configuration is invalid".into()))?;
    Ok(loaded.config.data_dir)
}

/// The store, or `None` when the data folder has none yet.
pub(super) fn open(at: &StoreArg) -> Result<Option<Store>, Stop> {
    let dir = data_dir_of(at)?;
    if !dir.join(store::DB_FILE).exists() {
        return Ok(None);
    }
    Store::open(&dir).map(Some).map_err(failed)
}

fn unknown(id: &str) -> Stop {
    Stop(
        2,
        format!("no run {id}; `flakestorm runs list` shows the runs"),
    )
}

fn json(v: &impl serde::Serialize) -> Result<String, Stop> {
    serde_json::to_string_pretty(v)
        .map(|s| s + "\n")
        .map_err(|e| Stop(1, e.to_string()))
}

/// A store that is not ours, damaged or unreadable: exit 2, as the environment's errors do.
fn failed(e: store::StoreError) -> Stop {
    Stop(2, e.to_string())
}

fn list(store: Option<&Store>, filter: &Filter, as_json: bool) -> Result<String, Stop> {
    let page = match store {
        Some(s) => s.list(filter).map_err(failed)?,
        None => store::Page {
            runs: vec![],
            next_cursor: None,
        },
    };
    if as_json {
        return json(&page);
    }
    if page.runs.is_empty() {
        return Ok("no runs stored\n".into());
    }
    let mut out = format!(
        "{:<22}  {:<8}  {:<11}  {:<19}  {:>9}  {:>9}  SCORES\n",
        "ID", "KIND", "STATUS", "STARTED (UTC)", "DURATION", "CASES"
    );
    for r in &page.runs {
        out += &format!(
            "{:<22}  {:<8}  {:<11}  {:<19}  {:>9}  {:>9}  {}\n",
            r.id,
            r.kind.as_str(),
            r.status.as_str(),
            store::readable_time(r.started_ms),
            duration(r),
            cases(r),
            scores(r)
        );
    }
    if let Some(c) = page.next_cursor {
        out += &format!("more: --cursor {c}\n");
    }
    Ok(out)
}

fn duration(r: &RunRecord) -> String {
    r.finished_ms.map_or_else(
        || "-".into(),
        |f| format!("{:.1}s", (f - r.started_ms).max(0) as f64 / 1000.0),
    )
}

/// `done/total`, or `done` when the run never said how many it planned.
fn cases(r: &RunRecord) -> String {
    if r.total == 0 {
        r.done.to_string()
    } else {
        format!("{}/{}", r.done, r.total)
    }
}

fn scores(r: &RunRecord) -> String {
    let all: Vec<String> = r
        .scores
        .iter()
        .map(|(p, s)| format!("{p} {s:.1}"))
        .collect();
    if all.is_empty() {
        "-".into()
    } else {
        all.join(", ")
    }
}

fn show(store: Option<&Store>, id: &str, as_json: bool) -> Result<String, Stop> {
    let data = match store {
        Some(s) => s.load(id).map_err(failed)?,
        None => None,
    };
    let data = data.ok_or_else(|| unknown(id))?;
    if as_json {
        return json(&data);
    }
    let r = &data.run;
    let mut out = format!("run {}  {}  {}\n", r.id, r.kind, r.status);
    out += &format!(
        "started   {} UTC, took {}\n",
        store::readable_time(r.started_ms),
        duration(r)
    );
    if let Some(seed) = r.seed {
        out += &format!("seed      {seed}\n");
    }
    if let Some(d) = &r.config_digest {
        out += &format!("config    {d}\n");
    }
    out += &format!("cases     {}\nscores    {}\n", cases(r), scores(r));
    if let Some(why) = &r.reason {
        out += &format!("reason    {why}\n");
    }
    for (kind, path) in &r.artifacts {
        out += &format!("artifact  {kind}: {path}\n");
    }
    if !data.cells.is_empty() {
        out += "\ncells\n";
        for c in &data.cells {
            out += &format!(
                "  {:<14} {:<9} {} / {}: {}\n",
                c.verdict.as_str(),
                c.severity,
                c.scenario,
                c.invariant,
                c.reason
            );
        }
    }
    if !data.cases.is_empty() {
        out += "\ncases\n";
        for c in &data.cases {
            let verdict = c.case.verdict.map_or("-", |v| v.as_str());
            out += &format!(
                "  {:>4} {:<14} {:>8.0}ms  {} / {}\n",
                c.seq,
                verdict,
                c.case.latency_ms,
                c.case.scenario,
                one_line(&c.case.input)
            );
        }
    }
    Ok(out)
}

/// The first 60 characters of the first line.
fn one_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

fn compare(store: Option<&Store>, a: &str, b: &str, as_json: bool) -> Result<String, Stop> {
    let load = |id: &str| match store {
        Some(s) => s.load(id).map_err(failed)?.ok_or_else(|| unknown(id)),
        None => Err(unknown(id)),
    };
    let (base, head) = (load(a)?, load(b)?);
    let cmp = store::compare(&base, &head);
    if as_json {
        return json(&cmp);
    }
    let mut out = format!("{} → {}\n", cmp.base, cmp.head);
    let num = |x: Option<f64>| x.map_or_else(|| "-".into(), |x| format!("{x:.1}"));
    out += &format!("{:<10} {:>7} {:>7} {:>7}\n", "phase", "A", "B", "delta");
    for d in &cmp.deltas {
        let delta = d.delta.map_or_else(|| "-".into(), |x| format!("{x:+.1}"));
        out += &format!(
            "{:<10} {:>7} {:>7} {:>7}\n",
            d.phase,
            num(d.base),
            num(d.head),
            delta
        );
    }
    if cmp.changes.is_empty() {
        out += "no cell or case changed verdict\n";
    }
    for c in &cmp.changes {
        out += &change_line(c);
    }
    Ok(out)
}

fn change_line(c: &Change) -> String {
    let kind = match c.kind {
        ChangeKind::Regression => "REGRESSION",
        ChangeKind::Fix => "fixed",
        ChangeKind::Other => "changed",
    };
    let word = |v: Option<store::Verdict>| v.map_or("-", |v| v.as_str());
    let what = match c.subject {
        Subject::Cell => format!(
            "cell {} / {} ({})",
            c.scenario,
            c.name,
            c.severity.map_or("-", |s| s.as_str())
        ),
        Subject::Case => format!("case {} / {}", c.scenario, one_line(&c.name)),
    };
    let trial = c.trial.map(|t| format!(" (trial {t})")).unwrap_or_default();
    let class = |o: Option<crate::checks::spec::OutcomeClass>| o.map_or("-", |o| o.as_str());
    let outcome = c
        .outcome
        .map(|o| format!(", outcome {} → {}", class(o.before), class(o.after)))
        .unwrap_or_default();
    let num = |x: Option<f64>| x.map_or_else(|| "-".into(), |x| format!("{x:.2}"));
    let hat = c
        .pass_hat
        .as_ref()
        .map(|h| format!(", pass^{} {} → {}", h.k, num(h.before), num(h.after)))
        .unwrap_or_default();
    let why = c
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!(
        "{kind:<10} [{}] {what}{trial}: {} → {}{hat}{outcome}{why}\n",
        c.phase,
        word(c.before),
        word(c.after)
    )
}

/// `runs import`: the report read (refused as `flakestorm report` refuses a file), recorded
/// in the store, which is made if the data folder has none yet.
async fn import(path: &std::path::Path, at: &StoreArg) -> Result<String, Stop> {
    let text = crate::files::read_to_string(path, crate::files::Limit::Report)
        .map_err(|e| Stop(2, e.to_string()))?;
    let report = crate::run::Report::from_json(&text)
        .map_err(|e| Stop(2, format!("{}: {e}", path.display())))?;
    let store = match open(at)? {
        Some(s) => s,
        None => Store::open(&data_dir_of(at)?).map_err(failed)?,
    };
    let id = store::import(&store, &report, text).await.map_err(failed)?;
    Ok(format!(
        "imported {} as run {id} ({})\n",
        path.display(),
        report.verdict().label()
    ))
}
