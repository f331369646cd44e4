//! Sockets opened inside the agent's namespace for flakestorm's own calls to the agent (its
//! `endpoint`, `ready_url`, `reset_endpoint`, which listen there): flakestorm asks over a
//! socket pair, the supervisor opens an unconnected TCP socket in the namespace, marks it
//! ([`MARK`]: the redirection rules let it through) and sends it back; flakestorm connects
//! it from its own event loop. A request is a line, `4 ID` or `6 ID`; its answer the line
//! `ok ID` with the socket attached, or `err ID WHY`. The number lets an answer left over
//! from a call given up on never be taken for another's.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UnixStream;

use super::{MARK, pass};

/// flakestorm's end: asks for sockets in the namespace.
#[derive(Debug)]
pub struct Factory {
    channel: tokio::sync::Mutex<Channel>,
}

#[derive(Debug)]
struct Channel {
    stream: UnixStream,
    counter: u64,
    /// Bytes of an answer line not yet complete.
    partial: Vec<u8>,
}

impl Factory {
    /// Over `channel`, its end of the pair.
    pub fn new(channel: OwnedFd) -> io::Result<Factory> {
        Ok(Factory {
            channel: tokio::sync::Mutex::new(Channel {
                stream: pass::tokio_stream(channel)?,
                counter: 0,
                partial: vec![],
            }),
        })
    }

    /// An unconnected TCP socket of the namespace, IPv6 or IPv4, non-blocking.
    pub async fn socket(&self, v6: bool) -> io::Result<std::net::TcpStream> {
        let mut c = self.channel.lock().await;
        c.counter += 1;
        let id = c.counter;
        let family = if v6 { '6' } else { '4' };
        pass::send_async(&c.stream, format!("{family} {id}\n").as_bytes(), &[]).await?;
        let mut buf = [0u8; 512];
        loop {
            let (n, fds) = pass::recv_async(&c.stream, &mut buf).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the agent's network namespace is gone (its supervisor exited)",
                ));
            }
            c.partial.extend_from_slice(&buf[..n]);
            // A socket comes with the one `ok` line of what was read; other lines are
            // answers to requests given up on.
            let mut fd = fds.into_iter().next();
            while let Some(end) = c.partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = c.partial.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                let mut words = line.trim_end().splitn(3, ' ');
                let (word, answer) = (words.next(), words.next());
                let socket = if word == Some("ok") { fd.take() } else { None };
                if answer.and_then(|a| a.parse().ok()) != Some(id) {
                    continue;
                }
                return match socket {
                    Some(fd) => {
                        let stream = std::net::TcpStream::from(fd);
                        stream.set_nonblocking(true)?;
                        Ok(stream)
                    }
                    None => Err(io::Error::other(format!(
                        "no socket in the agent's network namespace: {}",
                        words.next().unwrap_or("no reason given")
                    ))),
                };
            }
        }
    }
}

/// The supervisor's end: answers requests until flakestorm closes its end.
pub async fn serve(channel: OwnedFd) {
    let Ok(stream) = pass::tokio_stream(channel) else {
        return;
    };
    let (read, write) = stream.into_split();
    let stream: &UnixStream = write.as_ref();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(read));
    while let Ok(Some(line)) = lines.next_line().await {
        let (family, id) = line.split_once(' ').unwrap_or((&line, "0"));
        let reply = match open(family == "6") {
            Ok(socket) => {
                let fd = OwnedFd::from(socket);
                pass::send_async(stream, format!("ok {id}\n").as_bytes(), &[fd.as_fd()]).await
            }
            Err(e) => pass::send_async(stream, format!("err {id} {e}\n").as_bytes(), &[]).await,
        };
        if reply.is_err() {
            return;
        }
    }
}

/// A TCP socket that the namespace's rules let through.
fn open(v6: bool) -> io::Result<Socket> {
    let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    #[cfg(target_os = "linux")]
    socket.set_mark(MARK)?;
    Ok(socket)
}
