//! Driving the agent under test: invoke its HTTP endpoint with a prompt (`invoke`), send it
//! raw bytes for the wire-level mutations (`raw`), and
//! optionally start it with the proxy environment set (`spawn`; without the control token,
//! `withheld`) under a supervisor that
//! stops it when flakestorm ends (`supervise`), or when its handle is dropped, off the
//! async threads (`interrupt`), and ready it for a run (`launch`,
//! `ready`), or a pool of instances each behind its own proxy lane (`pool`); hear when the
//! agent says a case is over (`settle_said`). The driver's own calls
//! go straight to the agent, never through the proxy: faults are for the agent's
//! dependencies, not for the harness. An agent that is a script is run once per case
//! instead (`script`), each run through its case's lane.

mod answer;
mod dial;
mod interrupt;
mod invoke;
mod launch;
mod notes;
mod pool;
mod raw;
mod raw_response;
mod ready;
mod reset;
mod script;
mod settle_said;
mod spawn;
mod supervise;
mod withheld;

pub use answer::{AnswersRead, extract, render};
pub(crate) use answer::{cause as root_cause, head as body_head};
pub use dial::Dialer;
pub use interrupt::stopped;
pub use invoke::{Agent, AgentError, FailedAttempt, InvokeError, Reply};
pub(crate) use invoke::{DirectClient, direct_client};
pub use launch::{LaunchError, Launched, Process, ProxyAt, launch};
pub use pool::{Lease, Pool, Tail};
pub use raw::{RawOptions, RawReply, send_raw, send_raw_with};
#[cfg(test)]
pub(crate) use raw_response::CAPPED as RAW_BODY_CAPPED;
pub use ready::{Probe, url_probe, url_probe_via, wait_ready};
pub use reset::shown_url;
pub use settle_said::{SETTLE_DONE, SETTLE_HEADER};
pub use spawn::{AgentProcess, SpawnError, log_tail, proxy_env, with_user_env};
pub use supervise::{own_binary, supervise, supervise_with};
pub use withheld::{vars_holding, withhold_env};
