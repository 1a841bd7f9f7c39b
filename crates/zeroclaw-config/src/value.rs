//! Editing the `toml_edit` document (the user's file, comments and all) at a property
//! path, checking a whole document into a typed [`Config`], and reading values back as
//! JSON with secrets masked.
//!
//! Writes keep the formatting around what they touch: replacing a scalar keeps its
//! trailing comment, replacing a table keeps its header comment and position; new
//! intermediate tables are implicit, so `users.example.uid` adds `[users.example]` and no
//! empty `[users]` header.

use serde_json::Value as Json;
use toml_edit::{DocumentMut, Item, TableLike};

use crate::path::PropPath;
use crate::schema::{Config, Violation};
use crate::shape::{Located, ROOT, Shape, new_container};

/// Why a document is not a valid configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    /// Type/key errors (first found) or cross-reference violations (all found).
    At(Vec<Violation>),
    /// A failure without a location (serde disagreeing with the shape table).
    Other(String),
}

impl Invalid {
    /// A single line naming every problem.
    pub fn describe(&self) -> String {
        match self {
            Invalid::At(v) => v
                .iter()
                .map(|v| format!("{}: {}", v.prop, v.message))
                .collect::<Vec<_>>()
                .join("; "),
            Invalid::Other(m) => m.clone(),
        }
    }
}

impl From<Located> for Invalid {
    fn from((prop, message): Located) -> Self {
        Invalid::At(vec![Violation { prop, message }])
    }
}

/// The largest `config.toml` the daemon writes or accepts, in bytes (SPEC §17), so that
/// `config/get` always fits a frame.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// Checks a document completely: keys, types and string lengths (the shape table), the
/// size of the whole file, then the typed view (serde, `deny_unknown_fields`), then
/// references.
pub fn check_document(doc: &DocumentMut) -> Result<Config, Invalid> {
    ROOT.check_item(doc.as_item(), None)?;
    let text = doc.to_string();
    if text.len() > MAX_CONFIG_BYTES {
        return Err(Invalid::Other(format!(
            "config.toml of {} bytes is over the limit of {MAX_CONFIG_BYTES} bytes",
            text.len()
        )));
    }
    let config: Config =
        toml_edit::de::from_str(&text).map_err(|e| Invalid::Other(e.to_string()))?;
    let violations = config.validate();
    if violations.is_empty() {
        Ok(config)
    } else {
        Err(Invalid::At(violations))
    }
}

/// Checks `value` against the property's type and writes it at `path`, creating
/// intermediate tables and map entries.
pub fn set_json(doc: &mut DocumentMut, path: &PropPath, value: &Json) -> Result<(), Located> {
    let shape = Shape::at(path)?;
    let item = shape.to_item(value, path)?;
    set_item(doc, path, item)
}

fn not_table(path: &PropPath, depth: usize) -> Located {
    let parent = PropPath::from_segments(&path.segments()[..depth]).unwrap_or_else(|| path.clone());
    (path.clone(), format!("{parent} is not a table"))
}

fn set_item(doc: &mut DocumentMut, path: &PropPath, item: Item) -> Result<(), Located> {
    let segs = path.segments();
    let (last, parents) = segs
        .split_last()
        .ok_or_else(|| (path.clone(), "empty path".into()))?;
    let mut cur: &mut dyn TableLike = doc.as_table_mut();
    let mut inline = false;
    for (depth, seg) in parents.iter().enumerate() {
        if cur.get(seg).is_none() {
            cur.insert(seg, new_container(inline));
        }
        let next = cur.get_mut(seg).ok_or_else(|| not_table(path, depth + 1))?;
        inline = matches!(next, Item::Value(_));
        cur = next
            .as_table_like_mut()
            .ok_or_else(|| not_table(path, depth + 1))?;
    }
    let mut item = item;
    if inline {
        item = match item.into_value() {
            Ok(v) => Item::Value(v),
            Err(_) => return Err((path.clone(), "cannot write an empty item".into())),
        };
    }
    match cur.get_mut(last) {
        Some(existing) => {
            keep_decor(existing, &mut item);
            *existing = item;
        }
        None => {
            cur.insert(last, item);
        }
    }
    Ok(())
}

/// Carries the comments and position of the replaced item over to its replacement.
fn keep_decor(old: &Item, new: &mut Item) {
    match (old, new) {
        (Item::Value(o), Item::Value(n)) => *n.decor_mut() = o.decor().clone(),
        (Item::Table(o), Item::Table(n)) => {
            *n.decor_mut() = o.decor().clone();
            n.set_position(o.position());
        }
        _ => {}
    }
}

/// Removes the key or map entry at `path`. Errors if it is not set in the document.
pub fn remove(doc: &mut DocumentMut, path: &PropPath) -> Result<(), Located> {
    Shape::at(path)?;
    let segs = path.segments();
    let (last, parents) = segs
        .split_last()
        .ok_or_else(|| (path.clone(), "empty path".into()))?;
    let not_set = || (path.clone(), "property is not set".to_string());
    let mut cur: &mut dyn TableLike = doc.as_table_mut();
    for seg in parents {
        cur = cur
            .get_mut(seg)
            .and_then(Item::as_table_like_mut)
            .ok_or_else(not_set)?;
    }
    cur.remove(last).map(|_| ()).ok_or_else(not_set)
}

/// The whole configuration as JSON (defaults filled in), secrets masked (SPEC §6, §17.1):
/// a provider's `api_key` and every MCP server `env` value read as `"***"` (when set), and
/// the `user:password@` part of a URL (a provider's `base_url`, an MCP server's `args`) as
/// `***@`.
pub fn masked_json(config: &Config) -> Json {
    let mut v = serde_json::to_value(config).unwrap_or(Json::Null);
    for p in entries(&mut v, "providers") {
        if let Some(key) = p.get_mut("api_key") {
            mask(key);
        }
        if let Some(url) = p.get_mut("base_url") {
            mask_url(url);
        }
    }
    for channel in entries(&mut v, "notify") {
        if let Some(secret) = channel.get_mut("secret") {
            mask(secret);
        }
        if let Some(url) = channel.get_mut("url") {
            mask_url(url);
        }
    }
    for hook in entries(&mut v, "webhooks") {
        if let Some(secret) = hook.get_mut("secret") {
            mask(secret);
        }
    }
    for agent in entries(&mut v, "agents") {
        for server in entries(agent, "mcp_servers") {
            if let Some(env) = server.get_mut("env").and_then(Json::as_object_mut) {
                env.values_mut().for_each(mask);
            }
            if let Some(args) = server.get_mut("args").and_then(Json::as_array_mut) {
                args.iter_mut().for_each(mask_url);
            }
        }
    }
    v
}

/// The values of the map `section` of `v` (none when it is not an object).
fn entries<'a>(v: &'a mut Json, section: &str) -> impl Iterator<Item = &'a mut Json> {
    v.get_mut(section)
        .and_then(Json::as_object_mut)
        .into_iter()
        .flat_map(|m| m.values_mut())
}

/// A secret string reads as `"***"`; an empty one stays empty (nothing to hide).
fn mask(v: &mut Json) {
    if v.as_str().is_some_and(|s| !s.is_empty()) {
        *v = Json::String(crate::secret::MASK.into());
    }
}

/// A string holding URLs loses their credentials.
fn mask_url(v: &mut Json) {
    if let Some(s) = v.as_str() {
        *v = Json::String(crate::secret::redact_url_credentials(s));
    }
}

/// The value at `path` in the masked JSON view; errors name unknown properties.
pub fn get_json(config: &Config, path: &PropPath) -> Result<Json, Located> {
    Shape::at(path)?;
    let mut v = masked_json(config);
    for seg in path.segments() {
        v = match v {
            Json::Object(mut m) => m.remove(seg.as_str()),
            _ => None,
        }
        .ok_or_else(|| (path.clone(), "property is not set".to_string()))?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> PropPath {
        PropPath::parse(s).unwrap()
    }

    fn doc(s: &str) -> DocumentMut {
        s.parse().unwrap()
    }

    #[test]
    fn creates_entries_and_keeps_comments() {
        let mut d = doc("# top\n[security]\ntrust_daemon_uid = true # keep me\n");
        set_json(&mut d, &p("security.trust_daemon_uid"), &json!("false")).unwrap();
        set_json(&mut d, &p("users.example.uid"), &json!(1001)).unwrap();
        set_json(&mut d, &p("users.example.permission_profiles"), &json!([])).unwrap();
        let text = d.to_string();
        assert!(text.contains("# top"), "{text}");
        assert!(
            text.contains("trust_daemon_uid = false # keep me"),
            "{text}"
        );
        assert!(text.contains("[users.example]\nuid = 1001"), "{text}");
        assert!(!text.contains("[users]\n"), "{text}");
        let c = check_document(&d).unwrap();
        assert_eq!(c.users["example"].uid, Some(1001));
    }

    #[test]
    fn whole_table_and_inline_parents() {
        let mut d = doc("[permission_profiles.op]\ngrants = { sessions = [\"read\"] }\n");
        set_json(
            &mut d,
            &p("permission_profiles.op.grants.files"),
            &json!(["create"]),
        )
        .unwrap();
        let c = check_document(&d).unwrap();
        assert_eq!(c.permission_profiles["op"].grants["files"], ["create"]);
        set_json(
            &mut d,
            &p("permission_profiles.op"),
            &json!({"admin": false, "grants": {"config": ["read"]}, "allowed_agents": ["*"]}),
        )
        .unwrap();
        let c = check_document(&d).unwrap();
        let op = &c.permission_profiles["op"];
        assert_eq!(op.grants.len(), 1);
        assert_eq!(op.allowed_agents, ["*"]);
        set_json(&mut d, &p("agents.\"my.agent\".provider"), &json!("x")).unwrap();
        assert!(d.to_string().contains("[agents.\"my.agent\"]"), "{d}");
    }

    #[test]
    fn remove_entries() {
        let mut d = doc("[users.a]\nuid = 1\n[users.b]\nuid = 2\n");
        remove(&mut d, &p("users.a")).unwrap();
        remove(&mut d, &p("users.b.uid")).unwrap();
        assert_eq!(
            remove(&mut d, &p("users.zzz")).unwrap_err().1,
            "property is not set"
        );
        assert!(remove(&mut d, &p("nope")).is_err());
        let c = check_document(&d).unwrap();
        assert!(!c.users.contains_key("a"));
        assert_eq!(c.users["b"].uid, None);
    }

    #[test]
    fn masked_get() {
        let mut d = doc("[providers.x]\nkind = \"openai\"\napi_key = \"sk-123\"\n");
        let c = check_document(&d).unwrap();
        assert_eq!(
            get_json(&c, &p("providers.x.api_key")).unwrap(),
            json!("***")
        );
        assert_eq!(masked_json(&c)["providers"]["x"]["api_key"], json!("***"));
        assert_eq!(get_json(&c, &p("wss.port")).unwrap(), json!(9781));
        assert!(get_json(&c, &p("agents.nope")).is_err());
        set_json(&mut d, &p("providers.x.api_key"), &json!("")).unwrap();
        let c = check_document(&d).unwrap();
        assert_eq!(get_json(&c, &p("providers.x.api_key")).unwrap(), json!(""));
    }

    #[test]
    fn mcp_env_and_url_credentials_are_masked() {
        let d = doc(concat!(
            "[providers.x]\nkind = \"openai\"\nbase_url = \"http://me:pw@h:1/v1\"\n",
            "[agents.a]\nprovider = \"x\"\n",
            "[agents.a.mcp_servers.gh]\ncommand = \"gh-mcp\"\n",
            "args = [\"--url\", \"https://t0k@api.example\"]\n",
            "env = { GITHUB_TOKEN = \"ghp_secret\", EMPTY = \"\" }\n",
        ));
        let c = check_document(&d).unwrap();
        let whole = masked_json(&c);
        let server = &whole["agents"]["a"]["mcp_servers"]["gh"];
        assert_eq!(server["env"], json!({"GITHUB_TOKEN": "***", "EMPTY": ""}));
        assert_eq!(server["args"], json!(["--url", "https://***@api.example"]));
        assert_eq!(server["command"], json!("gh-mcp"));
        assert_eq!(
            whole["providers"]["x"]["base_url"],
            json!("http://***@h:1/v1")
        );
        // one property, or any table above it, reads the same
        for (prop, value) in [
            ("agents.a.mcp_servers.gh.env.GITHUB_TOKEN", json!("***")),
            ("providers.x.base_url", json!("http://***@h:1/v1")),
        ] {
            assert_eq!(get_json(&c, &p(prop)).unwrap(), value, "{prop}");
        }
        let text = get_json(&c, &p("agents")).unwrap().to_string();
        assert!(
            !text.contains("ghp_secret") && !text.contains("t0k"),
            "{text}"
        );
        let text = get_json(&c, &p("providers")).unwrap().to_string();
        assert!(!text.contains("pw@"), "{text}");
    }
}
