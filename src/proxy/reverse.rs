//! `proxy.reverse` routes: an origin-form request under a configured prefix (or an
//! absolute-form one naming the proxy's own listener under it) sent to that upstream with
//! the prefix removed, for clients that ignore or that follow the proxy variables.

use http::header::{self, HeaderValue};
use http::{Request, Response, Uri};
use hyper::body::Incoming;

use super::fault::Dropped;
use super::rescue::{ErrorKind, ProxyError};
use super::service::{ConnCtx, exchange, reject};
use super::{Proxy, ProxyBody, ReverseRoute};
use crate::exchange::Route;

/// The `proxy.reverse` route whose prefix `path` is under.
pub(super) fn route_of<'a>(proxy: &'a Proxy, path: &str) -> Option<&'a ReverseRoute> {
    proxy.settings().reverse.iter().find(|r| {
        path.strip_prefix(r.prefix.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Origin-form requests are only valid for `proxy.reverse` routes.
pub(super) async fn reverse(
    proxy: Proxy,
    ctx: ConnCtx,
    mut req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Dropped> {
    let path = req.uri().path().to_string();
    let Some(route) = route_of(&proxy, &path) else {
        let err = ProxyError::new(
            ErrorKind::BadRequest,
            format!(
                "`{path}` is not a proxy request: send absolute-form requests (http://host/path) or CONNECT \
                 (set HTTP_PROXY/HTTPS_PROXY), or add a proxy.reverse route for this prefix"
            ),
        );
        return Ok(reject(&proxy, &ctx, &req, err));
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
        return Ok(reject(
            &proxy,
            &ctx,
            &req,
            ProxyError::new(ErrorKind::Internal, "reverse route without host"),
        ));
    };
    if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
        req.headers_mut().insert(header::HOST, host);
    }
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(authority)
        .path_and_query(pq)
        .build();
    match uri {
        Ok(uri) => exchange(proxy, ctx, req, uri, Route::Reverse).await,
        Err(e) => Ok(reject(
            &proxy,
            &ctx,
            &req,
            ProxyError::new(ErrorKind::BadRequest, format!("bad path: {e}")),
        )),
    }
}
