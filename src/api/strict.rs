//! HTTP strictness on the control listener (RFC 9112 §3.2 and §3.2.2), before anything
//! else looks at a request: one `Host` header, and a host with a valid port in it and in
//! an absolute-form target. A server that picks the first of two `Host`s, or reads a
//! port `99999` as some port, may judge a request by another name than a proxy in front
//! of it did; such a request is a 400 that closes the connection. Whether a name is one
//! the API answers is `guard`'s question, on `/v1/*`.

use axum::extract::Request;
use axum::http::{HeaderMap, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

use super::ApiError;

/// The checks above, as axum middleware on the whole listener.
pub async fn well_formed(req: Request, next: Next) -> Result<Response, ApiError> {
    check(req.headers(), req.uri())?;
    Ok(next.run(req).await)
}

fn check(headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
    let mut hosts = headers.get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return Err(ApiError::BadRequest(
            "several Host headers: a request names one server (RFC 9112 §3.2)".into(),
        ));
    }
    if let Some(value) = first {
        let text = value
            .to_str()
            .map_err(|_| ApiError::BadRequest("the Host header is not text".into()))?;
        host_name(text).map_err(|why| ApiError::BadRequest(format!("Host: {why}")))?;
    }
    if let Some(authority) = uri.authority() {
        host_name(authority.as_str())
            .map_err(|why| ApiError::BadRequest(format!("the request target: {why}")))?;
    }
    Ok(())
}

/// The host part of a `Host` value or a target's authority (`[::1]:8081` -> `::1`), with
/// its port, if any, a number in 1..=65535; or why it is not one.
pub fn host_name(text: &str) -> Result<String, String> {
    let shown = super::guard::shown(text);
    let authority: axum::http::uri::Authority = text
        .parse()
        .map_err(|_| format!("{shown} is not a host[:port]"))?;
    if authority.as_str().contains('@') {
        return Err(format!("{shown} carries user information"));
    }
    if let Some(port) = text.rsplit_once(':').map(|(_, p)| p)
        && text
            .rsplit_once(']')
            .is_none_or(|(_, rest)| rest.contains(':'))
    {
        let valid = port.parse::<u16>().is_ok_and(|p| p != 0);
        if !valid {
            return Err(format!("{shown} has no valid port (1 to 65535)"));
        }
    }
    let name = authority.host();
    Ok(name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ports() {
        assert_eq!(host_name("127.0.0.1:8081").unwrap(), "127.0.0.1");
        assert_eq!(host_name("[::1]:8081").unwrap(), "::1");
        assert_eq!(host_name("[::1]").unwrap(), "::1");
        assert_eq!(host_name("localhost").unwrap(), "localhost");
        for bad in [
            "127.0.0.1:99999",
            "127.0.0.1:0",
            "127.0.0.1:",
            "127.0.0.1:80a",
            "[::1]:65536",
            "a@127.0.0.1",
            "a b",
        ] {
            assert!(host_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn one_host_header() {
        let mut h = HeaderMap::new();
        h.append(header::HOST, "127.0.0.1:1".parse().unwrap());
        assert!(check(&h, &Uri::from_static("/v1/runs")).is_ok());
        h.append(header::HOST, "evil.example".parse().unwrap());
        let e = check(&h, &Uri::from_static("/v1/runs")).unwrap_err();
        assert!(e.to_string().contains("several Host headers"), "{e}");
        let bad = Uri::from_static("http://127.0.0.1:99999/v1/runs");
        assert!(check(&HeaderMap::new(), &bad).is_err());
    }
}
