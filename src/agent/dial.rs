//! How flakestorm's driver reaches the agent: a TCP connection from flakestorm's own
//! network, or, under `agent.capture: netns`, from a socket the agent's supervisor opened
//! inside the agent's namespace (`capture::Factory`), where the agent listens. A `Dialer`
//! is shared by an instance's driver, probes and HTTP client, and is pointed at the
//! namespace of the process running now (a restarted instance has a new one).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::capture::Factory;

/// Where the driver's connections to the agent are made. Cheap to clone; clones share it.
#[derive(Clone, Default, Debug)]
pub struct Dialer(Arc<RwLock<Option<Arc<Factory>>>>);

impl Dialer {
    /// From now on, connections are made inside the namespace `factory` opens sockets in
    /// (`None`: from flakestorm's own network).
    pub fn through(&self, factory: Option<Arc<Factory>>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = factory;
    }

    fn factory(&self) -> Option<Arc<Factory>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A connection to `host:port`, each address tried in turn.
    pub async fn connect(&self, host: &str, port: u16) -> io::Result<TcpStream> {
        let Some(factory) = self.factory() else {
            let stream = TcpStream::connect((host, port)).await?;
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        };
        // Names resolve here: the agent's addresses (loopback, as a rule) are the same in
        // its namespace.
        let mut last = None;
        for addr in tokio::net::lookup_host((host, port)).await? {
            match connect_in(&factory, addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("{host} has no address"))
        }))
    }
}

async fn connect_in(factory: &Factory, addr: SocketAddr) -> io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::from_std_stream(factory.socket(addr.is_ipv6()).await?);
    let stream = socket.connect(addr).await?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// The driver's HTTP client's connector (hyper's): connections through a [`Dialer`].
#[derive(Clone, Debug)]
pub struct Connector(pub Dialer);

type Connecting = Pin<Box<dyn Future<Output = io::Result<TokioIo<TcpStream>>> + Send>>;

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<TcpStream>;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Connecting {
        let dialer = self.0.clone();
        Box::pin(async move {
            let (host, port) = host_port(&uri)?;
            dialer.connect(&host, port).await.map(TokioIo::new)
        })
    }
}

/// A URL's host (brackets off an IPv6 literal) and port (the scheme's by default).
pub fn host_port(uri: &Uri) -> io::Result<(String, u16)> {
    let host = uri
        .host()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{uri} has no host")))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let https = uri.scheme_str() == Some("https");
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok((host.to_string(), port))
}
