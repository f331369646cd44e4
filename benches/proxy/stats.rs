//! Statistics over runs: error tallies, percentiles and medians, and the per-side summary
//! of a scenario's repeated runs.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::load::RunStats;

#[derive(Default)]
pub struct Errors {
    pub count: u64,
    /// Distinct messages (at most 5 kept) and how often each occurred.
    pub kinds: BTreeMap<String, u64>,
}

impl Errors {
    pub fn add(&mut self, message: String) {
        self.count += 1;
        self.record(message, 1);
    }

    pub fn merge(&mut self, other: Errors) {
        self.count += other.count;
        for (message, n) in other.kinds {
            self.record(message, n);
        }
    }

    fn record(&mut self, message: String, n: u64) {
        if self.kinds.len() < 5 || self.kinds.contains_key(&message) {
            *self.kinds.entry(message).or_default() += n;
        }
    }
}

pub fn percentile(sorted_nanos: &[u64], p: f64) -> Duration {
    if sorted_nanos.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p * sorted_nanos.len() as f64).ceil() as usize).clamp(1, sorted_nanos.len());
    Duration::from_nanos(sorted_nanos[rank - 1])
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

pub fn median_duration(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// Medians over the repeated runs of one side of a scenario.
pub struct Summary {
    pub rps: f64,
    /// Lowest and highest req/s of the runs.
    pub rps_range: (f64, f64),
    pub p50: Duration,
    pub p99: Duration,
    pub errors: Errors,
    pub origin_conns_per_req: f64,
    /// Share of the requests that reached the origin over HTTP/2.
    pub origin_h2_share: f64,
    pub proxy_cpu_per_req: Option<Duration>,
    /// The origin process's CPU per request (nginx only).
    pub origin_cpu_per_req: Option<Duration>,
    /// The system (kernel) part of each.
    pub proxy_sys_per_req: Option<Duration>,
    pub origin_sys_per_req: Option<Duration>,
    pub proxy_rss_peak_kib: Option<u64>,
    /// Highest share of the machine's CPU other processes used during one of the runs.
    pub others_max: f64,
}

pub fn summarize(runs: Vec<RunStats>) -> Summary {
    let rps = median_f64(runs.iter().map(|r| r.rps).collect());
    let rps_range = runs.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), r| {
        (lo.min(r.rps), hi.max(r.rps))
    });
    let p50 = median_duration(runs.iter().map(|r| r.p50).collect());
    let p99 = median_duration(runs.iter().map(|r| r.p99).collect());
    let per_req = |r: &RunStats| r.origin_conns as f64 / r.ok.max(1) as f64;
    let origin_conns_per_req = median_f64(runs.iter().map(per_req).collect());
    let h2_share = |r: &RunStats| r.origin_h2_requests as f64 / r.ok.max(1) as f64;
    let origin_h2_share = median_f64(runs.iter().map(h2_share).collect());
    let per_req = |of: fn(&RunStats) -> Option<Duration>| {
        let each: Vec<Duration> = runs
            .iter()
            .filter_map(|r| Some(of(r)? / r.ok.max(1) as u32))
            .collect();
        (!each.is_empty()).then(|| median_duration(each))
    };
    let proxy_cpu_per_req = per_req(|r| r.proxy_cpu);
    let origin_cpu_per_req = per_req(|r| r.origin_cpu);
    let proxy_sys_per_req = per_req(|r| r.proxy_sys);
    let origin_sys_per_req = per_req(|r| r.origin_sys);
    let proxy_rss_peak_kib = runs.iter().filter_map(|r| r.proxy_rss_peak_kib).max();
    let others_max = runs.iter().map(|r| r.others).fold(0.0, f64::max);
    let mut errors = Errors::default();
    for r in runs {
        errors.merge(r.errors);
    }
    Summary {
        rps,
        rps_range,
        p50,
        p99,
        errors,
        origin_conns_per_req,
        origin_h2_share,
        proxy_cpu_per_req,
        origin_cpu_per_req,
        proxy_sys_per_req,
        origin_sys_per_req,
        proxy_rss_peak_kib,
        others_max,
    }
}
