//! The web view (docs/web.md): `flakestorm serve`'s page at `/` on the control listener,
//! its assets built into the binary (`assets`), the session the page keeps instead of the
//! token (`login`), and the few reads the page needs beyond `/v1/*` (`reads`: a case's
//! timeline drawn by the HTML report's own code, two runs compared, the journal's recent
//! traffic, a run's tapes; `cases`: an ended run's cases and timelines from the store). Every route here passes the API's checks (`api::Extra`): the
//! page's Host and Origin as `/v1/*`'s, and its data the token or the session cookie.
//! Owns no run, rule or store logic: it calls `jobs`, `store`, `journal` and `report`.

mod assets;
mod cases;
mod login;
mod reads;
mod traffic;

use axum::Router;
use axum::routing::{get, post};

use crate::api::{ApiState, Extra};
use crate::journal::Journal;

/// What the view's handlers share: the API's state and the proxy's journal.
#[derive(Clone)]
pub struct UiState {
    pub api: ApiState,
    pub journal: Journal,
}

/// The view's routes for `api::router_with` (none when `control.ui` is false).
pub fn extra(state: UiState, on: bool) -> Extra {
    if !on {
        return Extra::default();
    }
    let page = Router::new()
        .route("/", get(assets::index))
        .route("/ui/{file}", get(assets::file))
        .layer(axum::middleware::from_fn(assets::hardened))
        .with_state(());
    let v1 = Router::new()
        .route("/ui/api/login", post(login::login))
        .route("/ui/api/logout", post(login::logout))
        .route("/ui/api/session", get(login::session))
        .route("/ui/api/runs", get(reads::runs))
        .route("/ui/api/compare", get(reads::compare))
        .route("/ui/api/timelines", get(reads::timelines))
        .route("/ui/api/runs/{id}/cases", get(cases::cases))
        .route("/ui/api/runs/{id}/tapes", get(reads::tapes))
        .route("/ui/api/runs/{id}/tapes/{name}", get(reads::tape))
        .route("/ui/api/traffic", get(traffic::recent))
        .layer(axum::middleware::from_fn(assets::hardened))
        .with_state(state);
    Extra { page, v1 }
}

/// The control listener's app: the API, with the view's routes when `on`.
pub fn app(api: ApiState, journal: Journal, on: bool) -> Router {
    let ui = UiState {
        api: api.clone(),
        journal,
    };
    crate::api::router_with(api, extra(ui, on))
}

/// The login link `serve` prints (when the view is `on`): the page, with the token in the
/// fragment (never sent to the server, never in its logs or a Referer); the page trades it
/// for the session cookie and drops it from the address bar. The token is percent-encoded
/// (the page decodes it), so one with `%`, `&` or `#` arrives as it is.
pub fn link(on: bool, control: std::net::SocketAddr, token: &str) -> Option<String> {
    if !on {
        return None;
    }
    let host = match control.ip() {
        ip if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        ip => ip,
    };
    let at = std::net::SocketAddr::new(host, control.port());
    let token = percent_encoding::utf8_percent_encode(token, crate::exchange::URL_UNRESERVED);
    Some(format!("http://{at}/#token={token}"))
}

/// The line `serve` prints for the view, when it is on.
pub fn announce(link: Option<&str>) -> String {
    link.map_or_else(String::new, |l| {
        format!("flakestorm: web view at {l} (the link carries the control token: share it as you would the token)\n")
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_link_carries_the_token_percent_encoded() {
        let at = "0.0.0.0:8081".parse().unwrap();
        assert_eq!(
            super::link(true, at, "a%b&c#d e/é").as_deref(),
            Some("http://127.0.0.1:8081/#token=a%25b%26c%23d%20e%2F%C3%A9")
        );
        assert_eq!(
            super::link(true, at, "Az09-._~").as_deref(),
            Some("http://127.0.0.1:8081/#token=Az09-._~"),
            "unreserved characters as they are"
        );
        assert_eq!(super::link(false, at, "t"), None);
    }
}
