//! Reading one HTTP/1 response off a raw connection, leniently enough to report what a
//! misbehaving agent sent and strictly enough to tell a well-formed reply from one that is
//! not: the head, then a body framed by Content-Length, chunked coding, or the close
//! (RFC 9112 §6.3). Whatever arrived is kept in `Partial`, so a deadline that cuts the read
//! short still leaves the status and head to report.

use tokio::io::{AsyncRead, AsyncReadExt};

/// The most of a body kept; the rest is not read.
pub(super) const BODY_CAP: usize = 1 << 20;
/// A response head larger than this is not an answer anyone should parse.
const HEAD_CAP: usize = 64 << 10;
/// A chunk-size or trailer line larger than this is malformed.
const LINE_CAP: usize = 4 << 10;

pub(super) const CLOSED: &str = "connection closed before a response";
pub(super) const RESET: &str = "connection reset before a response";
pub(crate) const CAPPED: &str = "body over 1 MiB: the first 1 MiB kept, the rest not read";

/// What has been read so far.
#[derive(Debug, Default)]
pub(super) struct Partial {
    pub status: Option<u16>,
    pub head: String,
    pub body: Vec<u8>,
    /// A remark on a complete response (the body cap).
    pub note: Option<String>,
    /// The connection (and TLS) was established before anything was written.
    pub delivered: bool,
}

/// The unread input of a connection.
struct Input<'a, R> {
    r: &'a mut R,
    buf: Vec<u8>,
    /// Whether any byte has arrived.
    any: bool,
}

impl<R: AsyncRead + Unpin> Input<'_, R> {
    /// Reads more into `buf`; false at end of input.
    async fn more(&mut self) -> std::io::Result<bool> {
        let mut tmp = [0u8; 16 << 10];
        let n = self.r.read(&mut tmp).await?;
        self.buf.extend_from_slice(&tmp[..n]);
        self.any |= n > 0;
        Ok(n > 0)
    }

    /// One line without its line ending (CRLF, or a bare LF tolerated).
    async fn line(&mut self, what: &str) -> Result<Vec<u8>, String> {
        loop {
            if let Some(at) = memchr::memchr(b'\n', &self.buf) {
                let mut line: Vec<u8> = self.buf.drain(..=at).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.buf.len() > LINE_CAP {
                return Err(format!("{what} line over {} KiB", LINE_CAP >> 10));
            }
            match self.more().await {
                Ok(true) => {}
                Ok(false) => return Err(format!("connection closed in the middle of the {what}")),
                Err(e) => return Err(format!("reading the {what}: {e}")),
            }
        }
    }
}

/// Reads one final response (1xx interim responses skipped) into `out`. `head_request`:
/// the request was HEAD, so the response has no body whatever its headers say.
pub(super) async fn read_response<R: AsyncRead + Unpin>(
    r: &mut R,
    head_request: bool,
    out: &mut Partial,
) -> Result<(), String> {
    let mut input = Input {
        r,
        buf: Vec::new(),
        any: false,
    };
    let (status, headers) = loop {
        let (status, headers) = read_head(&mut input, out).await?;
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        break (status, headers);
    };
    out.status = Some(status);
    if head_request || (100..200).contains(&status) || status == 204 || status == 304 {
        return Ok(());
    }
    let values = |name: &str| {
        headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    let te = values("transfer-encoding");
    if let Some(last) = te.last() {
        let chunked = last
            .rsplit(',')
            .next()
            .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        return if chunked {
            read_chunked(&mut input, out).await
        } else {
            read_to_close(&mut input, out).await
        };
    }
    let lengths = values("content-length");
    if lengths.is_empty() {
        return read_to_close(&mut input, out).await;
    }
    let parsed: Vec<Option<u64>> = lengths
        .iter()
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().parse::<u64>().ok())
        .collect();
    match parsed.first() {
        Some(Some(n)) if parsed.iter().all(|p| *p == Some(*n)) => {
            read_exact(&mut input, out, *n, "body").await
        }
        _ => Err(format!(
            "malformed response: Content-Length {}",
            lengths.join(", ")
        )),
    }
}

/// The status and header fields of one response head.
async fn read_head<R: AsyncRead + Unpin>(
    input: &mut Input<'_, R>,
    out: &mut Partial,
) -> Result<(u16, Vec<(String, String)>), String> {
    let end = loop {
        // Say "not HTTP" as soon as the first bytes show it, rather than wait for a head
        // that will never end.
        let start = &input.buf[..input.buf.len().min(5)];
        if !b"HTTP/".starts_with(start) {
            out.head = super::answer::head(&input.buf);
            return Err(format!("the reply is not HTTP: it starts {:?}", out.head));
        }
        if let Some(end) = head_end(&input.buf) {
            break end;
        }
        if input.buf.len() > HEAD_CAP {
            return Err(format!("response head over {} KiB", HEAD_CAP >> 10));
        }
        match input.more().await {
            Ok(true) => {}
            Ok(false) if !input.any => return Err(CLOSED.into()),
            Ok(false) => return Err("connection closed in the middle of the response head".into()),
            Err(e) if !input.any && e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Err(RESET.into());
            }
            Err(e) => return Err(format!("reading the response head: {e}")),
        }
    };
    let raw: Vec<u8> = input.buf.drain(..end.1).collect();
    let text = String::from_utf8_lossy(&raw[..end.0]).into_owned();
    out.head.clone_from(&text);
    let mut lines = text.lines();
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let code = parts.next().unwrap_or_default();
    let status = match code.parse::<u16>() {
        Ok(s) if version.starts_with("HTTP/1.") && code.len() == 3 && s >= 100 => s,
        _ => return Err(format!("malformed status line {status_line:?}")),
    };
    let mut headers = vec![];
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("malformed response header line {line:?}"));
        };
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    Ok((status, headers))
}

/// Where the head ends: (end of its last line, start of the body). CRLF CRLF, or LF LF.
fn head_end(buf: &[u8]) -> Option<(usize, usize)> {
    let crlf = memchr::memmem::find(buf, b"\r\n\r\n").map(|i| (i, i + 4));
    let lf = memchr::memmem::find(buf, b"\n\n").map(|i| (i, i + 2));
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Keeps `data` up to the cap; false once the cap is reached.
fn keep(out: &mut Partial, data: &[u8]) -> bool {
    let room = BODY_CAP.saturating_sub(out.body.len());
    out.body.extend_from_slice(&data[..data.len().min(room)]);
    if data.len() > room {
        out.note = Some(CAPPED.into());
        return false;
    }
    true
}

async fn read_exact<R: AsyncRead + Unpin>(
    input: &mut Input<'_, R>,
    out: &mut Partial,
    n: u64,
    what: &str,
) -> Result<(), String> {
    let mut left = n;
    loop {
        let take = input
            .buf
            .len()
            .min(usize::try_from(left).unwrap_or(usize::MAX));
        let data: Vec<u8> = input.buf.drain(..take).collect();
        left -= take as u64;
        if !keep(out, &data) {
            return Ok(());
        }
        if left == 0 {
            return Ok(());
        }
        match input.more().await {
            Ok(true) => {}
            Ok(false) => {
                return Err(format!(
                    "connection closed after {} of {n} {what} bytes",
                    n - left
                ));
            }
            Err(e) => return Err(format!("reading the {what}: {e}")),
        }
    }
}

async fn read_to_close<R: AsyncRead + Unpin>(
    input: &mut Input<'_, R>,
    out: &mut Partial,
) -> Result<(), String> {
    loop {
        let data = std::mem::take(&mut input.buf);
        if !keep(out, &data) {
            return Ok(());
        }
        match input.more().await {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(format!("reading the body: {e}")),
        }
    }
}

async fn read_chunked<R: AsyncRead + Unpin>(
    input: &mut Input<'_, R>,
    out: &mut Partial,
) -> Result<(), String> {
    loop {
        let line = input.line("chunk size").await?;
        let text = String::from_utf8_lossy(&line);
        let size = text.split(';').next().unwrap_or_default().trim();
        let Ok(n) = u64::from_str_radix(size, 16) else {
            return Err(format!("malformed chunk size {text:?}"));
        };
        if n == 0 {
            while !input.line("trailer").await?.is_empty() {}
            return Ok(());
        }
        read_exact(input, out, n, "chunk").await?;
        if out.note.is_some() {
            return Ok(());
        }
        if !input.line("chunk end").await?.is_empty() {
            return Err("a chunk is not followed by CRLF".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8], head_request: bool) -> (Partial, Result<(), String>) {
        let mut out = Partial::default();
        let mut r = bytes;
        let res = read_response(&mut r, head_request, &mut out).await;
        (out, res)
    }

    #[tokio::test]
    async fn frames_by_length_chunks_or_close() {
        let (p, r) = read(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiEXTRA",
            false,
        )
        .await;
        assert_eq!((p.status, &p.body[..], r), (Some(200), &b"hi"[..], Ok(())));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nhi\r\n1\r\n!\r\n0\r\nT: 1\r\n\r\n";
        let (p, r) = read(chunked, false).await;
        assert_eq!((&p.body[..], r), (&b"hi!"[..], Ok(())));
        let (p, r) = read(b"HTTP/1.0 400 Bad\r\n\r\nuntil close", false).await;
        assert_eq!(
            (p.status, &p.body[..], r),
            (Some(400), &b"until close"[..], Ok(()))
        );
        let (p, r) = read(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No\r\n\r\n",
            false,
        )
        .await;
        assert_eq!((p.status, r), (Some(204), Ok(())));
        let (p, r) = read(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true).await;
        assert_eq!((p.status, p.body.len(), r), (Some(200), 0, Ok(())));
    }

    #[tokio::test]
    async fn malformed_and_short_replies_say_why() {
        let cases: [(&[u8], &str); 7] = [
            (b"", CLOSED),
            (b"SSH-2.0-x\r\n", "the reply is not HTTP"),
            (b"HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
                "connection closed after 2 of 5",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                "malformed response: Content-Length 1, 2",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "malformed chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Le",
                "connection closed in the middle of the response head",
            ),
        ];
        for (bytes, want) in cases {
            let (_, r) = read(bytes, false).await;
            let e = r.expect_err(want);
            assert!(e.starts_with(want), "{e:?} for {want:?}");
        }
    }

    /// Seeded junk after plausible heads: every input ends in a verdict, never a panic.
    #[tokio::test]
    async fn any_reply_is_read_without_panicking() {
        let prefixes: [&[u8]; 5] = [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: ",
            b"HTTP/1.1 ",
            b"HTTP/1.0 100 Continue\r\n\r\n",
            b"",
        ];
        let alphabet = b"0123456789abcdefxz;: \r\n\r\nHTTP/1.1 ";
        for i in 0..2_000u32 {
            let mut d =
                crate::mutate::Draw::new(9, crate::mutate::kind::MutationType::Noise, "raw", i);
            let mut bytes = prefixes[d.below(prefixes.len())].to_vec();
            for _ in 0..d.below(64) {
                bytes.push(match d.below(4) {
                    0 => d.next_u64() as u8,
                    _ => alphabet[d.below(alphabet.len())],
                });
            }
            let (p, r) = read(&bytes, d.chance(0.1)).await;
            assert!(r.is_ok() || p.note.is_none(), "{bytes:?}");
        }
    }

    #[tokio::test]
    async fn a_large_body_is_capped_and_noted() {
        let mut bytes = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            BODY_CAP + 10
        )
        .into_bytes();
        bytes.resize(bytes.len() + BODY_CAP + 10, b'x');
        let (p, r) = read(&bytes, false).await;
        assert_eq!(
            (p.body.len(), p.note.as_deref(), r),
            (BODY_CAP, Some(CAPPED), Ok(()))
        );
    }
}
