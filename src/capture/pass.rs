//! Sockets handed between processes over a Unix socket (SCM_RIGHTS, through rustix's safe
//! `sendmsg`/`recvmsg`): the supervisor, inside the agent's namespace, gives flakestorm the
//! capture sockets and the sockets it opens there on request. Received descriptors are
//! close-on-exec, so no process flakestorm starts inherits them.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};
use tokio::io::Interest;

/// The most descriptors one message carries.
pub const MAX_FDS: usize = 4;

/// Sends `bytes` with `fds` attached on `socket`.
pub fn send(socket: impl AsFd, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many descriptors for one message"));
    }
    let sent = sendmsg(
        socket,
        &[IoSlice::new(bytes)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    match sent == bytes.len() {
        true => Ok(()),
        false => Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "message cut short",
        )),
    }
}

/// Receives one message into `buf`: its length (0: the other end closed) and the
/// descriptors that came with it.
pub fn recv(socket: impl AsFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        socket,
        &mut [IoSliceMut::new(buf)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = vec![];
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    Ok((got.bytes, fds))
}

/// [`recv`] on a socket of tokio's, waiting until a message is there.
pub async fn recv_async(
    socket: &tokio::net::UnixStream,
    buf: &mut [u8],
) -> io::Result<(usize, Vec<OwnedFd>)> {
    loop {
        socket.readable().await?;
        match socket.try_io(Interest::READABLE, || recv(socket, buf)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            result => return result,
        }
    }
}

/// [`send`] on a socket of tokio's, waiting until it takes the message.
pub async fn send_async(
    socket: &tokio::net::UnixStream,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    loop {
        socket.writable().await?;
        match socket.try_io(Interest::WRITABLE, || send(socket, bytes, fds)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            result => return result,
        }
    }
}

/// A std socket (`fd`) as tokio's.
pub fn tokio_stream(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let s = std::os::unix::net::UnixStream::from(fd);
    s.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_socket_crosses_with_its_message() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut x, y) = UnixStream::pair().unwrap();
        send(&a, b"netns\n", &[y.as_fd()]).unwrap();
        drop(y);
        let mut buf = [0u8; 64];
        let (n, fds) = recv(&b, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"netns\n");
        let [fd] = <[OwnedFd; 1]>::try_from(fds).unwrap();
        let mut y = UnixStream::from(fd);
        x.write_all(b"hi").unwrap();
        let mut got = [0u8; 2];
        y.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hi");
    }
}
