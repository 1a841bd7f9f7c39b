//! The configuration as a JSON Schema (SPEC §6 `config/schema`), for forms: built by walking
//! [`crate::shape::ROOT`] (the same table that checks every write, so the form can never
//! offer a key or value the daemon refuses), with a help text per property, defaults from
//! the typed [`Config`] defaults, and the section each top-level key belongs to.
//!
//! A hand walker rather than a derive: the ranges and enum lists live in [`Shape`], not in
//! the serde types, and the form needs them. Keywords beyond JSON Schema 2020-12 start with
//! `x-`: `x-group` (a top-level key's section), `x-groups` (the sections in order, with
//! titles) and `x-keyName` (what a map's keys name). Secrets carry `writeOnly: true`: a form
//! offers to replace them and never shows them back.

use serde_json::{Map, Value as Json, json};

use crate::schema::{Agent, Config, McpServer, Profile, Provider, User};
use crate::shape::{MAX_STRING_BYTES, ROOT, Shape};

/// The sections of the form, in order: `(id, title, top-level keys)`.
pub const GROUPS: &[(&str, &str, &[&str])] = &[
    ("providers", "Providers", &["providers", "pricing"]),
    ("agents", "Agents", &["agents"]),
    (
        "permissions",
        "Permissions",
        &["security", "users", "permission_profiles"],
    ),
    (
        "gateway",
        "Gateway and limits",
        &["wss", "gateway", "limits"],
    ),
    ("hooks", "Hooks", &["hooks"]),
    ("notify", "Notifications", &["notify"]),
    ("webhooks", "Webhooks", &["webhooks"]),
];

/// Help text by property pattern (`*` for any map key), from the types' doc comments and
/// the default file's comments.
const HELP: &[(&str, &str)] = &[
    ("security", "Who the daemon trusts without a token."),
    (
        "security.trust_daemon_uid",
        "While on, the daemon's own uid is the admin principal `operator`.",
    ),
    ("providers", "Model servers the agents call, by name."),
    (
        "providers.*.kind",
        "The API the server speaks; `echo` is offline and streams the prompt back, word by word.",
    ),
    (
        "providers.*.base_url",
        "The server's address; empty = the kind's usual one (OpenAI, Anthropic, Ollama on 127.0.0.1:11434, Gemini).",
    ),
    (
        "providers.*.api_key_env",
        "Name of the environment variable holding the API key; empty = the kind's usual one (ANTHROPIC_API_KEY, GEMINI_API_KEY).",
    ),
    (
        "providers.*.api_key",
        "The API key itself (secret: never read back; prefer api_key_env).",
    ),
    (
        "providers.*.model",
        "The model asked for when an agent names none.",
    ),
    (
        "providers.*.timeout_secs",
        "Longest wait for one provider call, in seconds.",
    ),
    (
        "agents",
        "Agents: a provider, a model, tools and how much they may do alone.",
    ),
    (
        "agents.*.provider",
        "Required: the name of an entry of providers.",
    ),
    ("agents.*.model", "Empty = the provider's model."),
    (
        "agents.*.system_prompt",
        "The instructions every session of the agent starts with.",
    ),
    (
        "agents.*.tools",
        "Tools the agent may use: bash, read_file, write_file, ask_user.",
    ),
    (
        "agents.*.autonomy",
        "supervised: bash and write_file need approval; full: nothing does; read_only: no writes; plan: no writes, the agent proposes a plan.",
    ),
    (
        "agents.*.max_context_tokens",
        "The model's context window, in tokens.",
    ),
    (
        "agents.*.max_output_tokens",
        "Longest answer of one provider call, in tokens (anthropic, ollama, gemini; not openai).",
    ),
    (
        "agents.*.thinking_budget",
        "Tokens the model may think before answering; 0 = off, else at least 1024 and under max_output_tokens.",
    ),
    (
        "agents.*.max_tool_iterations",
        "Most tool calls in one turn.",
    ),
    (
        "agents.*.workspace",
        "Where tools run; empty = <config dir>/agents/<alias>/workspace, relative = under the config dir.",
    ),
    (
        "agents.*.checkpoint_budget_mb",
        "Storage for each session's file checkpoints (rewind), in MiB; 0 = none are recorded.",
    ),
    (
        "agents.*.mcp_servers",
        "stdio MCP tool servers started for each session of this agent (tools named SERVER__TOOL).",
    ),
    (
        "agents.*.mcp_servers.*.command",
        "The program (looked up in PATH when not a path).",
    ),
    ("agents.*.mcp_servers.*.args", "Its arguments."),
    (
        "agents.*.mcp_servers.*.env",
        "Added to the daemon's environment (secret values: never read back).",
    ),
    (
        "agents.*.mcp_servers.*.env.*",
        "The variable's value (secret: never read back).",
    ),
    (
        "agents.*.keep_recent_turns",
        "Compaction keeps this many whole turns verbatim.",
    ),
    (
        "agents.*.auto_compact",
        "Compact before a call whose context would exceed compact_threshold of the window.",
    ),
    (
        "agents.*.compact_threshold",
        "The share of the context window that triggers compaction, in (0, 1].",
    ),
    (
        "agents.*.hooks",
        "Hooks run for this agent's sessions, after the global ones (admin-only).",
    ),
    (
        "agents.*.sandbox",
        "Whether bash and MCP servers run in the sandbox (Landlock); off = unconfined (read_only then refuses bash).",
    ),
    (
        "agents.*.sandbox_writable",
        "More absolute paths supervised and full may write in the sandbox.",
    ),
    (
        "agents.*.sandbox_network",
        "Off: the sandbox also denies TCP connect and bind (where Landlock can).",
    ),
    (
        "agents.*.sandbox_deny_read",
        "Paths (absolute, or ~/… for the daemon's home) a read_only program cannot read.",
    ),
    (
        "agents.*.env",
        "Names of the daemon's environment variables bash and MCP servers also get.",
    ),
    ("limits", "How much the daemon serves at once."),
    (
        "limits.connections_per_principal",
        "Open connections one principal may hold.",
    ),
    ("limits.connections_total", "Open connections in all."),
    (
        "limits.unauthenticated_ws",
        "WebSocket peers not yet past initialize.",
    ),
    (
        "limits.live_sessions_per_principal",
        "Live sessions one non-admin principal may hold (the daemon-wide limit is 64).",
    ),
    // Keys added for SPEC §22 and §26 after the form's table was written.
    (
        "limits.session_idle_secs",
        "Seconds an unused live session stays loaded before it rests (ACP sessions come back on their next use).",
    ),
    (
        "limits.schedules_per_principal",
        "Schedules one principal may keep (SPEC §24.1).",
    ),
    (
        "agents.*.instructions_files",
        "Put the project's AGENTS.md (else CLAUDE.md) files in the system prompt.",
    ),
    (
        "agents.*.max_turn_tokens",
        "Budget: most tokens of one turn; past it the turn pauses for raise or stop. 0 = no limit.",
    ),
    (
        "agents.*.max_session_tokens",
        "Budget: most tokens of one session; past it each turn pauses for raise or stop. 0 = no limit.",
    ),
    (
        "agents.*.max_turn_usd",
        "Budget: most cost of one turn in US dollars (needs a [pricing] entry for the model). 0 = no limit.",
    ),
    (
        "agents.*.budget_wait_secs",
        "How long a turn paused by a budget waits for raise or stop before it stops; 0 = 120 s, 3600 s for scheduled and webhook turns.",
    ),
    ("users", "Local users and what they may do, by name."),
    (
        "users.*.uid",
        "The local uid mapped to this user; none for a token-only (WebSocket) user.",
    ),
    (
        "users.*.permission_profiles",
        "Names of the permission profiles the user holds.",
    ),
    ("permission_profiles", "Named sets of grants users hold."),
    (
        "permission_profiles.*.admin",
        "Every grant, every path, every agent.",
    ),
    (
        "permission_profiles.*.grants",
        "Resource (system, sessions, files, config, schedules) → verbs (create, read, update, delete, execute).",
    ),
    (
        "permission_profiles.*.grants.*",
        "The verbs granted on this resource.",
    ),
    (
        "permission_profiles.*.allowed_agents",
        "Agent aliases, or \"*\" for all.",
    ),
    (
        "permission_profiles.*.config_write_paths",
        "Properties the holder may write; \"*\" = all, \"a.*\" covers the subtree under a.",
    ),
    (
        "permission_profiles.*.max_daily_tokens",
        "Budget: most tokens a holder may spend per UTC day over all agents; 0 = no limit.",
    ),
    (
        "permission_profiles.*.max_daily_usd",
        "Budget: most cost a holder may spend per UTC day, in US dollars; 0 = no limit.",
    ),
    (
        "pricing",
        "Prices by model name, US dollars per million tokens: they add costUsd to usage (admin-only).",
    ),
    (
        "pricing.*.input_per_mtok",
        "Price of a million input tokens, in US dollars.",
    ),
    (
        "pricing.*.output_per_mtok",
        "Price of a million output tokens, in US dollars.",
    ),
    (
        "pricing.*.cached_input_per_mtok",
        "Price of a million input tokens read from the provider's cache; 0 = priced as other input.",
    ),
    (
        "wss",
        "The WebSocket and HTTP gateway (dashboard, POST /rpc).",
    ),
    ("wss.enabled", "Start the gateway with the daemon."),
    (
        "wss.bind",
        "The address it listens on; TLS is required when it is not a loopback address.",
    ),
    ("wss.port", "The port; 0 = any free one."),
    ("wss.cert_path", "TLS certificate (PEM)."),
    ("wss.key_path", "TLS private key (PEM)."),
    (
        "wss.allowed_origins",
        "Browser origins allowed to open a WebSocket.",
    ),
    ("gateway", "The gateway's own settings beyond its listener."),
    (
        "gateway.hostnames",
        "Host names the gateway answers besides loopback ones (admin-only; DNS rebinding).",
    ),
    (
        "gateway.cors_origins",
        "Browser origins (scheme://host[:port]) allowed to call the REST API across origins; none by default (admin-only).",
    ),
    (
        "hooks",
        "Commands run at points of every agent's turns, as the daemon's user (admin-only).",
    ),
    (
        "webhooks",
        "HTTP endpoints POST /webhooks/NAME that start a turn per signed delivery (admin-only).",
    ),
    (
        "webhooks.*.agent",
        "The agent whose session each delivery prompts.",
    ),
    (
        "webhooks.*.secret_env",
        "Name of the environment variable holding the signing secret (HMAC-SHA256).",
    ),
    (
        "webhooks.*.secret",
        "The signing secret itself (secret: never read back; prefer secret_env).",
    ),
    (
        "webhooks.*.run_as",
        "The user the turn runs as, with that user's grants; empty = the daemon's owner.",
    ),
    (
        "webhooks.*.prompt",
        "The prompt template: {{event}}, {{delivery}}, {{json /pointer}}, {{payload}}; empty = the payload.",
    ),
    (
        "webhooks.*.session",
        "new (a session per delivery), per_key (one per value of key) or a fixed session id.",
    ),
    (
        "webhooks.*.key",
        "A JSON pointer into the payload naming the session for per_key (/pull_request/number).",
    ),
    (
        "webhooks.*.events",
        "The event header's values taken (X-GitHub-Event); empty = every event.",
    ),
    (
        "webhooks.*.cwd",
        "Where bash runs; empty = the agent's workspace.",
    ),
    (
        "webhooks.*.autonomy",
        "The turn's autonomy, at most the agent's; unset = the agent's.",
    ),
    (
        "webhooks.*.rate_per_minute",
        "Deliveries taken per minute; more are answered 429.",
    ),
    ("*.session_start", "Run when a session starts."),
    (
        "*.user_prompt_submit",
        "Run when a prompt is submitted; may refuse it.",
    ),
    ("*.pre_tool_use", "Run before a tool call; may refuse it."),
    ("*.post_tool_use", "Run after a tool call."),
    ("*.pre_compact", "Run before compaction."),
    ("*.stop", "Run when a turn ends."),
    (
        "*.command",
        "The command, run by sh -c with the event's JSON on stdin.",
    ),
    (
        "*.matcher",
        "A regular expression over the whole tool name (tool events only); empty = every tool.",
    ),
    ("*.timeout_secs", "Longest run, in seconds."),
    (
        "notify",
        "Where notifications go besides Web Push, by name (admin-only).",
    ),
    (
        "notify.*.kind",
        "webhook: POST JSON; ntfy: POST to an ntfy topic; command: run with the JSON on stdin.",
    ),
    ("notify.*.url", "Where webhook and ntfy channels post."),
    (
        "notify.*.secret",
        "HMAC-SHA256 key for X-Zeroclaw-Signature (webhook; secret: never read back).",
    ),
    (
        "notify.*.command",
        "The command of a command channel, run by sh -c with the JSON on stdin.",
    ),
    (
        "notify.*.events",
        "Which events it gets (approval_request, ask_user, budget_request, turn_failed, turn_ended); empty = all.",
    ),
    (
        "notify.*.users",
        "Whose sessions it is told about (principal ids); empty = everyone's.",
    ),
    ("notify.*.priority", "ntfy priority, 1 (min) to 5 (max)."),
];

/// The whole configuration's JSON Schema (see the module comment).
pub fn json_schema() -> Json {
    let defaults = serde_json::to_value(Config::default()).unwrap_or(Json::Null);
    let mut root = walk(&ROOT, &mut Vec::new(), Some(&defaults));
    if let Some(obj) = root.as_object_mut() {
        obj.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        obj.insert("title".into(), json!("zeroclaw configuration"));
        obj.insert(
            "x-groups".into(),
            Json::Array(
                GROUPS
                    .iter()
                    .map(|(id, title, keys)| json!({"id": id, "title": title, "properties": keys}))
                    .collect(),
            ),
        );
        if let Some(props) = obj.get_mut("properties").and_then(Json::as_object_mut) {
            for (key, prop) in props.iter_mut() {
                if let (Some(group), Some(p)) = (group_of(key), prop.as_object_mut()) {
                    p.insert("x-group".into(), json!(group));
                }
            }
        }
    }
    root
}

/// The section a top-level key belongs to.
pub fn group_of(key: &str) -> Option<&'static str> {
    GROUPS
        .iter()
        .find(|(_, _, keys)| keys.contains(&key))
        .map(|(id, _, _)| *id)
}

/// Whether the property at `path` is a secret (read back masked, so written only).
fn is_secret(path: &[&str]) -> bool {
    matches!(path, ["providers", _, "api_key"])
        || matches!(path, ["notify", _, "secret"])
        || matches!(path, ["webhooks", _, "secret"])
        || matches!(path, ["agents", _, "mcp_servers", _, "env", _])
}

/// The help text of the property at `path` (map keys as `*`), the most specific first.
fn help(path: &[&str]) -> Option<&'static str> {
    let exact = path.join(".");
    if let Some((_, text)) = HELP.iter().find(|(k, _)| *k == exact) {
        return Some(text);
    }
    let last = path.last()?;
    HELP.iter()
        .find(|(k, _)| k.strip_prefix("*.") == Some(last))
        .map(|(_, text)| *text)
}

/// The defaults of one entry of the map at `path`, when the typed config has them.
fn entry_defaults(path: &[&str]) -> Option<Json> {
    let v = match path {
        ["providers"] => serde_json::to_value(Provider::default()),
        ["agents"] => serde_json::to_value(Agent::default()),
        ["users"] => serde_json::to_value(User::default()),
        ["permission_profiles"] => serde_json::to_value(Profile::default()),
        ["agents", "*", "mcp_servers"] => serde_json::to_value(McpServer::default()),
        ["pricing"] => serde_json::to_value(crate::schema::Price::default()),
        ["webhooks"] => serde_json::to_value(crate::webhooks::Webhook::default()),
        _ => return None,
    };
    v.ok()
}

fn walk(shape: &Shape, path: &mut Vec<&'static str>, default: Option<&Json>) -> Json {
    let mut s = Map::new();
    match shape {
        Shape::Bool => {
            s.insert("type".into(), json!("boolean"));
        }
        Shape::Int { min, max } => {
            s.insert("type".into(), json!("integer"));
            s.insert("minimum".into(), json!(min));
            s.insert("maximum".into(), json!(max));
        }
        Shape::Fraction => {
            s.insert("type".into(), json!("number"));
            s.insert("exclusiveMinimum".into(), json!(0));
            s.insert("maximum".into(), json!(1));
        }
        Shape::Amount => {
            s.insert("type".into(), json!("number"));
            s.insert("minimum".into(), json!(0));
        }
        Shape::Str => {
            s.insert("type".into(), json!("string"));
            s.insert("maxLength".into(), json!(MAX_STRING_BYTES));
        }
        Shape::Enum(values) => {
            s.insert("type".into(), json!("string"));
            s.insert("enum".into(), json!(values));
        }
        Shape::StrList => {
            s.insert("type".into(), json!("array"));
            s.insert("items".into(), json!({"type": "string"}));
        }
        Shape::Struct(fields) => {
            s.insert("type".into(), json!("object"));
            s.insert("additionalProperties".into(), json!(false));
            let mut props = Map::new();
            for (key, field) in fields.iter() {
                path.push(key);
                let d = default.and_then(|d| d.get(*key));
                props.insert((*key).to_string(), walk(field, path, d));
                path.pop();
            }
            s.insert("properties".into(), Json::Object(props));
        }
        Shape::Map(value) => {
            s.insert("type".into(), json!("object"));
            let entry = entry_defaults(path);
            path.push("*");
            let inner = walk(value, path, entry.as_ref());
            path.pop();
            s.insert("additionalProperties".into(), inner);
            s.insert("x-keyName".into(), json!(key_name(path)));
        }
        Shape::TableList(item) => {
            s.insert("type".into(), json!("array"));
            path.push("*");
            let inner = walk(item, path, None);
            path.pop();
            s.insert("items".into(), inner);
        }
    }
    if let Some(text) = help(path) {
        s.insert("description".into(), json!(text));
    }
    if is_secret(path) {
        s.insert("writeOnly".into(), json!(true));
    } else if let Some(d) = default.filter(|d| !d.is_null() && !d.is_object()) {
        s.insert("default".into(), d.clone());
    }
    Json::Object(s)
}

/// What the keys of the map at `path` name, for a form's "add" button.
fn key_name(path: &[&str]) -> &'static str {
    match path.last() {
        Some(&"providers") => "provider",
        Some(&"agents") => "agent",
        Some(&"users") => "user",
        Some(&"permission_profiles") => "profile",
        Some(&"mcp_servers") => "server",
        Some(&"webhooks") => "webhook",
        Some(&"grants") => "resource",
        Some(&"pricing") => "model",
        _ => "name",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property of the schema, as `(path, schema)`.
    fn leaves<'a>(s: &'a Json, path: String, out: &mut Vec<(String, &'a Json)>) {
        out.push((path.clone(), s));
        if let Some(props) = s.get("properties").and_then(Json::as_object) {
            for (k, v) in props {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(v, p, out);
            }
        }
        for key in ["additionalProperties", "items"] {
            if let Some(v) = s.get(key).filter(|v| v.is_object()) {
                leaves(v, format!("{path}.*"), out);
            }
        }
    }

    #[test]
    fn every_property_has_help_and_a_type() {
        let schema = json_schema();
        let mut all = Vec::new();
        leaves(&schema, String::new(), &mut all);
        assert!(all.len() > 60, "{}", all.len());
        for (path, s) in all.iter().skip(1) {
            assert!(s.get("type").is_some(), "{path}: no type");
            if !path.ends_with(".*") || path.ends_with("grants.*") {
                assert!(s.get("description").is_some(), "{path}: no help text");
            }
        }
    }

    #[test]
    fn enums_ranges_secrets_groups_and_defaults() {
        let s = json_schema();
        let agent = &s["properties"]["agents"]["additionalProperties"]["properties"];
        assert_eq!(
            agent["autonomy"]["enum"],
            json!(["supervised", "full", "read_only", "plan"])
        );
        assert_eq!(agent["autonomy"]["default"], json!("supervised"));
        assert_eq!(agent["auto_compact"]["type"], json!("boolean"));
        assert_eq!(agent["max_context_tokens"]["default"], json!(32000));
        let provider = &s["properties"]["providers"]["additionalProperties"]["properties"];
        assert_eq!(provider["api_key"]["writeOnly"], json!(true));
        assert!(provider["api_key"].get("default").is_none());
        assert_eq!(
            s["properties"]["wss"]["properties"]["port"]["maximum"],
            json!(65_535)
        );
        assert_eq!(s["properties"]["users"]["x-group"], json!("permissions"));
        assert_eq!(s["properties"]["hooks"]["x-group"], json!("hooks"));
        let props = s["properties"].as_object().map(|m| m.len()).unwrap_or(0);
        let grouped: usize = GROUPS.iter().map(|(_, _, k)| k.len()).sum();
        assert_eq!(props, grouped, "every top-level key is in one group");
    }
}
