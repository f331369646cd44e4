//! Driving the agent under test: invoke its HTTP endpoint with a prompt (`invoke`), and
//! optionally start it with the proxy environment set (`spawn`). The driver's own calls
//! go straight to the agent, never through the proxy: faults are for the agent's
//! dependencies, not for the harness.

mod invoke;
mod spawn;

pub use invoke::{Agent, AgentError, InvokeError, Reply};
pub(crate) use invoke::{DirectClient, cause as root_cause, direct_client, head as body_head};
pub use spawn::{AgentProcess, Probe, SpawnError, proxy_env, url_probe, wait_ready};
