//! flakestorm: a chaos-engineering man-in-the-middle proxy for AI agents.
//!
//! Crate map (a module may use only those listed above it; see docs/architecture.md):
//! - `exchange`  — the record of one intercepted request and its outcome.
//! - `files`     — reading the files flakestorm is given: regular files only, never
//!   blocking, bounded by a limit per kind (config, session, tape, report, PEM, key).
//! - `text`      — text shown on one line: cut at a character boundary.
//! - `plant`     — plausible-but-wrong data: JSON paths, canary values, and the edits of a
//!   data fault (`corrupt`, `stale`, `empty`) on JSON, text and MCP results (pure).
//! - `mcp`       — MCP over Streamable HTTP on the wire: reading JSON-RPC requests, the
//!   answers of a failing server, edits to a server's answers (pure).
//! - `llm`       — LLM provider wire formats, one file per provider behind `llm::Wire`:
//!   detection, where text and tool calls sit, error bodies, stream endings, usage (pure).
//! - `cost`      — tokens and cost: the price table (shipped default, overrides, checks),
//!   sums per case, scenario and run, what faults' retries spent (pure).
//! - `telemetry` — tracing setup and Prometheus metrics.
//! - `tls`       — the CA, per-host leaf certificates, upstream TLS roots.
//! - `globs`     — URL and host glob semantics, compiled once as they are read (pure).
//! - `capture`   — `agent.capture: netns`: the agent's network namespace (redirection
//!   rules, its setup, the DNS answered there, sockets passed in and out of it).
//! - `chaos::spec`  — the fault vocabulary: tool faults, LLM faults and context attacks
//!   as closed serde enums, their ranges, compiled once into `CompiledChaos` (pure).
//! - `mutate::kind` — the mutation types: one closed enum, each type's family and weight.
//! - `checks::spec` — the invariant vocabulary: `Check`, `InvariantSpec`, regexes compiled
//!   once as an invariant is parsed.
//! - `otel::spec`   — the `telemetry:` vocabulary: where OTLP spans go (endpoint,
//!   protocol, headers) and whether they carry prompts and answers.
//! - `config`    — `flakestorm.yaml` schema assembled from those spec types, layered
//!   loading, validation with paths, compiled once into what the runtime uses (chaos
//!   rules, regexes, host and URL globs). Owns no domain enum.
//! - `tape`      — HAR 1.2 tapes: captured bodies, writing, reading, request keys and
//!   answering requests from a tape (pure).
//! - `chaos`     — the fault engine: rules, triggering, provider-shaped faults (pure).
//! - `otel`      — OTLP span export: a span per run, case and exchange (GenAI semantic
//!   conventions), faults as span events, a bounded queue the proxy never waits on.
//! - `journal`   — bounded in-memory record of exchanges, redacted at the boundary.
//! - `recording` — journal traffic as tapes: a case's exchanges, or live traffic
//!   (`serve --record`, `record`).
//! - `proxy`     — the data plane: forward proxy, CONNECT interception, streaming.
//! - `agent`     — driving the agent under test: invoke its endpoint, start it.
//! - `wrap`      — `flakestorm wrap`: a stdio MCP server bridged through the run's proxy.
//! - `langsmith` — LangSmith import: a run or a project's root runs as replay session
//!   files and tapes, over LangSmith's REST API.
//! - `mutate`    — mutation types: seeded rule-based generators, the `model:` LLM's
//!   variants, and a run's plan.
//! - `checks`    — invariants evaluated on a case: answer checks and traffic checks.
//! - `run`       — runs: the contract matrix, chaos and mutation runs, their coverage, verdicts, score.
//! - `store`     — run history: SQLite at `data_dir/flakestorm.db` (one writer thread,
//!   migrations, interrupted runs), artifact files, comparing two runs.
//! - `report`    — rendering a run's report: JSON, HTML, JUnit, Markdown, certificate (pure).
//! - `session`   — one run's life above the engine, for the CLI, the daemon's runs and the
//!   demo: the agent readied behind a proxy it is handed, the run recorded, its reports and
//!   tapes written, and what its user is told.
//! - `jobs`      — the daemon's runs (`/v1/runs`): queue, turns, cancel, progress events.
//! - `api`       — the control plane's HTTP API (health, metrics, CA, chaos rules, profiles,
//!   runs).
//! - `ui`        — the web view at `/` on the control listener: its built-in page, the
//!   session cookie it keeps, the reads it needs beyond `/v1/*`.
//! - `daemon`    — composition root: builds everything and runs the listeners.
//! - `demo`      — the embedded, offline demo (`flakestorm demo`).
//! - `cli`       — command-line commands.
#![forbid(unsafe_code)]
// No catch-all arm over an enum: a new variant must be handled where it matters (a
// foreign non-exhaustive or JSON enum is allowed where it is matched, saying why).
#![warn(clippy::wildcard_enum_match_arm)]

pub mod agent;
pub mod api;
pub mod capture;
pub mod chaos;
pub mod checks;
pub mod cli;
pub mod config;
pub mod cost;
pub mod daemon;
pub mod demo;
pub mod exchange;
pub mod files;
pub mod globs;
pub mod jobs;
pub mod journal;
pub mod langsmith;
pub mod llm;
pub mod mcp;
pub mod mutate;
pub mod otel;
pub mod plant;
pub mod proxy;
pub mod recording;
pub mod report;
pub mod run;
pub mod session;
pub mod store;
pub mod tape;
pub mod telemetry;
pub mod text;
pub mod tls;
pub mod ui;
pub mod wrap;
