//! A small JSON Schema checker for the subset of draft 2020-12 that [`crate::schema`]
//! emits (`$ref` into the same document, `type`, `enum`, `const`, `properties`,
//! `required`, `additionalProperties`, `items`, `oneOf`/`anyOf`/`allOf`, numeric and
//! length bounds). It lets tests check real frames against the published schema without a
//! full validator crate; keywords it does not know (`format`, `description` …) are ignored.

use serde_json::{Map, Value};

/// Checks `value` against `schema`, resolving `$ref`s in `root`. `Err` names the first
/// mismatch with its JSON pointer.
pub fn validate(root: &Value, schema: &Value, value: &Value) -> Result<(), String> {
    check(root, schema, value, "", 0)
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, String> {
    let pointer = reference
        .strip_prefix('#')
        .ok_or_else(|| format!("unsupported $ref {reference}"))?;
    root.pointer(pointer)
        .ok_or_else(|| format!("unresolved $ref {reference}"))
}

fn check(root: &Value, schema: &Value, v: &Value, at: &str, depth: usize) -> Result<(), String> {
    if depth > 64 {
        return Err(format!("{at}: schema nests too deep"));
    }
    let s = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{at}: no value is allowed here")),
        Value::Object(s) => s,
        _ => return Err(format!("{at}: malformed schema")),
    };
    if let Some(Value::String(r)) = s.get("$ref") {
        check(root, resolve(root, r)?, v, at, depth + 1)?;
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(name) => type_matches(name, v),
            Value::Array(names) => names
                .iter()
                .any(|n| n.as_str().is_some_and(|n| type_matches(n, v))),
            _ => false,
        };
        if !ok {
            return Err(format!("{at}: expected type {t}, got {v}"));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.contains(v)
    {
        return Err(format!(
            "{at}: {v} is not one of {}",
            Value::Array(options.clone())
        ));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        return Err(format!("{at}: expected {c}, got {v}"));
    }
    bounds(s, v, at)?;
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            check(root, sub, v, at, depth + 1)?;
        }
    }
    if let Some(Value::Array(any)) = s.get("anyOf") {
        let errors: Vec<String> = any
            .iter()
            .filter_map(|sub| check(root, sub, v, at, depth + 1).err())
            .collect();
        if errors.len() == any.len() {
            return Err(format!(
                "{at}: matches none of anyOf: {}",
                errors.join("; ")
            ));
        }
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        let mut errors = Vec::new();
        let matched = one
            .iter()
            .filter(|sub| match check(root, sub, v, at, depth + 1) {
                Ok(()) => true,
                Err(e) => {
                    errors.push(e);
                    false
                }
            })
            .count();
        if matched != 1 {
            return Err(format!(
                "{at}: matches {matched} of oneOf (exactly 1 needed): {}",
                errors.join("; ")
            ));
        }
    }
    if let Some(not) = s.get("not")
        && check(root, not, v, at, depth + 1).is_ok()
    {
        return Err(format!("{at}: matches a schema it must not"));
    }
    if let Value::Object(obj) = v {
        object(root, s, obj, at, depth)?;
    }
    if let (Value::Array(items), Some(item_schema)) = (v, s.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(root, item_schema, item, &format!("{at}/{i}"), depth + 1)?;
        }
    }
    Ok(())
}

fn object(
    root: &Value,
    s: &Map<String, Value>,
    obj: &Map<String, Value>,
    at: &str,
    depth: usize,
) -> Result<(), String> {
    if let Some(Value::Array(required)) = s.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(name) {
                return Err(format!("{at}: missing required field {name}"));
            }
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    for (key, value) in obj {
        let path = format!("{at}/{key}");
        let schema = props
            .and_then(|p| p.get(key))
            .map(|sub| (sub, false))
            .or_else(|| s.get("additionalProperties").map(|extra| (extra, true)));
        if let Some((sub, extra)) = schema {
            check(root, sub, value, &path, depth + 1).map_err(|e| {
                if extra {
                    format!("{path}: field not allowed")
                } else {
                    e
                }
            })?;
        }
    }
    Ok(())
}

fn bounds(s: &Map<String, Value>, v: &Value, at: &str) -> Result<(), String> {
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    if let Some(x) = v.as_f64()
        && (num("minimum").is_some_and(|m| x < m) || num("maximum").is_some_and(|m| x > m))
    {
        return Err(format!("{at}: {v} is out of range"));
    }
    let len = match v {
        Value::Array(a) => Some((a.len(), "minItems", "maxItems")),
        Value::String(t) => Some((t.chars().count(), "minLength", "maxLength")),
        _ => None,
    };
    if let Some((n, lo, hi)) = len {
        let n = n as f64;
        if num(lo).is_some_and(|m| n < m) || num(hi).is_some_and(|m| n > m) {
            return Err(format!("{at}: length {n} is out of bounds"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_the_keywords_it_knows() {
        let root = json!({"$defs": {"P": {
            "type": "object",
            "properties": {"a": {"type": "integer", "minimum": 0}, "b": {"enum": ["x", "y"]}},
            "required": ["a"],
            "additionalProperties": false,
        }}});
        let p = json!({"$ref": "#/$defs/P"});
        assert!(validate(&root, &p, &json!({"a": 1, "b": "x"})).is_ok());
        assert!(validate(&root, &p, &json!({"b": "x"})).is_err(), "required");
        assert!(validate(&root, &p, &json!({"a": -1})).is_err(), "minimum");
        assert!(
            validate(&root, &p, &json!({"a": 1, "b": "z"})).is_err(),
            "enum"
        );
        assert!(
            validate(&root, &p, &json!({"a": 1, "c": 0})).is_err(),
            "extra field"
        );
        assert!(validate(&root, &p, &json!({"a": "1"})).is_err(), "type");
        let one = json!({"oneOf": [{"type": "string"}, {"const": "s"}]});
        assert!(validate(&root, &one, &json!(1)).is_err());
        assert!(
            validate(&root, &one, &json!("s")).is_err(),
            "two branches match"
        );
        assert!(validate(&root, &one, &json!("t")).is_ok());
    }
}
