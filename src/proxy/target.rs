//! The request target as the proxy reads it: what hyper lets through but a proxy must
//! refuse, the URL without its credentials, and a tunnel's target rebuilt as a URL.

use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Method, Request, Uri, header};

use super::rescue::{ErrorKind, ProxyError};

/// What hyper lets through but a proxy must refuse (400): more than one `Host` (RFC 9112
/// §3.2), and a port that is not 0..=65535 (else read as "no port": the scheme's default).
pub(super) fn well_formed<B>(req: &Request<B>) -> Result<(), ProxyError> {
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        return Err(ProxyError::new(
            ErrorKind::BadRequest,
            "the request has more than one Host header (RFC 9112 §3.2)",
        ));
    }
    // CONNECT targets are checked by `connect` (400 `bad_connect_target`).
    if let Some(a) = req
        .uri()
        .authority()
        .filter(|_| req.method() != Method::CONNECT)
        && let Some(port) = port_text(a)
        && !port.is_empty()
        && port.parse::<u16>().is_err()
    {
        return Err(ProxyError::new(
            ErrorKind::BadRequest,
            format!(
                "port `{port}` in `{}` is not a number from 0 to 65535",
                a.host()
            ),
        ));
    }
    Ok(())
}

/// The text after the host's `:` in an authority (userinfo and IPv6 brackets skipped).
fn port_text(a: &Authority) -> Option<&str> {
    let s = a.as_str();
    let hostport = s.rsplit_once('@').map_or(s, |(_, h)| h);
    let after_host = match hostport.rfind(']') {
        Some(i) => &hostport[i + 1..],
        None => hostport,
    };
    after_host.rsplit_once(':').map(|(_, p)| p)
}

/// `uri` without `user:password@`: credentials in a URL must reach no log, journal or
/// upstream pool key (origin-form requests never carried them to the origin anyway).
pub(super) fn without_userinfo(uri: &Uri) -> Uri {
    let Some(a) = uri.authority().filter(|a| a.as_str().contains('@')) else {
        return uri.clone();
    };
    let bare = a.as_str().rsplit_once('@').map_or(a.as_str(), |(_, h)| h);
    let mut parts = uri.clone().into_parts();
    parts.authority = bare.parse().ok();
    Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

/// `{scheme}://{tunnel target}{path}`, the port dropped only when it is the scheme's default.
pub(super) fn rebuild(scheme: Scheme, authority: Authority, uri: &Uri) -> Uri {
    let default = if scheme == Scheme::HTTP { 80 } else { 443 };
    let authority = match authority.port_u16() {
        Some(p) if p == default => authority.host().parse().unwrap_or(authority),
        _ => authority,
    };
    let pq = uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    Uri::from_parts({
        let mut p = http::uri::Parts::default();
        p.scheme = Some(scheme);
        p.authority = Some(authority);
        p.path_and_query = Some(pq);
        p
    })
    .unwrap_or_else(|_| uri.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tunnel's target keeps its port unless it is the scheme's default: plain HTTP in a
    /// `CONNECT host:443` still goes to 443.
    #[test]
    fn a_tunnel_target_drops_only_its_schemes_default_port() {
        let at = |scheme: Scheme, target: &str| {
            rebuild(scheme, target.parse().unwrap(), &Uri::from_static("/x")).to_string()
        };
        assert_eq!(at(Scheme::HTTPS, "h:443"), "https://h/x");
        assert_eq!(at(Scheme::HTTP, "h:80"), "http://h/x");
        assert_eq!(at(Scheme::HTTP, "h:443"), "http://h:443/x");
        assert_eq!(at(Scheme::HTTPS, "h:8443"), "https://h:8443/x");
    }

    #[test]
    fn port_text_skips_userinfo_and_ipv6_brackets() {
        let port = |a: &str| port_text(&a.parse().unwrap()).map(str::to_string);
        assert_eq!(port("h:99999").as_deref(), Some("99999"));
        assert_eq!(port("[::1]:65536").as_deref(), Some("65536"));
        assert_eq!(port("[::1]"), None);
        assert_eq!(port("u:pw@h"), None);
        assert_eq!(port("u:pw@h:8080").as_deref(), Some("8080"));
    }

    #[test]
    fn userinfo_is_dropped_and_nothing_else_changes() {
        let uri: Uri = "http://agent:s3cret@api.example:8080/v1/x?q=1"
            .parse()
            .unwrap();
        assert_eq!(
            without_userinfo(&uri).to_string(),
            "http://api.example:8080/v1/x?q=1"
        );
        let plain: Uri = "http://api.example/v1".parse().unwrap();
        assert_eq!(without_userinfo(&plain), plain);
    }
}
