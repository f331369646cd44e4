//! A captured TCP connection that is neither HTTP nor TLS (`agent.capture: netns`): relayed
//! to its destination untouched, and journaled as one `tcp` exchange of the case it opened
//! in, with its bytes each way, so a run shows what else the agent talked to (a database,
//! SMTP, a gRPC server without TLS) and a failed connection is evidence, not a silence.
//! The exchange does not hold its case open: a pooled connection may outlive many cases.

use http::{Method, Request, Uri};
use tokio::io::{AsyncRead, AsyncWrite};

use super::recorder::Recorder;
use super::tunnel::{self, Ended};
use super::{ConnCtx, Proxy};
use crate::exchange::{BodyEnd, Outcome, ResponseHead, Route, TcpBytes};

/// Connects to `authority` from the host, relays `client` to it until either side closes,
/// then journals the connection.
pub(super) async fn relay_journaled<C>(proxy: &Proxy, ctx: &ConnCtx, client: C, authority: &str)
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let Some((uri, req)) = head(authority) else {
        return;
    };
    let rec = Recorder::open(proxy, ctx, &req, &uri, Route::Tcp);
    let started = tokio::time::Instant::now();
    // Taken whole now: the case is the one it opened in, and it is not held open.
    let mut ex = rec.into_exchange();
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().unwrap_or_default();
    let timeout = proxy.settings().connect_timeout;
    ex.outcome = match proxy.inner.guard.connect(host, port, timeout).await {
        Err(e) => Outcome::Error {
            error: e.info(),
            status: None,
        },
        Ok(upstream) => {
            let r = tunnel::carry(proxy, client, upstream).await;
            let (sent, received) = (r.sent, r.received);
            let body = match r.ended {
                Ended::Closed => BodyEnd::Complete,
                Ended::ClientBroke(_) => BodyEnd::ClientDisconnected,
                Ended::UpstreamBroke(e) => BodyEnd::UpstreamAborted {
                    message: format!("the connection broke off: {e}"),
                },
                Ended::ShutDown => BodyEnd::ProxyAborted {
                    message: "flakestorm shut down".into(),
                },
            };
            ex.tcp = Some(TcpBytes { sent, received });
            ex.response_bytes = received;
            Outcome::Response {
                response: ResponseHead {
                    status: 0,
                    version: "TCP".into(),
                    headers: vec![],
                },
                body,
            }
        }
    };
    ex.timings.total_ms = started.elapsed().as_secs_f64() * 1000.0;
    proxy.journal().record(ex);
}

/// The exchange's request: `TCP tcp://host:port/`.
fn head(authority: &str) -> Option<(Uri, Request<()>)> {
    let uri: Uri = format!("tcp://{authority}/").parse().ok()?;
    let method = Method::from_bytes(b"TCP").ok()?;
    let req = Request::builder()
        .method(method)
        .uri(uri.clone())
        .version(http::Version::HTTP_11)
        .body(())
        .ok()?;
    Some((uri, req))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tcp_exchange_is_named_by_its_destination() {
        let (uri, req) = super::head("db.example:5432").unwrap();
        assert_eq!(uri.to_string(), "tcp://db.example:5432/");
        assert_eq!(req.method().as_str(), "TCP");
        assert!(super::head("bad authority").is_none());
    }
}
