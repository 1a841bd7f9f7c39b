//! The REST face of the method table (SPEC §23.2): the resource routes, each naming the
//! method it calls and where its params come from, and the OpenAPI 3.1 document built
//! from the same [`Method`] table and schemas as `zeroclaw schema` ([`crate::schema`]).
//! The gateway routes by [`ROUTES`] and serves [`openapi`]; nothing here is written twice.

use serde_json::{Map, Value, json};

use crate::method::Method;
use crate::schema;

/// Prefix of every REST path.
pub const PREFIX: &str = "/api/v1/";

/// Where a resource route's params come from, besides its path segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamsFrom {
    /// The query string (`GET`).
    Query,
    /// The JSON body (`POST`).
    Body,
}

/// One resource route: `http` on `path`, whose `{name}` segments become the params named
/// by `path_params` (in order), calling `method`.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub http: &'static str,
    pub path: &'static str,
    pub method: Method,
    pub path_params: &'static [&'static str],
    pub from: ParamsFrom,
    pub summary: &'static str,
}

/// The resource routes (the event stream, not a method call, is [`EVENTS_PATH`]).
pub const ROUTES: &[Route] = &[
    Route {
        http: "GET",
        path: "/api/v1/sessions",
        method: Method::SessionList,
        path_params: &[],
        from: ParamsFrom::Query,
        summary: "List sessions (query parameters are session/list's params)",
    },
    Route {
        http: "POST",
        path: "/api/v1/sessions",
        method: Method::SessionNew,
        path_params: &[],
        from: ParamsFrom::Body,
        summary: "Create a session",
    },
    Route {
        http: "GET",
        path: "/api/v1/sessions/{id}",
        method: Method::SessionStatus,
        path_params: &["sessionId"],
        from: ParamsFrom::Query,
        summary: "A session's status",
    },
    Route {
        http: "GET",
        path: "/api/v1/sessions/{id}/messages",
        method: Method::SessionMessages,
        path_params: &["sessionId"],
        from: ParamsFrom::Query,
        summary: "A session's transcript",
    },
    Route {
        http: "POST",
        path: "/api/v1/sessions/{id}/prompt",
        method: Method::SessionPrompt,
        path_params: &["sessionId"],
        from: ParamsFrom::Body,
        summary: "Prompt: waits for the turn's answer; ?wait=false answers 202 {turnId} once the turn started",
    },
    Route {
        http: "POST",
        path: "/api/v1/sessions/{id}/cancel",
        method: Method::SessionCancel,
        path_params: &["sessionId"],
        from: ParamsFrom::Body,
        summary: "Cancel the running turn",
    },
    Route {
        http: "POST",
        path: "/api/v1/sessions/{id}/approvals/{requestId}",
        method: Method::SessionApprove,
        path_params: &["sessionId", "requestId"],
        from: ParamsFrom::Body,
        summary: "Answer an approval request ({decision})",
    },
    Route {
        http: "GET",
        path: "/api/v1/sessions/{id}/diff",
        method: Method::SessionDiff,
        path_params: &["sessionId"],
        from: ParamsFrom::Query,
        summary: "What the session's turns changed",
    },
];

/// The session's event stream as Server-Sent Events.
pub const EVENTS_PATH: &str = "/api/v1/sessions/{id}/events";

/// The resource route matching `http` and `path`, with its path segments' values.
pub fn match_route<'p>(http: &str, path: &'p str) -> Option<(&'static Route, Vec<&'p str>)> {
    ROUTES
        .iter()
        .filter(|r| r.http == http)
        .find_map(|r| match_pattern(r.path, path).map(|values| (r, values)))
}

/// The values of `pattern`'s `{…}` segments in `path`, when it matches.
pub fn match_pattern<'p>(pattern: &str, path: &'p str) -> Option<Vec<&'p str>> {
    let mut want = pattern.split('/');
    let mut have = path.split('/');
    let mut values = Vec::new();
    loop {
        match (want.next(), have.next()) {
            (None, None) => return Some(values),
            (Some(w), Some(h)) if w.starts_with('{') && !h.is_empty() => values.push(h),
            (Some(w), Some(h)) if w == h => {}
            _ => return None,
        }
    }
}

/// The HTTP status of a JSON-RPC error code (SPEC §23.2; a body that is not JSON,
/// -32700, is the client's fault like -32600). A path naming no method is answered 404
/// by the router before any call.
pub const fn http_status(code: i64) -> u16 {
    match code {
        -32602 | -32600 | -32700 => 400,
        -32003 | -32012 => 403,
        -32000 => 404,
        -32002 => 409,
        -32001 | -32013 => 429,
        _ => 500,
    }
}

/// Rewrites `#/$defs/X` references to `#/components/schemas/X`.
fn rebase(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/components/schemas/{name}");
            }
            o.values_mut().for_each(rebase);
        }
        Value::Array(a) => a.iter_mut().for_each(rebase),
        _ => {}
    }
}

fn error_responses() -> Value {
    let error = json!({"$ref": "#/components/schemas/RestError"});
    let body = json!({"application/json": {"schema": error}});
    let mut out = Map::new();
    for (status, what) in [
        ("400", "Bad params or request (-32602, -32600, -32700)"),
        ("401", "Missing or bad bearer token"),
        ("403", "Not allowed (-32003, -32012)"),
        ("404", "No such session (-32000)"),
        ("409", "Busy (-32002)"),
        ("429", "A limit was reached (-32001, -32013)"),
        ("500", "Any other error"),
    ] {
        // 401 comes from the gateway before any call: plain text.
        let entry = match status {
            "401" => json!({"description": what}),
            _ => json!({"description": what, "content": body}),
        };
        out.insert(status.to_owned(), entry);
    }
    Value::Object(out)
}

fn operation(
    id: String,
    summary: &str,
    method: Method,
    params: &Value,
    result: &Value,
    parameters: Vec<Value>,
    body: bool,
) -> Value {
    let mut responses = error_responses();
    responses["200"] = json!({
        "description": "The method's result",
        "content": {"application/json": {"schema": result}},
    });
    let mut op = json!({
        "operationId": id,
        "summary": summary,
        "description": format!("Calls `{}` (requires {}).", method.name(), method.requirement()),
        "security": [{"bearer": []}],
        "responses": responses,
    });
    if !parameters.is_empty() {
        op["parameters"] = Value::Array(parameters);
    }
    if body {
        op["requestBody"] = json!({
            "required": false,
            "content": {"application/json": {"schema": params}},
        });
    }
    op
}

fn path_parameter(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
}

/// The OpenAPI 3.1 document: `POST /api/v1/METHOD` for every method that is not
/// local-only, the resource routes, the event stream and the document itself; the
/// schemas are `zeroclaw schema`'s `$defs`.
pub fn openapi() -> Value {
    let mut doc = schema::document();
    rebase(&mut doc);
    let mut schemas = match doc.get_mut("$defs").map(Value::take) {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    schemas.insert(
        "RestError".to_owned(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": {"error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "integer"},
                    "message": {"type": "string"},
                    "data": {},
                },
            }},
        }),
    );
    schemas.insert(
        "TurnStarted".to_owned(),
        json!({
            "type": "object",
            "required": ["turnId"],
            "properties": {"turnId": {"type": "string"}},
        }),
    );
    let mut paths = Map::new();
    for &m in Method::ALL {
        if m.local_only() {
            continue;
        }
        let entry = &doc["methods"][m.name()];
        let op = operation(
            m.name().replace('/', "_"),
            m.name(),
            m,
            &entry["params"],
            &entry["result"],
            Vec::new(),
            true,
        );
        paths.insert(format!("{PREFIX}{}", m.name()), json!({"post": op}));
    }
    for route in ROUTES {
        let entry = &doc["methods"][route.method.name()];
        let mut names = route.path.split('/').filter_map(|s| {
            s.strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .map(str::to_owned)
        });
        let mut parameters: Vec<Value> = route
            .path_params
            .iter()
            .filter_map(|_| names.next())
            .map(|n| path_parameter(&n))
            .collect();
        if route.method == Method::SessionPrompt {
            parameters.push(json!({
                "name": "wait", "in": "query", "required": false,
                "schema": {"type": "boolean", "default": true},
            }));
        }
        let id = format!(
            "{}_{}",
            route.http.to_ascii_lowercase(),
            route
                .path
                .trim_start_matches(PREFIX)
                .replace(['/', '{', '}'], "_")
        );
        let mut op = operation(
            id,
            route.summary,
            route.method,
            &entry["params"],
            &entry["result"],
            parameters,
            route.from == ParamsFrom::Body,
        );
        if route.method == Method::SessionPrompt {
            op["responses"]["202"] = json!({
                "description": "?wait=false: the turn started",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TurnStarted"}}},
            });
        }
        let item = paths
            .entry(route.path.to_owned())
            .or_insert_with(|| json!({}));
        item[route.http.to_ascii_lowercase()] = op;
    }
    paths.insert(
        EVENTS_PATH.to_owned(),
        json!({"get": {
            "operationId": "get_sessions_id_events",
            "summary": "The session's events as Server-Sent Events (SPEC §14)",
            "description": "Each event: `id:` its cursor (TURN_ID:EVENT_SEQ), `event:` its type, \
                `data:` its session/update params (schema SessionUpdate). Send `Last-Event-ID` \
                to resume after a cursor. A `: keepalive` comment comes every 15 s.",
            "security": [{"bearer": []}],
            "parameters": [path_parameter("id"), {
                "name": "Last-Event-ID", "in": "header", "required": false,
                "schema": {"type": "string"},
            }],
            "responses": {
                "200": {
                    "description": "The event stream",
                    "content": {"text/event-stream": {
                        "schema": {"type": "string"},
                        "x-event-data": {"$ref": "#/components/schemas/SessionUpdate"},
                    }},
                },
                "401": {"description": "Missing or bad bearer token"},
                "403": error_responses()["403"],
                "404": error_responses()["404"],
                "429": error_responses()["429"],
            },
        }}),
    );
    paths.insert(
        format!("{PREFIX}openapi.json"),
        json!({"get": {
            "operationId": "get_openapi",
            "summary": "This document",
            "responses": {"200": {"description": "OpenAPI 3.1",
                "content": {"application/json": {"schema": {"type": "object"}}}}},
        }}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "zeroclaw daemon REST API",
            "version": doc["protocolVersion"],
            "description": "The daemon's methods over plain HTTP (SPEC §23.2), generated from \
                the same method table as `zeroclaw schema`. Errors are {error: {code, message, \
                data}} with an HTTP status from the JSON-RPC code.",
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_that_is_not_local_has_a_path_and_local_ones_none() {
        let doc = openapi();
        for m in Method::ALL {
            let path = format!("{PREFIX}{}", m.name());
            assert_eq!(doc["paths"].get(&path).is_some(), !m.local_only(), "{m}");
        }
        for r in ROUTES {
            assert!(
                doc["paths"][r.path][r.http.to_ascii_lowercase()].is_object(),
                "{}",
                r.path
            );
        }
        // Every reference resolves inside the document.
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(o) => {
                    if let Some(Value::String(r)) = o.get("$ref") {
                        out.push(r.clone());
                    }
                    o.values().for_each(|v| refs(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(!all.is_empty());
        for r in all {
            let pointer = r.strip_prefix('#').expect("local ref");
            assert!(doc.pointer(pointer).is_some(), "{r}");
        }
    }

    #[test]
    fn routes_match_their_paths() {
        let (r, v) = match_route("GET", "/api/v1/sessions/s1/messages").expect("a route");
        assert_eq!((r.method, v), (Method::SessionMessages, vec!["s1"]));
        let (r, v) = match_route("POST", "/api/v1/sessions/s1/approvals/r9").expect("a route");
        assert_eq!((r.method, v), (Method::SessionApprove, vec!["s1", "r9"]));
        assert!(match_route("GET", "/api/v1/sessions/s1/nothing").is_none());
        assert!(match_route("DELETE", "/api/v1/sessions").is_none());
        assert!(match_route("GET", "/api/v1/sessions/").is_none());
        assert_eq!(http_status(-32602), 400);
        assert_eq!(http_status(-32013), 429);
        assert_eq!(http_status(-32099), 500);
    }
}
