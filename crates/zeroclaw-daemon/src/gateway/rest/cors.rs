//! Cross-origin access to the REST API (SPEC §23.2): none unless `gateway.cors_origins`
//! lists the request's `Origin` exactly; then its responses carry
//! `Access-Control-Allow-Origin` for it, and a preflight (`OPTIONS`) is answered with the
//! methods and headers the API takes. An origin not listed gets no such header, so a
//! browser keeps the response from its page.

use super::super::http::{RequestHead, Response};
use crate::state::Daemon;

/// The request's `Origin` when the configuration allows it.
pub(crate) fn allowed(daemon: &Daemon, head: &RequestHead) -> Option<String> {
    let origin = head.header("origin")?;
    let config = daemon.config.current();
    config
        .gateway
        .cors_origins
        .iter()
        .any(|o| o.eq_ignore_ascii_case(origin))
        .then(|| origin.to_owned())
}

/// `response` with the allow header for `origin`, when there is one.
pub(crate) fn apply(response: Response, origin: Option<&str>) -> Response {
    match origin {
        Some(origin) => response
            .with_header("Access-Control-Allow-Origin", origin)
            .with_header("Vary", "Origin"),
        None => response,
    }
}

/// The answer to a preflight: 204, with the allowances only for a listed origin.
pub(crate) fn preflight(origin: Option<&str>) -> Response {
    let response = Response::new(204, "text/plain", super::super::http::Body::Static(b""));
    match origin {
        Some(_) => apply(response, origin)
            .with_header("Access-Control-Allow-Methods", "GET, POST")
            .with_header(
                "Access-Control-Allow-Headers",
                "Authorization, Content-Type, Last-Event-ID",
            )
            .with_header("Access-Control-Max-Age", "600"),
        None => response,
    }
}
