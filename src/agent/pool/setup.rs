//! Starting a pool instance: its lane opened, its command started through it and ready
//! (at the start, for a spare, or to restart one).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use super::ports::log_of;
use super::{Instance, Setup};
use crate::agent::launch::{ProxyAt, start};
use crate::agent::{Agent, AgentProcess};
use crate::journal::ServeCapture;

impl Setup {
    /// Instance `number` on `port`: its lane opened, its command started and ready.
    pub(super) async fn instance(&self, number: usize, port: u16) -> Result<Instance, String> {
        let target = self.target.at_port(port);
        let log = log_of(&self.log, number);
        let lane = (self.open)()
            .await
            .map_err(|e| format!("no proxy lane: {e}"))?;
        let agent = Agent::new(&target, self.config.advanced.retries).map_err(|e| e.to_string())?;
        let at = ProxyAt {
            addr: lane.addr,
            ca_cert: &self.ca,
            wrap_dir: self.wrap_dir.as_deref(),
        };
        let agent = crate::agent::script::on_lane(agent, &self.config, &at, &log).await;
        let process = self.launch(&agent, lane.addr, &lane.capture, &log).await?;
        Ok(Instance {
            number,
            port,
            agent,
            lane: lane.lane,
            proxy: lane.addr,
            log,
            process: tokio::sync::Mutex::new(process),
            capture: lane.capture,
            tail: Mutex::new(None),
            _listener: lane.keep,
        })
    }

    /// Starts the instance's command (if any) through its lane and waits until it answers.
    pub(super) async fn launch(
        &self,
        agent: &Agent,
        lane: SocketAddr,
        capture: &ServeCapture,
        log: &Path,
    ) -> Result<Option<AgentProcess>, String> {
        let at = ProxyAt {
            addr: lane,
            ca_cert: &self.ca,
            wrap_dir: self.wrap_dir.as_deref(),
        };
        let target = agent.target();
        let process = start(&self.config, target, agent, at, Some(capture), log).await?;
        if let Err(e) = agent.preflight().await {
            if let Some(p) = process {
                let tail = p.tail();
                p.stop(Duration::from_secs(5)).await;
                return Err(format!("{e}{tail}"));
            }
            return Err(e.to_string());
        }
        Ok(process)
    }
}
