//! One REST call through the one request path: the method's params made into a JSON-RPC
//! request, run as `POST /rpc` runs it ([`super::super::post::run`]), and its answer line
//! read back as a result or as an error with its HTTP status (SPEC §23.2).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use zeroclaw_protocol::rest;
use zeroclaw_rpc::{ErrorObject, Inbound, Request};

use super::super::http::Response;
use super::super::post;
use crate::caller::ConnectionContext;
use crate::state::Daemon;

/// A REST error: the body `{error}` with the status its code maps to.
pub(crate) fn error_response(error: &ErrorObject) -> Response {
    let status = rest::http_status(error.code);
    let body = serde_json::to_vec(&json!({ "error": error })).unwrap_or_default();
    Response::json(status, body)
}

/// A JSON-RPC request for `name` with `params`, as the one request path takes it.
pub(crate) fn request_of(name: &str, params: Map<String, Value>) -> Result<Request, ErrorObject> {
    let frame = json!({"jsonrpc": "2.0", "id": 1, "method": name, "params": params});
    match zeroclaw_rpc::message::classify_value(frame) {
        Inbound::Request(request) => Ok(request),
        Inbound::Reject { error, .. } => Err(error),
        _ => Err(ErrorObject::internal("could not form the request")),
    }
}

/// The result, or the error, of a JSON-RPC answer line.
pub(crate) fn outcome_of(line: Option<Vec<u8>>) -> Result<Value, ErrorObject> {
    let line = line.ok_or_else(|| ErrorObject::internal("the call was not answered"))?;
    let mut answer: Value = serde_json::from_slice(&line)
        .map_err(|_| ErrorObject::internal("the answer was not JSON"))?;
    if let Some(error) = answer.get_mut("error").map(Value::take) {
        return Err(serde_json::from_value(error)
            .unwrap_or_else(|_| ErrorObject::internal("an unreadable error")));
    }
    Ok(answer
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

/// Runs `name` through the one request path in `ctx`: 200 with its result, or its error.
pub(crate) async fn run_call(
    daemon: &Arc<Daemon>,
    ctx: &Arc<ConnectionContext>,
    name: &str,
    params: Map<String, Value>,
) -> Result<Value, ErrorObject> {
    let request = request_of(name, params)?;
    outcome_of(post::run(daemon, ctx, request).await)
}
