//! The control API's own metric: failed authentications on `/v1/*` (a token guesser, or
//! a client with a stale token), so an alert can fire on them.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

pub(super) fn register(registry: &mut Registry) -> Counter {
    let failures = Counter::default();
    registry.register(
        "control_auth_failures",
        "Requests to the control API's /v1/* refused for a missing or wrong token",
        failures.clone(),
    );
    failures
}
