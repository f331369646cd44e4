//! Where one request goes, read from its head alone, before anything else happens to it:
//! an exchange with an upstream URL (absolute-form, a request inside an intercepted tunnel,
//! or a `proxy.reverse` route, also when a client that follows the proxy variables names
//! the proxy itself), a `CONNECT` to a host and port, or a refusal (malformed, proxy
//! credentials missing or wrong, no route) that `rescue::reject` answers. The URL never
//! keeps credentials.

use http::header::{self, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Method, Request, Uri};

use super::headers::{self, AuthError};
use super::rescue::{ErrorKind, ProxyError};
use super::{ConnCtx, Proxy, ReverseRoute};
use crate::exchange::Route;

/// What a request is to the proxy.
pub(super) enum Routed {
    /// An exchange with the upstream at `uri`.
    Exchange { uri: Uri, route: Route },
    /// `CONNECT host:port`: a tunnel, intercepted or blind.
    Connect(Authority),
}

/// Routes `req`, noting its proxy user on `ctx`; a reverse route's request is rewritten
/// for its upstream (origin-form path, `Host`). The error: why the proxy refuses it.
pub(super) fn classify<B>(
    proxy: &Proxy,
    ctx: &mut ConnCtx,
    req: &mut Request<B>,
) -> Result<Routed, ProxyError> {
    well_formed(req)?;
    if let Some(authority) = ctx.tunnel.clone() {
        let (scheme, route) = match ctx.plain {
            true => (Scheme::HTTP, Route::Forward),
            false => (Scheme::HTTPS, Route::Intercepted),
        };
        let uri = rebuild(scheme, authority, req.uri());
        local_bridge(ctx, &uri)?;
        return Ok(Routed::Exchange { uri, route });
    }
    if req.method() != Method::CONNECT {
        if req.uri().scheme().is_none() {
            return reverse(proxy, req);
        }
        // A client with HTTP_PROXY exported sends a reverse route's request (an Ollama
        // client at http://127.0.0.1:8080/ollama) to the proxy in absolute form: that
        // route's, not a loop (the route lookup first: cheap, and almost always false).
        if route_of(proxy, req.uri().path()).is_some() && names_own(proxy, req.uri()) {
            let pq = req.uri().path_and_query().cloned();
            *req.uri_mut() = pq.map_or_else(|| Uri::from_static("/"), Uri::from);
            return reverse(proxy, req);
        }
    }
    let user = headers::proxy_user(req.headers(), &proxy.settings().users).map_err(auth_error)?;
    ctx.user = user.map(Into::into);
    if req.method() == Method::CONNECT {
        return connect_target(req.uri()).map(Routed::Connect);
    }
    let uri = without_userinfo(req.uri());
    local_bridge(ctx, &uri)?;
    Ok(Routed::Exchange {
        uri,
        route: Route::Forward,
    })
}

/// A stdio bridge (`flakestorm wrap`) runs on this host and is reached from it alone: a
/// client of a proxy that listens off loopback must not reach a local MCP server by a
/// bridge id it read in a report.
fn local_bridge(ctx: &ConnCtx, uri: &Uri) -> Result<(), ProxyError> {
    let bridge = uri.host().and_then(crate::mcp::stdio::bridge_of);
    match bridge.is_some() && !ctx.peer.ip().to_canonical().is_loopback() {
        true => Err(ProxyError::new(
            ErrorKind::ForbiddenTarget,
            "a stdio bridge (flakestorm wrap) is reachable only from this host",
        )),
        false => Ok(()),
    }
}

/// What hyper lets through but a proxy must refuse (400): more than one `Host` (RFC 9112
/// §3.2), and a port that is not 0..=65535 (else read as "no port": the scheme's default).
fn well_formed<B>(req: &Request<B>) -> Result<(), ProxyError> {
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        return Err(ProxyError::new(
            ErrorKind::BadRequest,
            "the request has more than one Host header (RFC 9112 §3.2)",
        ));
    }
    // CONNECT targets are checked by `connect_target` (400 `bad_connect_target`).
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

fn auth_error(e: AuthError) -> ProxyError {
    let message = match e {
        AuthError::Missing => {
            "proxy authentication required (Proxy-Authorization: Basic)".to_string()
        }
        AuthError::Malformed => {
            "malformed Proxy-Authorization header; expected Basic credentials".to_string()
        }
        AuthError::Rejected(name) => format!("proxy credentials for user `{name}` were rejected"),
    };
    ProxyError::new(ErrorKind::ProxyAuthRequired, message)
}

/// A `CONNECT` target: a host and a port from 1 to 65535.
fn connect_target(uri: &Uri) -> Result<Authority, ProxyError> {
    match uri
        .authority()
        .filter(|a| a.port_u16().is_some() && !bare_host(a).is_empty())
    {
        Some(a) => Ok(a.clone()),
        None => Err(ProxyError::new(
            ErrorKind::BadConnectTarget,
            format!(
                "CONNECT target must be host:port with a host and a port from 1 to 65535, got \
                 `{uri}`"
            ),
        )),
    }
}

/// The host of `a` without IPv6 brackets.
pub(super) fn bare_host(a: &Authority) -> &str {
    a.host().trim_start_matches('[').trim_end_matches(']')
}

/// The `proxy.reverse` route whose prefix `path` is under.
fn route_of<'a>(proxy: &'a Proxy, path: &str) -> Option<&'a ReverseRoute> {
    proxy.settings().reverse.iter().find(|r| {
        path.strip_prefix(r.prefix.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Whether `uri` (absolute-form) names one of the proxy's own listeners.
fn names_own(proxy: &Proxy, uri: &Uri) -> bool {
    let Some(a) = uri.authority() else {
        return false;
    };
    let port = a.port_u16().unwrap_or(match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    });
    proxy.inner.guard.names_own(a.host(), port)
}

/// An origin-form request: valid only under a `proxy.reverse` route, whose upstream it
/// goes to with the prefix removed (and that upstream's `Host`).
fn reverse<B>(proxy: &Proxy, req: &mut Request<B>) -> Result<Routed, ProxyError> {
    let path = req.uri().path().to_string();
    let Some(route) = route_of(proxy, &path) else {
        return Err(ProxyError::new(
            ErrorKind::BadRequest,
            format!(
                "`{path}` is not a proxy request: send absolute-form requests (http://host/path) or CONNECT \
                 (set HTTP_PROXY/HTTPS_PROXY), or add a proxy.reverse route for this prefix"
            ),
        ));
    };
    let up = &route.upstream;
    let rest = &path[route.prefix.len()..];
    let base = up.path().trim_end_matches('/');
    let query = req
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let pq = format!("{base}{}{query}", if rest.is_empty() { "/" } else { rest });
    let (Some(scheme), Some(authority)) = (up.scheme().cloned(), up.authority().cloned()) else {
        return Err(ProxyError::new(
            ErrorKind::Internal,
            "reverse route without host",
        ));
    };
    if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
        req.headers_mut().insert(header::HOST, host);
    }
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(authority)
        .path_and_query(pq)
        .build()
        .map_err(|e| ProxyError::new(ErrorKind::BadRequest, format!("bad path: {e}")))?;
    Ok(Routed::Exchange {
        uri,
        route: Route::Reverse,
    })
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

    #[test]
    fn a_stdio_bridge_is_refused_to_a_client_off_this_host() {
        let ctx = |peer: &str| ConnCtx {
            peer: peer.parse().unwrap(),
            peer_text: peer.into(),
            user: None,
            tunnel: None,
            plain: false,
            lane: None,
        };
        let bridge: Uri = "http://0123456789abcdef0123456789abcdef.stdio.flakestorm.invalid/files"
            .parse()
            .unwrap();
        assert!(local_bridge(&ctx("127.0.0.1:5000"), &bridge).is_ok());
        assert!(local_bridge(&ctx("[::1]:5000"), &bridge).is_ok());
        let e = local_bridge(&ctx("10.0.0.7:5000"), &bridge).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ForbiddenTarget);
        let other: Uri = "http://api.example/v1".parse().unwrap();
        assert!(local_bridge(&ctx("10.0.0.7:5000"), &other).is_ok());
    }
}
