//! The published protocol document (`zeroclaw schema`): one JSON object that is itself a
//! JSON Schema (draft 2020-12) whose `$defs` hold every params, result and update type,
//! generated from this crate's types, and whose `methods`, `notifications` and `requests`
//! tables point each wire name at its params and result schemas. The `methods` table is
//! the [`Method`] table's own types ([`Method::schemas`]), the ones the daemon decodes
//! params into and encodes results from.
//!
//! A frame is checked against, e.g., `{"$ref": "#/methods/status/result"}` resolved in
//! this document (see [`crate::validate`]).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::method::{ELICITATION_CREATE, Method, SESSION_UPDATE};
use crate::system::PROTOCOL_VERSION;
use crate::update::{ElicitationParams, ElicitationResult, SessionUpdate, UpdateType};

fn pair<P: JsonSchema, R: JsonSchema>(g: &mut SchemaGenerator) -> (Schema, Schema) {
    (g.subschema_for::<P>(), g.subschema_for::<R>())
}

/// The whole protocol document.
pub fn document() -> Value {
    let mut g = SchemaSettings::draft2020_12().into_generator();
    let mut methods = Map::new();
    for &m in Method::ALL {
        let (params, result) = m.schemas(&mut g);
        methods.insert(
            m.name().to_owned(),
            json!({
                "direction": "client-to-daemon",
                "requires": m.requirement().to_string(),
                "localOnly": m.local_only(),
                "params": params,
                "result": result,
            }),
        );
    }
    let update = g.subschema_for::<SessionUpdate>();
    let (ask, answer) = pair::<ElicitationParams, ElicitationResult>(&mut g);
    let defs = g.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "zeroclaw daemon protocol",
        "description": "JSON-RPC 2.0 over NDJSON. Each method's params and result, each \
            session/update event and the elicitation/create request. Field names are the \
            camelCase spelling; every params field is also accepted in snake_case (camelCase \
            wins when both are sent). See docs/PROTOCOL.md.",
        "protocolVersion": PROTOCOL_VERSION,
        "methods": methods,
        "notifications": {
            SESSION_UPDATE: {"direction": "daemon-to-client", "params": update},
        },
        "requests": {
            ELICITATION_CREATE: {"direction": "daemon-to-client", "params": ask, "result": answer},
        },
        "updateTypes": UpdateType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        "$defs": defs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_and_reference_is_present() {
        let doc = document();
        for m in Method::ALL {
            let entry = &doc["methods"][m.name()];
            assert!(entry["params"].is_object(), "{m} params");
            assert!(entry["result"].is_object(), "{m} result");
        }
        // Every $ref points at a definition that exists.
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
            let name = r.strip_prefix("#/$defs/").expect("local ref");
            assert!(doc["$defs"].get(name).is_some(), "missing {name}");
        }
    }
}
