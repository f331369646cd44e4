//! Starting a pool instance: its lane opened, its command started through it and ready
//! (at the start, for a spare, or to restart one).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use super::ports::{self, log_of};
use super::{Instance, Setup};
use crate::agent::launch::{ProxyAt, start};
use crate::agent::{Agent, AgentProcess};
use crate::journal::ServeCapture;

/// How many ports an instance tries when the one it was given is taken as it starts.
const PORT_TRIES: usize = 3;

impl Setup {
    /// Instance `number` on a free port (`ports`): its lane opened, its command started
    /// and ready. When it fails to start because another process took its port
    /// meanwhile (something else listens there now), it starts again on another port, up
    /// to `PORT_TRIES` ports, saying so (`take_said`). Why not, with the port it last
    /// tried, if it could not.
    pub(super) async fn instance(&self, number: usize) -> Result<Instance, (u16, String)> {
        let mut port = ports::reserve_one().map_err(|e| (0, e))?;
        for tried in 1.. {
            let at = port.number;
            let why = match self.instance_on(number, port).await {
                Ok(instance) => return Ok(instance),
                Err(why) => why,
            };
            if tried == PORT_TRIES || !ports::taken(at) {
                return Err((at, why));
            }
            port = ports::reserve_one().map_err(|e| (at, e))?;
            let said = format!(
                "agent instance {number}: port {at} was taken by another process as it \
                 started (address in use), so it started again on port {}",
                port.number
            );
            tracing::warn!("{said}");
            self.said
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(said);
        }
        unreachable!("the loop returns by its last try")
    }

    /// What starting instances met that the run must say, taken.
    pub(super) fn take_said(&self) -> Vec<String> {
        std::mem::take(&mut *self.said.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Instance `number` on `port`: its lane opened, its command started and ready.
    async fn instance_on(&self, number: usize, port: ports::Reserved) -> Result<Instance, String> {
        let target = self.target.at_port(port.number);
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
            port: port.number,
            agent,
            lane: lane.lane,
            proxy: lane.addr,
            log,
            process: tokio::sync::Mutex::new(process),
            capture: lane.capture,
            tail: Mutex::new(None),
            _listener: lane.keep,
            _port: port,
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
