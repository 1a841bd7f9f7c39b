//! The REST routes of the gateway (SPEC §23.2), under `/api/v1/`:
//!
//! - `POST /api/v1/METHOD` for every method that is not local-only, the JSON body its
//!   params → 200 with the result;
//! - the resource routes of [`zeroclaw_protocol::rest::ROUTES`] (sessions, prompt, cancel,
//!   approvals, diff), their path segments and query or body made into the method's params;
//! - `GET /api/v1/sessions/{id}/events`: the session's stream as Server-Sent Events
//!   ([`sse`]);
//! - `GET /api/v1/openapi.json`: the document built from the method table.
//!
//! Every call is authenticated and run exactly as `POST /rpc` runs it
//! ([`super::post::authenticate`], [`super::post::run`]: the one request path); errors are
//! `{error: {code, message, data}}` with the status of [`zeroclaw_protocol::rest::http_status`].

mod call;
mod cors;
pub(crate) mod sse;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use zeroclaw_protocol::rest::{self, PREFIX, ParamsFrom};
use zeroclaw_protocol::{Method, SESSION_UPDATE};
use zeroclaw_rpc::ErrorObject;

use super::http::{RequestHead, Response};
use super::post::{self, PostState};
use crate::caller::ConnectionContext;
use crate::request::{self, Call, Front};
use crate::state::Daemon;
use call::{error_response, outcome_of, request_of, run_call};

/// How long `?wait=false` waits for its turn to start (a turn queued behind another
/// starts when that one ends).
const START_WITHIN: Duration = Duration::from_secs(60);

/// Whether the request is for a REST route.
pub(crate) fn is_rest(head: &RequestHead) -> bool {
    head.path().starts_with(PREFIX)
}

/// Whether this route reads the request's body (a REST `POST` does).
pub(crate) fn reads_body(head: &RequestHead) -> bool {
    head.method == "POST" && is_rest(head)
}

/// The served OpenAPI document, built once.
fn openapi() -> &'static [u8] {
    static DOC: OnceLock<Vec<u8>> = OnceLock::new();
    DOC.get_or_init(|| serde_json::to_vec(&rest::openapi()).unwrap_or_default())
}

fn bad_params(message: impl Into<String>) -> Response {
    error_response(&ErrorObject::invalid_params(message))
}

/// A path that names no route and no method: 404 (whose code, -32601, would map to 500).
fn not_found(what: &str) -> Response {
    let error = ErrorObject::new(-32601, format!("no REST route {what}"));
    Response::json(
        404,
        serde_json::to_vec(&json!({ "error": error })).unwrap_or_default(),
    )
}

/// Answers one REST request; `None` when the connection must close without (another)
/// answer: the body did not arrive, or an event stream ran and ended. A listed origin's
/// responses allow it ([`cors`]).
pub(crate) async fn handle<S>(
    daemon: &Arc<Daemon>,
    stream: &mut S,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    state: &mut PostState,
) -> Option<Response>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let origin = cors::allowed(daemon, head);
    if head.method == "OPTIONS" {
        return Some(cors::preflight(origin.as_deref()));
    }
    let response = answer(daemon, stream, buf, head, state, origin.as_deref()).await;
    response.map(|r| cors::apply(r, origin.as_deref()))
}

async fn answer<S>(
    daemon: &Arc<Daemon>,
    stream: &mut S,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    state: &mut PostState,
    origin: Option<&str>,
) -> Option<Response>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let path = head.path();
    let http = head.method.as_str();
    if path == "/api/v1/openapi.json" {
        return Some(match http {
            "GET" | "HEAD" => Response::json(200, openapi().to_vec()),
            _ => Response::text(405, "GET the document").with_header("Allow", "GET"),
        });
    }
    let ctx = match post::authenticate(daemon, head, state) {
        Ok(ctx) => ctx,
        Err(response) => return Some(response),
    };
    let body = match http {
        "POST" => match post::read_body(stream, buf, head, state).await {
            Ok(body) => body,
            Err(response) => return response,
        },
        _ => Vec::new(),
    };
    if http == "GET"
        && let Some(values) = rest::match_pattern(rest::EVENTS_PATH, path)
    {
        let session_id = values.first().copied().unwrap_or_default().to_owned();
        return sse::serve(daemon, stream, head, state, &ctx, session_id, origin).await;
    }
    let mut params = match http {
        "POST" => match body_params(&body) {
            Ok(params) => params,
            Err(response) => return Some(response),
        },
        _ => query_params(head),
    };
    if let Some((route, values)) = rest::match_route(http, path) {
        for (name, value) in route.path_params.iter().zip(values) {
            params.insert((*name).to_owned(), Value::String(percent_decode(value)));
        }
        let (method, from) = (route.method, route.from);
        if method == Method::SessionPrompt && query_flag(head, "wait") == Some(false) {
            return Some(prompt_started(daemon, state, &ctx, params).await);
        }
        debug_assert!(from == ParamsFrom::Query || http == "POST");
        return Some(call(daemon, &ctx, method.name(), params).await);
    }
    let name = path.strip_prefix(PREFIX).unwrap_or_default();
    match (http, Method::from_name(name)) {
        ("POST", Some(_)) => Some(call(daemon, &ctx, name, params).await),
        (_, Some(_)) => Some(
            Response::text(405, "POST the method's params as JSON").with_header("Allow", "POST"),
        ),
        (_, None) => Some(not_found(path)),
    }
}

/// The body as params: absent is `{}`, else a JSON object.
fn body_params(body: &[u8]) -> Result<Map<String, Value>, Response> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(params)) => Ok(params),
        Ok(_) => Err(bad_params(
            "body: expected a JSON object (the method's params)",
        )),
        Err(e) => Err(error_response(&ErrorObject::parse_error(format!(
            "body: not JSON: {e}"
        )))),
    }
}

/// The query string as params: a value that reads as a JSON number, boolean or null is
/// sent as one, any other as a string.
fn query_params(head: &RequestHead) -> Map<String, Value> {
    let Some((_, query)) = head.target.split_once('?') else {
        return Map::new();
    };
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value);
            let value = match serde_json::from_str::<Value>(&value) {
                Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => v,
                _ => Value::String(value),
            };
            (percent_decode(name), value)
        })
        .collect()
}

/// A boolean query parameter, when present.
fn query_flag(head: &RequestHead, name: &str) -> Option<bool> {
    let (_, query) = head.target.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
        .map(|v| !matches!(v, "false" | "0" | "no"))
}

/// `%XX` and `+` decoded; a bad escape is kept as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn call(
    daemon: &Arc<Daemon>,
    ctx: &Arc<ConnectionContext>,
    name: &str,
    params: Map<String, Value>,
) -> Response {
    match run_call(daemon, ctx, name, params).await {
        Ok(result) => Response::json(200, serde_json::to_vec(&result).unwrap_or_default()),
        Err(error) => error_response(&error),
    }
}

/// `POST /api/v1/sessions/{id}/prompt?wait=false`: the prompt runs on in a task of its
/// own; 202 `{turnId}` once its turn started (its `user_message`, which the prompting
/// context receives), or the prompt's error when it was refused.
async fn prompt_started(
    daemon: &Arc<Daemon>,
    state: &PostState,
    ctx: &Arc<ConnectionContext>,
    params: Map<String, Value>,
) -> Response {
    let Some(tap) = state.tap() else {
        return error_response(&ErrorObject::internal("no caller context"));
    };
    let session_id = params
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // A prompt queued behind another client's is told from it by its text.
    let text = params
        .get("prompt")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let request = match request_of(Method::SessionPrompt.name(), params) {
        Ok(request) => request,
        Err(error) => return error_response(&error),
    };
    let mut events = tap.attach();
    let (answered, mut answer) = tokio::sync::oneshot::channel();
    let task_daemon = Arc::clone(daemon);
    let task_ctx = Arc::clone(ctx);
    tokio::spawn(async move {
        let deliver = |line| {
            let _ = answered.send(line);
            std::future::ready(())
        };
        let call = Call::new(request);
        request::answer(&task_daemon, &task_ctx, Front::Post, call, None, deliver).await;
    });
    let started = async {
        while let Some(batch) = events.recv().await {
            for line in batch.iter().flat_map(|b| b.split(|&c| c == b'\n')) {
                if let Some(turn) = started_turn(line, &session_id, text.as_deref()) {
                    return Some(turn);
                }
            }
        }
        None
    };
    let outcome = tokio::select! {
        turn = tokio::time::timeout(START_WITHIN, started) => match turn {
            Ok(Some(turn)) => Ok(turn),
            _ => Err(ErrorObject::internal("the turn did not start in time")),
        },
        line = &mut answer => match outcome_of(line.ok()) {
            // Answered before its start was seen: the answer names the turn.
            Ok(result) => result
                .get("turnId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ErrorObject::internal("the answer named no turn")),
            Err(error) => Err(error),
        },
    };
    tap.detach();
    match outcome {
        Ok(turn) => Response::json(
            202,
            serde_json::to_vec(&json!({ "turnId": turn })).unwrap_or_default(),
        ),
        Err(error) => error_response(&error),
    }
}

/// The turn a live `user_message` of `session_id` (with `text`, when the prompt was
/// plain text) starts, if `line` is one.
fn started_turn(line: &[u8], session_id: &str, text: Option<&str>) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let p = v.get("params")?;
    let live_start = v.get("method")?.as_str()? == SESSION_UPDATE
        && p.get("sessionId")?.as_str()? == session_id
        && p.get("type")?.as_str()? == "user_message"
        && p.get("replay").is_none()
        && text.is_none_or(|t| p.get("text").and_then(Value::as_str) == Some(t));
    live_start.then(|| p.get("turnId")?.as_str().map(str::to_owned))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_keeps_bad_escapes() {
        assert_eq!(percent_decode("a%20b+c"), "a b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%C3%A9"), "é");
    }
}
