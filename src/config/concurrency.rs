//! `advanced.concurrency` when the user leaves it unset (issue #53): a default that fits the
//! agent's form, so that a run warns only of a concurrency the user set
//! (`crosscheck::warn_serial_cases`).

use super::schema::Config;

/// Cases in flight at once when `advanced.concurrency` is not set (see `Config::concurrency`).
pub const DEFAULT_CONCURRENCY: u32 = 10;

impl Config {
    /// Cases in flight at once: `advanced.concurrency` when set; else
    /// `DEFAULT_CONCURRENCY`, or 1 for one agent process with a `reset_endpoint`, where a
    /// reset before one case would wipe the state of another still running. (With one
    /// agent process under exclusive attribution, cases under chaos run one at a time
    /// whatever this says.)
    pub fn concurrency(&self) -> u32 {
        if let Some(n) = self.advanced.concurrency {
            return n;
        }
        let one_resetting = self
            .agent
            .as_ref()
            .is_some_and(|a| a.per_port.is_none() && a.reset_endpoint.is_some());
        match one_resetting {
            true => 1,
            false => DEFAULT_CONCURRENCY,
        }
    }
}
