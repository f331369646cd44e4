//! A pool instance's own listener (design.md §6): opened for a run on a free loopback port,
//! served by the same proxy as the main listener, every exchange arriving on it stamped with
//! its lane's current case. Closed when the run drops it, or with the proxy. `case_of`
//! is the one place an exchange is tied to its case: its lane's, else its `traceparent`.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::Proxy;
use super::listener::Arrival;
use crate::journal::{Lane, LaneAt, OpenLane};

/// An open lane listener; it stops taking connections when dropped.
pub struct LaneListener {
    pub addr: SocketAddr,
    pub lane: Lane,
    _stop: DropGuard,
}

impl Proxy {
    /// Opens lanes on this proxy for an agent pool (what a run session is given).
    pub fn lane_opener(&self) -> OpenLane {
        let proxy = self.clone();
        std::sync::Arc::new(move || {
            let proxy = proxy.clone();
            Box::pin(async move {
                let l = proxy.open_lane().await?;
                Ok(LaneAt {
                    addr: l.addr,
                    lane: l.lane.clone(),
                    capture: proxy.capture_server(l.lane.clone(), l.addr),
                    keep: Box::new(l),
                })
            })
        })
    }

    /// Opens a listener on a free port of the loopback interface for a new lane.
    pub async fn open_lane(&self) -> std::io::Result<LaneListener> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let lane = Lane::default();
        let stop = CancellationToken::new();
        let (proxy, served, ended) = (self.clone(), lane.clone(), stop.clone());
        let drain = self.inner.shutdown.drain.clone();
        self.inner.guard.lane(addr, true);
        tokio::spawn(async move {
            let until = async move {
                tokio::select! {
                    () = ended.cancelled() => {}
                    () = drain.cancelled() => {}
                }
            };
            proxy
                .clone()
                .serve_listener(listener, Some(served), until, Arrival::Proxy)
                .await;
            proxy.inner.guard.lane(addr, false);
        });
        Ok(LaneListener {
            addr,
            lane,
            _stop: stop.drop_guard(),
        })
    }

    /// The trace id of the case a request belongs to (design.md §6): its lane's case when the
    /// lane serves one (the listener says whose it is), else the W3C `traceparent` it carries.
    pub(super) fn case_of(&self, lane: Option<&Lane>, headers: &http::HeaderMap) -> Option<String> {
        let lane = lane.unwrap_or(self.journal().main_lane());
        if let Some(trace) = lane.current() {
            return Some(trace.to_string());
        }
        headers
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .and_then(crate::exchange::trace_id)
            .map(str::to_string)
    }
}
