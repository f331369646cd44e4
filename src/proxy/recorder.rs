//! An exchange on its way to the journal: `Recorder` opens it from its request head (its
//! target classified, its case found) and holds it to its outcome, collects what the body transforms and scanners note about it (faults applied or
//! not, values planted, canary leaks, captured bodies), and records and counts it exactly
//! once.

use std::sync::{Arc, Mutex};

use http::{Request, Uri};
use tokio::time::Instant;

use super::fault_body::SkipNote;
use super::route::without_userinfo;
use super::{ConnCtx, Proxy, headers};
use crate::exchange::{
    BodyEnd, CanaryLeak, ErrorInfo, ErrorKind, ErrorSource, Exchange, FaultKind, FaultRecord,
    Outcome, Planted, RequestHead, Route, Target, Timings,
};

/// An exchange waiting for its outcome. Finishing it records it and counts it.
pub struct Recorder {
    proxy: Proxy,
    exchange: Exchange,
    started: Instant,
    /// Set by a body transform that could not apply what it was for.
    skip: SkipNote,
    /// Whose transform `skip` speaks for.
    skip_owner: Option<Owner>,
    /// The canary the response transform plants, and whose transform carries it.
    canary: Option<(String, Owner)>,
    /// Values a fault or attack put into what the agent or its model reads, whose, and
    /// whether they ride on the response (kept only if it reached the client whole) or on
    /// the request (read once it went upstream). A transform's own go through `skip`.
    planted: Vec<(Owner, bool, Planted)>,
    /// Canary leaks found in the request, also by its body scanner as the body streams;
    /// made only when a canary is installed, so other requests pay no allocation for it.
    leaks: Option<LeakSink>,
    /// The exchange's bodies, collected while the journal keeps bodies (tapes).
    capture: Option<crate::tape::Capture>,
    /// Where a body wrapper notes what the outcome does not say (`close_delimited`); made
    /// only when asked for.
    body_note: Option<BodyNote>,
    /// Its case's count of exchanges in flight, while its case settles (dropped after the
    /// exchange is recorded, so a settled case finds it in the journal).
    _in_flight: Option<crate::journal::InFlight>,
}

/// Where a response body wrapper notes how the body ended, for the exchange's `note`.
pub type BodyNote = Arc<std::sync::OnceLock<String>>;

/// Where the request scanner puts the canary leaks it finds.
pub type LeakSink = Arc<Mutex<Vec<CanaryLeak>>>;

/// The fault, the n-th attack, or the canary of an exchange: whose body transform it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Fault,
    Attack(usize),
    Canary,
}

impl Recorder {
    /// Opens the exchange of a request to `uri` that came in by `route`: its target
    /// classified, its case found, counted in flight for that case until it is recorded.
    pub fn open<B>(
        proxy: &Proxy,
        ctx: &ConnCtx,
        req: &Request<B>,
        uri: &Uri,
        route: Route,
    ) -> Recorder {
        let uri = &without_userinfo(uri);
        let url = headers::url_text(uri);
        let host = uri.host().unwrap_or_default();
        let target = proxy.inner.chaos.classify(&url, host, uri.path());
        let started_at_ms = crate::exchange::now_unix_ms();
        let exchange = Exchange {
            id: proxy.journal().next_id(),
            client_addr: ctx.peer_text.to_string(),
            client_user: ctx.user.as_deref().map(String::from),
            route,
            target,
            request: RequestHead {
                method: req.method().to_string(),
                url,
                version: headers::version_name(req.version()).into(),
                headers: headers::header_list(req.headers()),
            },
            // Placeholder until the outcome is known; `finish` always replaces it (an
            // empty message: no allocation per request).
            outcome: Outcome::Error {
                error: ErrorInfo {
                    source: ErrorSource::Internal,
                    kind: ErrorKind::Internal,
                    message: String::new(),
                },
                status: None,
            },
            timings: Timings {
                started_at_ms,
                ..Timings::default()
            },
            response_bytes: 0,
            fault: None,
            attacks: vec![],
            llm_tool_calls: vec![],
            trace_id: proxy.case_of(ctx.lane.as_ref(), req.headers()),
            canary: None,
            canary_leaks: vec![],
            mcp: None,
            tcp: None,
            planted: vec![],
            usage: None,
            note: None,
        };
        let in_flight = proxy.journal().begin(exchange.trace_id.as_deref());
        Recorder::new(proxy.clone(), exchange, Instant::now(), in_flight)
    }

    pub fn new(
        proxy: Proxy,
        exchange: Exchange,
        started: Instant,
        in_flight: Option<crate::journal::InFlight>,
    ) -> Self {
        let skip = SkipNote::new(proxy.max_rewrite_bytes());
        let capture = proxy
            .journal()
            .captures_bodies(&exchange.target)
            .then(crate::tape::Capture::default);
        Recorder {
            capture,
            proxy,
            exchange,
            started,
            skip,
            skip_owner: None,
            canary: None,
            planted: vec![],
            leaks: None,
            body_note: None,
            _in_flight: in_flight,
        }
    }

    pub fn exchange(&self) -> &Exchange {
        &self.exchange
    }

    pub fn exchange_mut(&mut self) -> &mut Exchange {
        &mut self.exchange
    }

    /// Notes the fault that fired on this exchange.
    pub fn set_fault(&mut self, rule: &str, mode: FaultKind) {
        let record = FaultRecord {
            rule: rule.to_string(),
            mode,
            applied: true,
            note: None,
        };
        self.exchange.fault = Some(record);
    }

    /// Notes a context attack that fired on this exchange; returns its index.
    pub fn add_attack(&mut self, rule: &str, mode: FaultKind) -> usize {
        let record = FaultRecord {
            rule: rule.to_string(),
            mode,
            applied: true,
            note: None,
        };
        self.exchange.attacks.push(record);
        self.exchange.attacks.len() - 1
    }

    /// Notes that the response transform of `owner` plants canary `token`.
    pub fn plant(&mut self, token: String, owner: Owner) {
        self.canary = Some((token, owner));
    }

    /// Notes a value `owner` put into the response (`on_response`) or the request.
    pub fn planted(&mut self, owner: Owner, on_response: bool, value: Planted) {
        self.planted.push((owner, on_response, value));
    }

    /// The planted values that reached the agent: their fault or attack applied, and, on
    /// the response, the body complete (`complete`).
    fn keep_planted(&mut self, complete: bool) {
        let mut all = std::mem::take(&mut self.planted);
        if let Some(owner) = self.skip_owner {
            all.extend(
                self.skip
                    .take_planted()
                    .into_iter()
                    .map(|p| (owner, true, p)),
            );
        }
        for (owner, on_response, value) in all {
            let applied = match owner {
                Owner::Fault => self.exchange.fault.as_ref().is_some_and(|f| f.applied),
                Owner::Attack(i) => self.exchange.attacks.get(i).is_some_and(|a| a.applied),
                Owner::Canary => false,
            };
            if applied && (complete || !on_response) {
                self.exchange.planted.push(value);
            }
        }
    }

    /// Where a response body wrapper notes what the exchange's outcome does not say.
    pub fn body_note(&mut self) -> BodyNote {
        self.body_note.get_or_insert_with(BodyNote::default).clone()
    }

    /// Where canary leaks found in the request go.
    pub fn leaks(&mut self) -> LeakSink {
        self.leaks.get_or_insert_with(LeakSink::default).clone()
    }

    /// Marks the fault or an attack as not applied, and why (and a canary riding on the
    /// same transform as not planted).
    pub fn not_applied(&mut self, owner: Owner, note: impl Into<String>) {
        if self.canary.as_ref().is_some_and(|(_, o)| *o == owner) {
            self.canary = None;
        }
        let record = match owner {
            Owner::Fault => self.exchange.fault.as_mut(),
            Owner::Attack(i) => self.exchange.attacks.get_mut(i),
            Owner::Canary => None,
        };
        if let Some(r) = record {
            r.applied = false;
            r.note = Some(note.into());
        }
    }

    /// A fault or attack is applied only when what it made reached the agent: an exchange
    /// that ended in flakestorm's own error (the upstream refused, failed or timed out, a
    /// forbidden target, an internal error) answered the agent with that error instead, so
    /// none of its faults or attacks was. An injected error is the fault itself, and an
    /// agent that gave up during a fault's hold met the hold.
    fn undelivered(&mut self) {
        let Outcome::Error { error, .. } = &self.exchange.outcome else {
            return;
        };
        if error.source == ErrorSource::Injected || error.kind == ErrorKind::ClientCancelled {
            return;
        }
        let note = format!(
            "the agent got flakestorm's `{}` error instead: {}",
            error.kind, error.message
        );
        let fault = self.exchange.fault.as_ref().map(|f| (Owner::Fault, f));
        let attacks = self.exchange.attacks.iter().enumerate();
        let applied: Vec<Owner> = fault
            .into_iter()
            .chain(attacks.map(|(i, a)| (Owner::Attack(i), a)))
            .filter(|(_, r)| r.applied)
            .map(|(o, _)| o)
            .collect();
        for owner in applied {
            self.not_applied(owner, note.clone());
        }
    }

    /// Where a body transform acting for `owner` says why it could not apply.
    pub fn skip_note(&mut self, owner: Owner) -> SkipNote {
        self.skip_owner = Some(owner);
        self.skip.clone()
    }

    /// `proxy.max_rewrite_bytes`: the cap on what a rewrite of this exchange may produce.
    pub fn max_rewrite_bytes(&self) -> usize {
        self.skip.max_rewrite
    }

    /// Where the exchange's bodies are collected, when tapes want them.
    pub fn capture(&self) -> Option<&crate::tape::Capture> {
        self.capture.as_ref()
    }

    /// Collects a piece of the response body as it goes to the client.
    pub fn capture_response(&self, data: &[u8]) {
        if let Some(c) = &self.capture {
            c.response(data, self.elapsed_ms());
        }
    }

    /// When the request arrived (a replayed answer keeps the recorded pace from it).
    pub fn started(&self) -> Instant {
        self.started
    }

    pub fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// The exchange as built so far, for a record that is not a request and bypasses
    /// `finish` and its metrics (a failed client handshake).
    pub fn into_exchange(self) -> Exchange {
        self.exchange
    }

    /// Records the exchange with `outcome`, and counts it (and its fault).
    pub fn finish(mut self, outcome: Outcome, response_bytes: u64) {
        self.exchange.timings.total_ms = self.elapsed_ms();
        self.exchange.response_bytes = response_bytes;
        self.exchange.outcome = outcome;
        let status = self.exchange.status();
        let target = self.exchange.target.kind();
        if let (Some(note), Some(owner)) = (self.skip.get().cloned(), self.skip_owner) {
            self.not_applied(owner, note);
        }
        self.undelivered();
        if let Some(note) = self.body_note.as_ref().and_then(|n| n.get()) {
            self.exchange.note = Some(note.clone());
        }
        // The injected text goes out with the end of the body; a broken body never had it.
        let complete = matches!(
            self.exchange.outcome,
            Outcome::Response {
                body: BodyEnd::Complete,
                ..
            }
        );
        if complete {
            self.exchange.canary = self.canary.take().map(|(token, _)| token);
        }
        self.keep_planted(complete);
        if let Some(sink) = &self.leaks {
            self.exchange.canary_leaks =
                std::mem::take(&mut *sink.lock().unwrap_or_else(|p| p.into_inner()));
        }
        let fired = self.exchange.fault.iter().chain(&self.exchange.attacks);
        for record in fired {
            let mode = record.mode.as_str();
            self.proxy.metrics().fault(target, mode, record.applied);
        }
        self.proxy.metrics().request(target, status);
        if let (Target::Llm { provider }, Some(u)) = (&self.exchange.target, &self.exchange.usage) {
            let pricing = self.proxy.pricing();
            let cost = pricing.cost(u).ok().map(|c| (c, pricing.currency.as_str()));
            self.proxy.metrics().llm_usage(provider.as_str(), u, cost);
        }
        let bodies = self.capture.take().map(|c| {
            let ct = match &self.exchange.outcome {
                Outcome::Response { response, .. } => response
                    .headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                    .map(|(_, v)| v.as_str()),
                Outcome::Error { .. } => None,
            };
            c.finish(ct.unwrap_or(""))
        });
        self.proxy.journal().record_with(self.exchange, bodies);
    }
}
