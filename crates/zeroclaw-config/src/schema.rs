//! The typed configuration (SPEC §6): serde types, defaults, the default file text, and the
//! cross-reference checks that types alone cannot express.
//!
//! Every struct is `deny_unknown_fields` and `default`, so a missing key or section takes
//! its default and a missing map (agents, providers, …) is empty. Types and key names are
//! checked first by [`crate::shape`] (which can name the offending property); this module
//! then checks references ([`Config::validate`]), and serde builds the view from the text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::path::{PropPath, WritePattern};

/// The verbs a grant may name (SPEC §4.1).
pub const VERBS: &[&str] = &["create", "read", "update", "delete", "execute"];
/// The resources a grant may name.
pub const RESOURCES: &[&str] = &["system", "sessions", "files", "config", "schedules"];
/// The tools an agent may list.
pub const TOOLS: &[&str] = &["bash", "read_file", "write_file", "ask_user"];
/// Provider kinds.
pub const PROVIDER_KINDS: &[&str] = &["echo", "openai", "anthropic", "ollama", "gemini"];
/// The smallest thinking budget the providers accept (Anthropic's minimum).
pub const MIN_THINKING_BUDGET: u32 = 1024;
/// Agent autonomy levels.
pub const AUTONOMY: &[&str] = &["supervised", "full", "read_only", "plan"];
/// How long an idle live session stays loaded by default (SPEC §22).
pub const DEFAULT_SESSION_IDLE_SECS: u32 = 900;
/// The longest `limits.session_idle_secs`: a week.
pub const MAX_SESSION_IDLE_SECS: u32 = 7 * 24 * 3600;
/// Values of an agent's `sandbox` (SPEC §21.2).
pub const SANDBOX_MODES: &[&str] = &["auto", "off"];

/// What a fresh config dir gets (mode 0600). Valid under the schema; see the tests.
pub const DEFAULT_CONFIG_TOML: &str = r#"# zeroclaw configuration.
# Unknown keys are errors; missing keys and sections take their defaults.
# Edit by hand or with `zeroclaw rpc config/set '{"prop":"…","value":…}'`.

[security]
# The daemon's own uid is the admin principal `operator` while this is true.
trust_daemon_uid = true

[providers.echo]
kind = "echo"                      # offline: streams the prompt back, word by word

# An OpenAI-compatible chat-completions server:
# [providers.local]
# kind = "openai"
# base_url = "http://127.0.0.1:11434/v1"
# api_key_env = "OPENAI_API_KEY"   # or api_key = "…" (secret: masked on read)
# model = "llama3.2"

# Anthropic's Messages API (prompt caching, thinking):
# [providers.claude]
# kind = "anthropic"
# base_url = ""                    # empty = https://api.anthropic.com
# api_key_env = ""                 # empty = ANTHROPIC_API_KEY; or api_key = "…"
# model = "claude-sonnet-4-5"

# Ollama's own API (honours the agent's max_context_tokens as num_ctx):
# [providers.ollama]
# kind = "ollama"
# base_url = ""                    # empty = http://127.0.0.1:11434
# model = "llama3.2"

# Google's Gemini API (thought signatures kept across tool calls):
# [providers.gemini]
# kind = "gemini"
# base_url = ""                    # empty = https://generativelanguage.googleapis.com
# api_key_env = ""                 # empty = GEMINI_API_KEY; or api_key = "…"
# model = "gemini-2.5-flash"

[agents.default]
provider = "echo"
model = ""                         # empty = the provider's model
system_prompt = "You are a helpful assistant."
tools = ["bash", "read_file", "write_file", "ask_user"]
autonomy = "supervised"            # supervised: bash and write_file need approval; full; read_only; plan
max_context_tokens = 32000
max_output_tokens = 8192           # longest answer (anthropic, ollama, gemini; not openai)
thinking_budget = 0                # tokens of thinking; 0 = off, else at least 1024
max_tool_iterations = 20
keep_recent_turns = 2              # compaction keeps the last N whole turns verbatim
auto_compact = true                # compact before a call over compact_threshold of the window
compact_threshold = 0.8
workspace = ""                     # empty = <config dir>/agents/<alias>/workspace
checkpoint_budget_mb = 512         # file checkpoints kept per session (rewind); 0 = off
# The sandbox of bash and MCP servers (Landlock on Linux; admin-only). read_only writes
# nowhere but a private TMPDIR; supervised and full also in the session's cwd and these:
# sandbox = "auto"                 # "off": unconfined (read_only then refuses bash)
# sandbox_writable = []            # more absolute paths supervised and full may write
# sandbox_network = true           # false: no TCP connect or bind (Landlock ABI 4 or later)
# sandbox_deny_read = ["~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gcloud", "~/.netrc",
#   "~/.docker/config.json", "/etc/shadow", "/etc/gshadow"]   # read_only cannot read these
# env = []                         # daemon variables bash and MCP servers also get (names)
# instructions_files = true        # AGENTS.md (else CLAUDE.md) files in the system prompt

# stdio MCP tool servers started for each session of the agent (tools named SERVER__TOOL):
# [agents.default.mcp_servers.files]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
# env = { }

# Hooks: commands run at points of every agent's turns, as the daemon's user (admin-only;
# `[[agents.NAME.hooks.EVENT]]` for one agent). Events: session_start, user_prompt_submit,
# pre_tool_use, post_tool_use, pre_compact, stop.
# [[hooks.pre_tool_use]]
# command = "/etc/zeroclaw/hooks/no-rm-rf"
# matcher = "bash"                 # a regular expression over the whole tool name
# timeout_secs = 5                 # default 60

# Local users and what they may do:
# [permission_profiles.operator]
# admin = false
# grants = { sessions = ["create", "read", "update", "execute", "delete"], files = ["create"], config = ["read", "update"] }
# allowed_agents = ["default"]     # "*" = all
# config_write_paths = ["users.*"] # "*" = all; "a.*" covers the subtree under a
#
# [users.example]
# uid = 1001
# permission_profiles = ["operator"]

[limits]
connections_per_principal = 32
connections_total = 1024
unauthenticated_ws = 64            # WebSocket peers not yet past initialize
live_sessions_per_principal = 16   # non-admin principals only; the daemon-wide limit is 64
session_idle_secs = 900            # an unused live session is unloaded after this (ACP ones come back)
schedules_per_principal = 100      # schedules one principal may keep (SPEC §24.1)

[wss]
enabled = false
bind = "127.0.0.1"
port = 9781
cert_path = ""                     # TLS is required when bind is not a loopback address
key_path = ""
allowed_origins = []               # browser origins allowed to open a WebSocket

# Host names the gateway answers besides loopback ones (admin-only; DNS rebinding):
# [gateway]
# hostnames = ["zeroclaw.example.org"]
# cors_origins = ["https://app.example.org"]   # browser origins allowed to call /api/v1/
"#;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub security: Security,
    pub providers: BTreeMap<String, Provider>,
    pub agents: BTreeMap<String, Agent>,
    pub limits: Limits,
    pub users: BTreeMap<String, User>,
    pub permission_profiles: BTreeMap<String, Profile>,
    pub wss: Wss,
    /// The gateway's own settings beyond its listener (SPEC §17.2).
    pub gateway: GatewaySettings,
    /// Hooks run for every agent, before the agent's own (SPEC §21.1).
    pub hooks: crate::hooks::Hooks,
    /// Notification channels by name (SPEC §24.3; admin-only).
    pub notify: BTreeMap<String, crate::notify::NotifyChannel>,
    /// Prices by model name (SPEC §24.2). Admin-only.
    pub pricing: BTreeMap<String, Price>,
    /// Webhooks that start turns (SPEC §23.1), by name.
    pub webhooks: BTreeMap<String, crate::webhooks::Webhook>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Security {
    pub trust_daemon_uid: bool,
}

impl Default for Security {
    fn default() -> Self {
        Security {
            trust_daemon_uid: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    #[default]
    Echo,
    Openai,
    /// Anthropic's Messages API (SPEC §19).
    Anthropic,
    /// Ollama's `/api/chat` (SPEC §19).
    Ollama,
    /// Google's Gemini `streamGenerateContent` (SPEC §19).
    Gemini,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Provider {
    pub kind: ProviderKind,
    /// Empty = [`Provider::DEFAULT_OPENAI_BASE_URL`] for `openai`.
    pub base_url: String,
    /// Name of the environment variable holding the API key.
    pub api_key_env: String,
    /// Secret: read back as `"***"` by `config/get`.
    pub api_key: String,
    pub model: String,
    pub timeout_secs: u64,
}

impl Default for Provider {
    fn default() -> Self {
        Provider {
            kind: ProviderKind::Echo,
            base_url: String::new(),
            api_key_env: String::new(),
            api_key: String::new(),
            model: String::new(),
            timeout_secs: 120,
        }
    }
}

impl Provider {
    pub const DEFAULT_OPENAI_BASE_URL: &'static str = "https://api.openai.com/v1";
    pub const DEFAULT_ANTHROPIC_BASE_URL: &'static str = "https://api.anthropic.com";
    pub const DEFAULT_OLLAMA_BASE_URL: &'static str = "http://127.0.0.1:11434";
    pub const DEFAULT_GEMINI_BASE_URL: &'static str = "https://generativelanguage.googleapis.com";

    /// `base_url`, or the kind's default when empty (SPEC §19).
    pub fn effective_base_url(&self) -> &str {
        if !self.base_url.is_empty() {
            return &self.base_url;
        }
        match self.kind {
            ProviderKind::Anthropic => Self::DEFAULT_ANTHROPIC_BASE_URL,
            ProviderKind::Ollama => Self::DEFAULT_OLLAMA_BASE_URL,
            ProviderKind::Gemini => Self::DEFAULT_GEMINI_BASE_URL,
            ProviderKind::Echo | ProviderKind::Openai => Self::DEFAULT_OPENAI_BASE_URL,
        }
    }

    /// `api_key_env`, or the kind's usual variable when empty (`ANTHROPIC_API_KEY`).
    pub fn effective_api_key_env(&self) -> &str {
        if !self.api_key_env.is_empty() {
            return &self.api_key_env;
        }
        match self.kind {
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GEMINI_API_KEY",
            ProviderKind::Echo | ProviderKind::Openai | ProviderKind::Ollama => "",
        }
    }

    /// The API key: `api_key` if set, else the variable named by
    /// [`Provider::effective_api_key_env`] if any.
    pub fn resolve_api_key(&self) -> Option<String> {
        if !self.api_key.is_empty() {
            return Some(self.api_key.clone());
        }
        let var = self.effective_api_key_env();
        if var.is_empty() {
            return None;
        }
        std::env::var(var).ok().filter(|k| !k.is_empty())
    }
}

pub use crate::autonomy::Autonomy;

/// `checkpoint_budget_mb` when not set (SPEC §18).
pub const DEFAULT_CHECKPOINT_BUDGET_MB: u32 = 512;
/// The largest `checkpoint_budget_mb` accepted (1 TiB).
pub const MAX_CHECKPOINT_BUDGET_MB: u32 = 1_048_576;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Agent {
    /// Required: the name of an entry of `providers`.
    pub provider: String,
    /// Empty = the provider's model.
    pub model: String,
    pub system_prompt: String,
    pub tools: Vec<String>,
    pub autonomy: Autonomy,
    pub max_context_tokens: u32,
    /// Longest answer of one provider call, in tokens (SPEC §19; native providers).
    pub max_output_tokens: u32,
    /// Tokens the model may think before answering; 0 = off, else at least
    /// [`MIN_THINKING_BUDGET`] and under `max_output_tokens`.
    pub thinking_budget: u32,
    pub max_tool_iterations: u32,
    /// Empty = `<config dir>/agents/<alias>/workspace`; relative = under the config dir.
    pub workspace: String,
    /// Storage for the file checkpoints of each session, in MiB (SPEC §18); 0 = none are
    /// recorded.
    pub checkpoint_budget_mb: u32,
    /// stdio MCP tool servers started for each session of this agent (SPEC §16).
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// Compaction keeps this many whole turns verbatim (SPEC §18).
    pub keep_recent_turns: u32,
    /// Compact before a provider call whose context would exceed `compact_threshold` ×
    /// `max_context_tokens` (SPEC §18).
    pub auto_compact: bool,
    /// In (0, 1].
    pub compact_threshold: f64,
    /// Hooks run for this agent's sessions, after the global ones (SPEC §21.1).
    pub hooks: crate::hooks::Hooks,
    /// Whether `bash` and MCP servers run in the sandbox (SPEC §21.2).
    pub sandbox: SandboxMode,
    /// Absolute paths `supervised` and `full` may also write in the sandbox.
    pub sandbox_writable: Vec<String>,
    /// `false`: the sandbox also denies TCP connect and bind (where Landlock can).
    pub sandbox_network: bool,
    /// Paths (absolute, or `~/…` for the daemon's home) a `read_only` program cannot read
    /// in the sandbox (SPEC §17.2).
    pub sandbox_deny_read: Vec<String>,
    /// Names of the daemon's environment variables that `bash` and MCP servers also get,
    /// beyond the few every program gets (SPEC §17.2).
    pub env: Vec<String>,
    /// Whether the `AGENTS.md` (else `CLAUDE.md`) files of the user and of the session's
    /// repository are added to the system prompt (SPEC §26).
    pub instructions_files: bool,
    /// Budgets (SPEC §24.2): most tokens of one turn, of one session; 0 = no limit.
    pub max_turn_tokens: u64,
    pub max_session_tokens: u64,
    /// Most cost of one turn in US dollars (needs a `[pricing]` entry for the model);
    /// 0 = no limit.
    pub max_turn_usd: f64,
    /// How long a paused turn waits for `raise` or `stop`; 0 = 120 s for an interactive
    /// turn, 3600 s for a scheduled or webhook one.
    pub budget_wait_secs: u32,
}

/// `sandbox_deny_read` when not set (SPEC §17.2; `/etc/shadow` and `/etc/gshadow` from
/// issue 44).
pub const DEFAULT_SANDBOX_DENY_READ: &[&str] = &[
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.config/gcloud",
    "~/.netrc",
    "~/.docker/config.json",
    "/etc/shadow",
    "/etc/gshadow",
];

/// An agent's `sandbox` (SPEC §21.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Landlock where the kernel has it.
    #[default]
    Auto,
    /// Never confined.
    Off,
}

/// One stdio MCP server: `[agents.NAME.mcp_servers.SERVER]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct McpServer {
    /// The program (looked up in `PATH` when not a path).
    pub command: String,
    pub args: Vec<String>,
    /// Added to the daemon's environment.
    pub env: BTreeMap<String, String>,
}

impl Default for Agent {
    fn default() -> Self {
        Agent {
            provider: String::new(),
            model: String::new(),
            system_prompt: String::new(),
            tools: Vec::new(),
            autonomy: Autonomy::Supervised,
            max_context_tokens: 32000,
            max_output_tokens: 8192,
            thinking_budget: 0,
            max_tool_iterations: 20,
            workspace: String::new(),
            checkpoint_budget_mb: DEFAULT_CHECKPOINT_BUDGET_MB,
            mcp_servers: BTreeMap::new(),
            keep_recent_turns: 2,
            auto_compact: true,
            compact_threshold: 0.8,
            hooks: crate::hooks::Hooks::default(),
            sandbox: SandboxMode::Auto,
            sandbox_writable: Vec::new(),
            sandbox_network: true,
            sandbox_deny_read: DEFAULT_SANDBOX_DENY_READ
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
            env: Vec::new(),
            instructions_files: true,
            max_turn_tokens: 0,
            max_session_tokens: 0,
            max_turn_usd: 0.0,
            budget_wait_secs: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    pub connections_per_principal: u32,
    pub connections_total: u32,
    /// WebSocket connections that have not completed `initialize` yet (SPEC §17).
    pub unauthenticated_ws: u32,
    /// Live sessions one non-admin principal may hold (SPEC §17).
    pub live_sessions_per_principal: u32,
    /// Seconds an idle live session stays loaded before it is unloaded (SPEC §22).
    pub session_idle_secs: u32,
    /// Schedules one principal may keep (SPEC §24.1).
    pub schedules_per_principal: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connections_per_principal: 32,
            connections_total: 1024,
            unauthenticated_ws: 64,
            live_sessions_per_principal: 16,
            session_idle_secs: DEFAULT_SESSION_IDLE_SECS,
            schedules_per_principal: 100,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct User {
    /// Local peer uid mapped to this user; `None` for a token-only (WebSocket) user.
    pub uid: Option<u32>,
    pub permission_profiles: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Profile {
    /// Every grant, every path, every agent.
    pub admin: bool,
    /// resource → verbs.
    pub grants: BTreeMap<String, Vec<String>>,
    /// Agent aliases, or `"*"` for all. Names need not exist (yet).
    pub allowed_agents: Vec<String>,
    /// Write-path patterns ([`WritePattern`]).
    pub config_write_paths: Vec<String>,
    /// Most tokens a holder may spend per UTC day over all agents (SPEC §24.2); 0 = no
    /// limit. With several profiles the smallest non-zero limit holds.
    pub max_daily_tokens: u64,
    /// Most cost per UTC day, in US dollars; 0 = no limit.
    pub max_daily_usd: f64,
}

/// One model's prices (`[pricing."MODEL"]`, SPEC §24.2), US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Input tokens read from the provider's cache; 0 = priced as other input.
    pub cached_input_per_mtok: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Wss {
    pub enabled: bool,
    pub bind: String,
    pub port: u16,
    pub cert_path: String,
    pub key_path: String,
    pub allowed_origins: Vec<String>,
}

/// `[gateway]`: the `Host` names the gateway answers besides loopback names and addresses
/// (SPEC §17.2 "Host names the listener"). Admin-only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySettings {
    pub hostnames: Vec<String>,
    /// Browser origins (`scheme://host[:port]`) allowed to call the REST API across
    /// origins (SPEC §23.2); none by default.
    pub cors_origins: Vec<String>,
}

impl Default for Wss {
    fn default() -> Self {
        Wss {
            enabled: false,
            bind: "127.0.0.1".into(),
            port: 9781,
            cert_path: String::new(),
            key_path: String::new(),
            allowed_origins: Vec::new(),
        }
    }
}

impl Wss {
    /// Whether `bind` is a loopback address (`localhost` counts).
    pub fn is_loopback(&self) -> bool {
        self.bind == "localhost"
            || self
                .bind
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// A cross-reference problem, located at a property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub prop: PropPath,
    pub message: String,
}

fn at(segs: &[&str]) -> PropPath {
    // Segments here are never empty: they come from literals and map keys checked earlier.
    PropPath::from_segments(segs.iter().copied()).unwrap_or_else(|| {
        PropPath::from_segments(["config"]).expect("literal segment is non-empty")
    })
}

/// The problems of one scope of hooks (SPEC §21.1), as violations.
fn hook_violations(hooks: &crate::hooks::Hooks, scope: &PropPath, out: &mut Vec<Violation>) {
    let mut found = Vec::new();
    hooks.validate(scope, &mut found);
    out.extend(
        found
            .into_iter()
            .map(|(prop, message)| Violation { prop, message }),
    );
}

/// Map keys become principal ids, workspace directory names and log labels, so they are
/// limited to a safe set (dots allowed, as in `agents."my.agent"`).
fn check_map_key(section: &str, key: &str, out: &mut Vec<Violation>) {
    let ok = !key.is_empty()
        && key.len() <= 64
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !ok {
        out.push(Violation {
            prop: at(&[section, key]),
            message: "invalid name: use 1-64 of A-Z a-z 0-9 _ - . (not starting with .)".into(),
        });
    }
}

impl Config {
    /// The default configuration (the parsed [`DEFAULT_CONFIG_TOML`]).
    pub fn default_file() -> Config {
        toml_edit::de::from_str(DEFAULT_CONFIG_TOML).expect("default config is valid")
    }

    /// Checks what types cannot: references, names, verbs, tools, patterns, TLS.
    /// Returns every violation found (empty = valid).
    pub fn validate(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        for name in self.providers.keys() {
            check_map_key("providers", name, &mut out);
        }
        for (name, p) in &self.providers {
            if p.timeout_secs == 0 {
                out.push(Violation {
                    prop: at(&["providers", name, "timeout_secs"]),
                    message: "must be at least 1".into(),
                });
            }
        }
        for (alias, a) in &self.agents {
            check_map_key("agents", alias, &mut out);
            if a.provider.is_empty() {
                out.push(Violation {
                    prop: at(&["agents", alias, "provider"]),
                    message: "provider is required".into(),
                });
            } else if !self.providers.contains_key(&a.provider) {
                out.push(Violation {
                    prop: at(&["agents", alias, "provider"]),
                    message: format!("unknown provider {:?}", a.provider),
                });
            }
            for (i, t) in a.tools.iter().enumerate() {
                if !TOOLS.contains(&t.as_str()) {
                    out.push(Violation {
                        prop: at(&["agents", alias, "tools"]),
                        message: format!(
                            "unknown tool {t:?} at index {i} (known: {})",
                            TOOLS.join(", ")
                        ),
                    });
                }
            }
            for (server, m) in &a.mcp_servers {
                if !valid_mcp_name(server) {
                    out.push(Violation {
                        prop: at(&["agents", alias, "mcp_servers", server]),
                        message: "MCP server names use letters, digits, '-' and single '_' \
                                  (they prefix tool names as SERVER__TOOL)"
                            .into(),
                    });
                }
                if m.command.trim().is_empty() {
                    out.push(Violation {
                        prop: at(&["agents", alias, "mcp_servers", server, "command"]),
                        message: "command is required".into(),
                    });
                }
            }
            hook_violations(&a.hooks, &at(&["agents", alias, "hooks"]), &mut out);
            for (i, w) in a.sandbox_writable.iter().enumerate() {
                if !Path::new(w).is_absolute() {
                    out.push(Violation {
                        prop: at(&["agents", alias, "sandbox_writable"]),
                        message: format!("{w:?} at index {i} is not an absolute path"),
                    });
                }
            }
            // A path that starts with `/` is absolute where the list is used (Landlock,
            // Linux); Windows would call `/etc/shadow` relative to a drive, and the default
            // list must still load there.
            for (i, d) in a.sandbox_deny_read.iter().enumerate() {
                if !(Path::new(d).is_absolute() || d.starts_with('/') || d.starts_with("~/")) {
                    out.push(Violation {
                        prop: at(&["agents", alias, "sandbox_deny_read"]),
                        message: format!("{d:?} at index {i} is neither absolute nor ~/…"),
                    });
                }
            }
            for (i, n) in a.env.iter().enumerate() {
                if n.is_empty() || n.contains('=') || n.contains('\0') {
                    out.push(Violation {
                        prop: at(&["agents", alias, "env"]),
                        message: format!("{n:?} at index {i} is not a variable name"),
                    });
                }
            }
            if !(a.compact_threshold > 0.0 && a.compact_threshold <= 1.0) {
                out.push(Violation {
                    prop: at(&["agents", alias, "compact_threshold"]),
                    message: "must be in (0, 1]".into(),
                });
            }
            if a.max_context_tokens == 0 {
                out.push(Violation {
                    prop: at(&["agents", alias, "max_context_tokens"]),
                    message: "must be at least 1".into(),
                });
            }
            if a.max_output_tokens == 0 {
                out.push(Violation {
                    prop: at(&["agents", alias, "max_output_tokens"]),
                    message: "must be at least 1".into(),
                });
            }
            if a.thinking_budget != 0
                && (a.thinking_budget < MIN_THINKING_BUDGET
                    || a.thinking_budget >= a.max_output_tokens)
            {
                out.push(Violation {
                    prop: at(&["agents", alias, "thinking_budget"]),
                    message: format!(
                        "must be 0 (off) or from {MIN_THINKING_BUDGET} to below max_output_tokens ({})",
                        a.max_output_tokens
                    ),
                });
            }
        }
        let mut uids: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for (name, u) in &self.users {
            check_map_key("users", name, &mut out);
            if let Some(uid) = u.uid {
                uids.entry(uid).or_default().push(name);
            }
            for p in &u.permission_profiles {
                if !self.permission_profiles.contains_key(p) {
                    out.push(Violation {
                        prop: at(&["users", name, "permission_profiles"]),
                        message: format!("unknown permission profile {p:?}"),
                    });
                }
            }
        }
        for (uid, names) in &uids {
            if names.len() > 1 {
                for n in names {
                    out.push(Violation {
                        prop: at(&["users", n, "uid"]),
                        message: format!(
                            "uid {uid} is mapped to several users: {}",
                            names.join(", ")
                        ),
                    });
                }
            }
        }
        for (name, p) in &self.permission_profiles {
            check_map_key("permission_profiles", name, &mut out);
            for (res, verbs) in &p.grants {
                if !RESOURCES.contains(&res.as_str()) {
                    out.push(Violation {
                        prop: at(&["permission_profiles", name, "grants", res]),
                        message: format!("unknown resource (known: {})", RESOURCES.join(", ")),
                    });
                }
                for v in verbs {
                    if !VERBS.contains(&v.as_str()) {
                        out.push(Violation {
                            prop: at(&["permission_profiles", name, "grants", res]),
                            message: format!("unknown verb {v:?} (known: {})", VERBS.join(", ")),
                        });
                    }
                }
            }
            for pat in &p.config_write_paths {
                if let Err(e) = WritePattern::parse(pat) {
                    out.push(Violation {
                        prop: at(&["permission_profiles", name, "config_write_paths"]),
                        message: e.0,
                    });
                }
            }
        }
        hook_violations(&self.hooks, &at(&["hooks"]), &mut out);
        self.validate_wss(&mut out);
        self.validate_gateway(&mut out);
        self.validate_cors(&mut out);
        for name in self.notify.keys() {
            check_map_key("notify", name, &mut out);
        }
        let mut found = Vec::new();
        crate::notify::validate(&self.notify, &mut found);
        out.extend(
            found
                .into_iter()
                .map(|(prop, message)| Violation { prop, message }),
        );
        for name in self.webhooks.keys() {
            check_map_key("webhooks", name, &mut out);
        }
        let agent_autonomy = |alias: &str| self.agents.get(alias).map(|a| a.autonomy);
        let user_known = |user: &str| self.users.contains_key(user);
        out.extend(
            crate::webhooks::violations(&self.webhooks, &agent_autonomy, &user_known)
                .into_iter()
                .map(|(prop, message)| Violation { prop, message }),
        );
        out
    }

    /// Each of `gateway.hostnames` is a host name or an IP address, without a port.
    fn validate_gateway(&self, out: &mut Vec<Violation>) {
        for name in &self.gateway.hostnames {
            let bare = name
                .strip_prefix('[')
                .and_then(|n| n.strip_suffix(']'))
                .unwrap_or(name);
            let ipv6 = bare.parse::<std::net::Ipv6Addr>().is_ok();
            let bad = bare.is_empty()
                || bare.len() > 253
                || bare
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || "/@?#[]".contains(c))
                || (bare.contains(':') && !ipv6);
            if bad {
                // At most 80 characters of it in the message.
                let shown: String = name.chars().take(80).collect();
                out.push(Violation {
                    prop: at(&["gateway", "hostnames"]),
                    message: format!(
                        "{shown:?} is not a host name or an IP address (no port, no scheme)"
                    ),
                });
            }
        }
    }

    /// Each of `gateway.cors_origins` is an origin: `http://` or `https://`, a host, an
    /// optional port, and nothing after.
    fn validate_cors(&self, out: &mut Vec<Violation>) {
        for origin in &self.gateway.cors_origins {
            let rest = origin
                .strip_prefix("https://")
                .or_else(|| origin.strip_prefix("http://"));
            let ok = rest.is_some_and(|host| {
                !host.is_empty()
                    && host.len() <= 260
                    && !host
                        .chars()
                        .any(|c| c.is_whitespace() || c.is_control() || "/@?#*".contains(c))
            });
            if !ok {
                let shown: String = origin.chars().take(80).collect();
                out.push(Violation {
                    prop: at(&["gateway", "cors_origins"]),
                    message: format!(
                        "{shown:?} is not an origin (expected scheme://host[:port], no path)"
                    ),
                });
            }
        }
    }

    fn validate_wss(&self, out: &mut Vec<Violation>) {
        let w = &self.wss;
        if w.bind != "localhost" && w.bind.parse::<std::net::IpAddr>().is_err() {
            out.push(Violation {
                prop: at(&["wss", "bind"]),
                message: format!("{:?} is not an IP address", w.bind),
            });
        }
        if w.cert_path.is_empty() != w.key_path.is_empty() {
            // Located at the one that is set (usually the one just written), naming the
            // other, so the message names each property once.
            let (set, missing) = if w.cert_path.is_empty() {
                ("key_path", "cert_path")
            } else {
                ("cert_path", "key_path")
            };
            out.push(Violation {
                prop: at(&["wss", set]),
                message: format!(
                    "wss.{missing} must be set too: the certificate and the key go together"
                ),
            });
        } else if w.enabled && w.cert_path.is_empty() && !w.is_loopback() {
            out.push(Violation {
                prop: at(&["wss", "cert_path"]),
                message: "TLS is required when bind is not a loopback address".into(),
            });
        }
    }

    /// Whether a change at `prop` takes effect only after a restart: the WebSocket
    /// listener (`wss.*`, `gateway.*`) and the `[limits]` are read at start.
    pub fn needs_restart(prop: &PropPath) -> bool {
        matches!(
            prop.segments().first().map(String::as_str),
            Some("wss" | "limits" | "gateway")
        )
    }

    /// The workspace directory of agent `alias`: its `workspace` if set (relative paths
    /// are taken under `config_dir`), else `<config_dir>/agents/<alias>/workspace`.
    /// Unknown aliases get the default location.
    pub fn agent_workspace(&self, alias: &str, config_dir: &Path) -> PathBuf {
        match self.agents.get(alias) {
            Some(a) if !a.workspace.is_empty() => config_dir.join(&a.workspace),
            _ => config_dir.join("agents").join(alias).join("workspace"),
        }
    }
}

/// Whether `name` may name an MCP server: 1-64 of `[A-Za-z0-9_-]`, no `__`, so that
/// `SERVER__TOOL` splits back unambiguously and stays a valid function name.
pub fn valid_mcp_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostnames(names: &[&str]) -> Vec<String> {
        let mut c = Config::default();
        c.gateway.hostnames = names.iter().map(|n| (*n).to_owned()).collect();
        c.validate().into_iter().map(|v| v.message).collect()
    }

    #[test]
    fn cors_origins_are_origins() {
        let mut c = Config::default();
        c.gateway.cors_origins = ["https://a.example", "http://127.0.0.1:8080"]
            .map(String::from)
            .to_vec();
        assert!(c.validate().is_empty());
        for bad in [
            "a.example",
            "https://a.example/x",
            "ftp://a",
            "https://",
            "*",
        ] {
            c.gateway.cors_origins = vec![bad.to_owned()];
            let v = c.validate();
            assert_eq!(v.len(), 1, "{bad:?}");
            assert!(v[0].message.contains("not an origin"), "{v:?}");
        }
    }

    #[test]
    fn gateway_hostnames_are_names_or_addresses_without_a_port() {
        let ok = [
            "zeroclaw.example.org",
            "192.0.2.1",
            "[2001:db8::1]",
            "2001:db8::1",
        ];
        assert_eq!(hostnames(&ok), Vec::<String>::new());
        for bad in [
            "",
            "example.org:443",
            "http://example.org",
            "a b",
            "user@example.org",
        ] {
            assert_eq!(hostnames(&[bad]).len(), 1, "{bad:?}");
        }
    }
}
