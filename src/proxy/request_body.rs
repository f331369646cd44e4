//! A client's request body read before it is forwarded (an MCP message, a tape's key, a
//! canary scan, an attack's rewrite): a bounded head, whole again with the rest of the
//! body, and an upload that broke kept broken, so that it still fails where it is
//! forwarded (answered 400 there, see `forward::ClientBodyError`). Built from
//! `http-body-util` bodies over `futures-util` streams: nothing here transforms a frame.

use bytes::{Bytes, BytesMut};
use futures_util::stream::{self, StreamExt};
use http_body_util::{BodyExt, BodyStream, Full, StreamBody};

use super::{BoxError, ProxyBody};

/// A request body read up to `limit` bytes: the bytes, and what is left of the body when
/// it is longer or failed (its next frame is then the error, kept for the forward path).
pub(super) async fn read_head(mut body: ProxyBody, limit: usize) -> (Bytes, Option<ProxyBody>) {
    let mut buf = BytesMut::new();
    loop {
        match body.frame().await {
            None => return (buf.freeze(), None),
            Some(Ok(frame)) => {
                if let Ok(d) = frame.into_data() {
                    buf.extend_from_slice(&d);
                }
                if buf.len() > limit {
                    return (buf.freeze(), Some(body));
                }
            }
            Some(Err(e)) => return (buf.freeze(), Some(failed(e))),
        }
    }
}

/// A body read in part, whole again: the bytes read, then the rest.
pub(super) fn rejoin(head: Bytes, rest: Option<ProxyBody>) -> ProxyBody {
    let head = Full::new(head).map_err(|n| match n {}).boxed();
    match rest {
        Some(rest) => {
            let both = StreamExt::chain(BodyStream::new(head), BodyStream::new(rest));
            BodyExt::boxed(StreamBody::new(both))
        }
        None => head,
    }
}

/// `head`, then `error`: a client's upload that broke after `head` arrived.
pub(super) fn broken_after(head: Bytes, error: BoxError) -> ProxyBody {
    rejoin(head, Some(failed(error)))
}

/// A body whose one frame is an error.
fn failed(error: BoxError) -> ProxyBody {
    BodyExt::boxed(StreamBody::new(stream::iter([Err(error)])))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(mut body: ProxyBody) -> Vec<Result<Bytes, String>> {
        let mut out = vec![];
        while let Some(f) = body.frame().await {
            out.push(f.map(|f| f.into_data().unwrap()).map_err(|e| e.to_string()));
        }
        out
    }

    #[tokio::test]
    async fn a_broken_upload_stays_broken_after_what_arrived() {
        let got = frames(broken_after(Bytes::from_static(b"ab"), "reset".into())).await;
        assert_eq!(got, [Ok(Bytes::from_static(b"ab")), Err("reset".into())]);
        // Nothing arrived: the error alone, no empty frame before it.
        let got = frames(broken_after(Bytes::new(), "reset".into())).await;
        assert_eq!(got, [Err("reset".into())]);
    }

    #[tokio::test]
    async fn a_body_read_in_part_is_whole_again() {
        let rest = Full::new(Bytes::from_static(b"cd"))
            .map_err(|n| match n {})
            .boxed();
        let got = frames(rejoin(Bytes::from_static(b"ab"), Some(rest))).await;
        let want = [Ok(Bytes::from_static(b"ab")), Ok(Bytes::from_static(b"cd"))];
        assert_eq!(got, want);
    }
}
