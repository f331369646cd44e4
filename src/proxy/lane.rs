//! A pool instance's own listener (design.md §6): opened for a run on a free loopback port,
//! served by the same proxy as the main listener, every exchange arriving on it stamped with
//! its lane's current case. Closed when the run drops it, or with the proxy.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::Proxy;
use crate::journal::Lane;

/// An open lane listener; it stops taking connections when dropped.
pub struct LaneListener {
    pub addr: SocketAddr,
    pub lane: Lane,
    _stop: DropGuard,
}

impl Proxy {
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
                .serve_lane(listener, Some(served), until)
                .await;
            proxy.inner.guard.lane(addr, false);
        });
        Ok(LaneListener {
            addr,
            lane,
            _stop: stop.drop_guard(),
        })
    }
}
