//! The schema as data: which keys exist, what type each holds, and the allowed range or
//! values. Used to (a) check a parsed `config.toml` so that errors name the property
//! (`users.x.uid: expected integer, found string`), (b) find the type a property path
//! expects, and (c) check and coerce a JSON value before it is written (SPEC §6: a JSON
//! string is accepted for a number or bool property only if it parses as one).
//!
//! Must agree with the serde types in [`crate::schema`]; a test checks the default file
//! against both, and every check here is re-done by serde on the resulting text.

use serde_json::Value as Json;
use toml_edit::{Array, InlineTable, Item, Table, Value};

use crate::hooks::MAX_HOOK_TIMEOUT_SECS;
use crate::path::PropPath;
use crate::schema::{
    AUTONOMY, MAX_CHECKPOINT_BUDGET_MB, MAX_SESSION_IDLE_SECS, PROVIDER_KINDS, SANDBOX_MODES,
};

/// The type of one property.
#[derive(Debug)]
pub enum Shape {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Str,
    /// A number in `(0, 1]` (an integer is accepted and stored as a float).
    Fraction,
    /// A number ≥ 0, finite (an amount of money; an integer is accepted as a float).
    Amount,
    /// A string from a fixed list.
    Enum(&'static [&'static str]),
    StrList,
    /// A table with fixed keys.
    Struct(&'static [(&'static str, Shape)]),
    /// A table whose keys are names chosen by the user.
    Map(&'static Shape),
    /// An array of tables of one shape (`[[hooks.stop]]`), written as an inline array.
    TableList(&'static Shape),
}

const U32: Shape = Shape::Int {
    min: 0,
    max: u32::MAX as i64,
};
const POSITIVE_U32: Shape = Shape::Int {
    min: 1,
    max: u32::MAX as i64,
};

static PROVIDER: Shape = Shape::Struct(&[
    ("kind", Shape::Enum(PROVIDER_KINDS)),
    ("base_url", Shape::Str),
    ("api_key_env", Shape::Str),
    ("api_key", Shape::Str),
    ("model", Shape::Str),
    (
        "timeout_secs",
        Shape::Int {
            min: 1,
            max: 86_400,
        },
    ),
]);

static AGENT: Shape = Shape::Struct(&[
    ("provider", Shape::Str),
    ("model", Shape::Str),
    ("system_prompt", Shape::Str),
    ("tools", Shape::StrList),
    ("autonomy", Shape::Enum(AUTONOMY)),
    ("max_context_tokens", POSITIVE_U32),
    ("max_output_tokens", POSITIVE_U32),
    ("thinking_budget", U32),
    (
        "max_tool_iterations",
        Shape::Int {
            min: 0,
            max: 10_000,
        },
    ),
    ("workspace", Shape::Str),
    (
        "checkpoint_budget_mb",
        Shape::Int {
            min: 0,
            max: MAX_CHECKPOINT_BUDGET_MB as i64,
        },
    ),
    ("mcp_servers", Shape::Map(&MCP_SERVER)),
    // Compaction (SPEC §18).
    (
        "keep_recent_turns",
        Shape::Int {
            min: 0,
            max: 10_000,
        },
    ),
    ("auto_compact", Shape::Bool),
    ("compact_threshold", Shape::Fraction),
    // Hooks (SPEC §21.1).
    ("hooks", HOOKS),
    // The sandbox (SPEC §21.2).
    ("sandbox", Shape::Enum(SANDBOX_MODES)),
    ("sandbox_writable", Shape::StrList),
    ("sandbox_network", Shape::Bool),
    ("sandbox_deny_read", Shape::StrList),
    // What bash and MCP servers inherit of the daemon's environment (SPEC §17.2).
    ("env", Shape::StrList),
    // Instructions files in the system prompt (SPEC §26).
    ("instructions_files", Shape::Bool),
    // Budgets (SPEC §24.2).
    ("max_turn_tokens", U63),
    ("max_session_tokens", U63),
    ("max_turn_usd", Shape::Amount),
    (
        "budget_wait_secs",
        Shape::Int {
            min: 0,
            max: 86_400,
        },
    ),
]);

/// A token count: 0..=i64::MAX (TOML integers are signed).
const U63: Shape = Shape::Int {
    min: 0,
    max: i64::MAX,
};

static PRICE: Shape = Shape::Struct(&[
    ("input_per_mtok", Shape::Amount),
    ("output_per_mtok", Shape::Amount),
    ("cached_input_per_mtok", Shape::Amount),
]);

static HOOK: Shape = Shape::Struct(&[
    ("command", Shape::Str),
    ("matcher", Shape::Str),
    (
        "timeout_secs",
        Shape::Int {
            min: 1,
            max: MAX_HOOK_TIMEOUT_SECS as i64,
        },
    ),
]);

/// The hooks of one scope, by event (the names of [`crate::hooks::HOOK_EVENTS`]).
const HOOKS: Shape = Shape::Struct(&[
    ("session_start", Shape::TableList(&HOOK)),
    ("user_prompt_submit", Shape::TableList(&HOOK)),
    ("pre_tool_use", Shape::TableList(&HOOK)),
    ("post_tool_use", Shape::TableList(&HOOK)),
    ("pre_compact", Shape::TableList(&HOOK)),
    ("stop", Shape::TableList(&HOOK)),
]);

static MCP_SERVER: Shape = Shape::Struct(&[
    ("command", Shape::Str),
    ("args", Shape::StrList),
    ("env", Shape::Map(&Shape::Str)),
]);

static USER: Shape = Shape::Struct(&[("uid", U32), ("permission_profiles", Shape::StrList)]);

static PROFILE: Shape = Shape::Struct(&[
    ("admin", Shape::Bool),
    ("grants", Shape::Map(&Shape::StrList)),
    ("allowed_agents", Shape::StrList),
    ("config_write_paths", Shape::StrList),
    ("max_daily_tokens", U63),
    ("max_daily_usd", Shape::Amount),
]);

/// The shape of one channel (writes and the form).
static NOTIFY_CHANNEL: Shape = Shape::Struct(&[
    ("kind", Shape::Enum(crate::notify::NOTIFY_KINDS)),
    ("url", Shape::Str),
    ("secret", Shape::Str),
    ("command", Shape::Str),
    ("events", Shape::StrList),
    ("users", Shape::StrList),
    ("priority", Shape::Int { min: 1, max: 5 }),
    (
        "timeout_secs",
        Shape::Int {
            min: 1,
            max: crate::notify::MAX_COMMAND_SECS as i64,
        },
    ),
]);

/// One webhook (SPEC §23.1).
static WEBHOOK: Shape = Shape::Struct(&[
    ("agent", Shape::Str),
    ("secret_env", Shape::Str),
    ("secret", Shape::Str),
    ("run_as", Shape::Str),
    ("prompt", Shape::Str),
    ("session", Shape::Str),
    ("key", Shape::Str),
    ("events", Shape::StrList),
    ("cwd", Shape::Str),
    ("autonomy", Shape::Enum(AUTONOMY)),
    (
        "rate_per_minute",
        Shape::Int {
            min: 1,
            max: crate::webhooks::MAX_WEBHOOK_RATE as i64,
        },
    ),
]);

/// The whole configuration.
pub static ROOT: Shape = Shape::Struct(&[
    (
        "security",
        Shape::Struct(&[("trust_daemon_uid", Shape::Bool)]),
    ),
    ("providers", Shape::Map(&PROVIDER)),
    ("agents", Shape::Map(&AGENT)),
    (
        "limits",
        Shape::Struct(&[
            ("connections_per_principal", POSITIVE_U32),
            ("connections_total", POSITIVE_U32),
            ("unauthenticated_ws", POSITIVE_U32),
            ("live_sessions_per_principal", POSITIVE_U32),
            (
                "session_idle_secs",
                Shape::Int {
                    min: 1,
                    max: MAX_SESSION_IDLE_SECS as i64,
                },
            ),
            ("schedules_per_principal", POSITIVE_U32),
        ]),
    ),
    ("users", Shape::Map(&USER)),
    ("permission_profiles", Shape::Map(&PROFILE)),
    (
        "wss",
        Shape::Struct(&[
            ("enabled", Shape::Bool),
            ("bind", Shape::Str),
            (
                "port",
                Shape::Int {
                    min: 0,
                    max: 65_535,
                },
            ),
            ("cert_path", Shape::Str),
            ("key_path", Shape::Str),
            ("allowed_origins", Shape::StrList),
        ]),
    ),
    (
        "gateway",
        Shape::Struct(&[
            ("hostnames", Shape::StrList),
            ("cors_origins", Shape::StrList),
        ]),
    ),
    ("hooks", HOOKS),
    // Notification channels (SPEC §24.3).
    ("notify", Shape::Map(&NOTIFY_CHANNEL)),
    ("pricing", Shape::Map(&PRICE)),
    ("webhooks", Shape::Map(&WEBHOOK)),
]);

/// A problem at a property.
pub type Located = (PropPath, String);

/// The longest string value or key the configuration may hold, in bytes (SPEC §17).
pub const MAX_STRING_BYTES: usize = 64 * 1024;

/// `s` quoted for an error message, cut after 80 bytes (at a character boundary) so an
/// error never echoes a huge value.
pub(crate) fn shown(s: &str) -> String {
    const SHOWN: usize = 80;
    if s.len() <= SHOWN {
        return format!("{s:?}");
    }
    let mut end = SHOWN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &s[..end], s.len())
}

fn check_len(what: &str, s: &str) -> Result<(), String> {
    match s.len() > MAX_STRING_BYTES {
        true => Err(format!(
            "{what} of {} bytes is over the limit of {MAX_STRING_BYTES} bytes",
            s.len()
        )),
        false => Ok(()),
    }
}

fn seg_path(parent: Option<&PropPath>, key: &str) -> PropPath {
    match parent {
        Some(p) => p.child(key),
        None => PropPath::from_segments([key]).unwrap_or_else(|| {
            PropPath::from_segments(["\"\""]).expect("literal segment is non-empty")
        }),
    }
}

impl Shape {
    /// The shape of the property at `path`, or a message if the schema has no such key.
    pub fn at(path: &PropPath) -> Result<&'static Shape, Located> {
        let mut shape: &'static Shape = &ROOT;
        for (i, seg) in path.segments().iter().enumerate() {
            shape = match shape {
                Shape::Struct(fields) => match fields.iter().find(|(k, _)| k == seg) {
                    Some((_, s)) => s,
                    None => return Err((path.clone(), "unknown property".into())),
                },
                Shape::Map(value) => value,
                _ => {
                    let parent = PropPath::from_segments(&path.segments()[..i])
                        .unwrap_or_else(|| path.clone());
                    return Err((path.clone(), format!("{parent} is not a table")));
                }
            };
        }
        Ok(shape)
    }

    fn describe(&self) -> String {
        match self {
            Shape::Bool => "boolean".into(),
            Shape::Int { .. } => "integer".into(),
            Shape::Fraction => "number in (0, 1]".into(),
            Shape::Amount => "number >= 0".into(),
            Shape::Str => "string".into(),
            Shape::Enum(v) => format!(
                "one of {}",
                v.iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Shape::StrList => "array of strings".into(),
            Shape::Struct(_) | Shape::Map(_) => "table".into(),
            Shape::TableList(_) => "array of tables".into(),
        }
    }

    fn check_int(&self, n: i64) -> Result<(), String> {
        match self {
            Shape::Int { min, max } if n < *min || n > *max => {
                Err(format!("{n} is out of range ({min}..={max})"))
            }
            _ => Ok(()),
        }
    }

    fn check_fraction(x: f64) -> Result<(), String> {
        match x > 0.0 && x <= 1.0 {
            true => Ok(()),
            false => Err(format!("{x} is out of range (0, 1]")),
        }
    }

    fn check_amount(x: f64) -> Result<(), String> {
        match x.is_finite() && x >= 0.0 {
            true => Ok(()),
            false => Err(format!("{x} is out of range (a number >= 0)")),
        }
    }

    fn check_enum(&self, s: &str) -> Result<(), String> {
        match self {
            Shape::Enum(v) if !v.contains(&s) => {
                Err(format!("expected {}, found {}", self.describe(), shown(s)))
            }
            _ => Ok(()),
        }
    }

    /// Checks a parsed TOML item against this shape. `path` is where the item sits (None =
    /// the document root).
    pub fn check_item(&self, item: &Item, path: Option<&PropPath>) -> Result<(), Located> {
        let here = || path.cloned().unwrap_or_else(|| seg_path(None, "config"));
        let mismatch = |found: &str| {
            (
                here(),
                format!("expected {}, found {found}", self.describe()),
            )
        };
        match (self, item) {
            (Shape::Struct(_) | Shape::Map(_), _) => {
                let Some(t) = item.as_table_like() else {
                    return Err(mismatch(item_kind(item)));
                };
                for (k, v) in t.iter() {
                    check_len("a key", k).map_err(|m| (here(), m))?;
                    let child = seg_path(path, k);
                    let shape = match self {
                        Shape::Struct(fields) => match fields.iter().find(|(f, _)| *f == k) {
                            Some((_, s)) => s,
                            None => return Err((child, "unknown key".into())),
                        },
                        Shape::Map(value) => value,
                        _ => unreachable!("matched above"),
                    };
                    shape.check_item(v, Some(&child))?;
                }
                Ok(())
            }
            (Shape::TableList(each), Item::ArrayOfTables(a)) => {
                for t in a.iter() {
                    each.check_item(&Item::Table(t.clone()), path)?;
                }
                Ok(())
            }
            (Shape::TableList(each), Item::Value(Value::Array(a))) => {
                for e in a.iter() {
                    each.check_item(&Item::Value(e.clone()), path)?;
                }
                Ok(())
            }
            (_, Item::Value(v)) => self.check_value(v).map_err(|m| (here(), m)),
            _ => Err(mismatch(item_kind(item))),
        }
    }

    fn check_value(&self, v: &Value) -> Result<(), String> {
        let found = value_kind(v);
        let mismatch = || format!("expected {}, found {found}", self.describe());
        match (self, v) {
            (Shape::Bool, Value::Boolean(_)) => Ok(()),
            (Shape::Int { .. }, Value::Integer(n)) => self.check_int(*n.value()),
            (Shape::Fraction, Value::Float(x)) => Shape::check_fraction(*x.value()),
            (Shape::Fraction, Value::Integer(n)) => Shape::check_fraction(*n.value() as f64),
            (Shape::Amount, Value::Float(x)) => Shape::check_amount(*x.value()),
            (Shape::Amount, Value::Integer(n)) => Shape::check_amount(*n.value() as f64),
            (Shape::Str, Value::String(s)) => check_len("a string", s.value()),
            (Shape::Enum(_), Value::String(s)) => self.check_enum(s.value()),
            (Shape::StrList, Value::Array(a)) => {
                for (i, e) in a.iter().enumerate() {
                    match e {
                        Value::String(s) => check_len(&format!("element {i}"), s.value())?,
                        _ => {
                            return Err(format!(
                                "expected array of strings, element {i} is not a string"
                            ));
                        }
                    }
                }
                Ok(())
            }
            _ => Err(mismatch()),
        }
    }

    /// Checks a JSON value against this shape and converts it to a TOML item, coercing a
    /// string to a number or bool only when it parses as one. Tables at `depth` 1 and 2
    /// (sections and map entries) become `[header]` tables; deeper ones are inline.
    pub fn to_item(&self, v: &Json, path: &PropPath) -> Result<Item, Located> {
        let err = |m: String| (path.clone(), m);
        let mismatch = || {
            err(format!(
                "expected {}, found {}",
                self.describe(),
                json_kind(v)
            ))
        };
        let item = match self {
            Shape::Bool => match v {
                Json::Bool(b) => toml_edit::value(*b),
                Json::String(s) => match s.as_str() {
                    "true" => toml_edit::value(true),
                    "false" => toml_edit::value(false),
                    _ => {
                        return Err(err(format!("expected boolean, found string {}", shown(s))));
                    }
                },
                _ => return Err(mismatch()),
            },
            Shape::Int { .. } => {
                let n = match v {
                    Json::Number(n) => match n.as_i64() {
                        Some(n) => n,
                        None if n.is_u64() => return Err(err(format!("{n} is out of range"))),
                        None => return Err(err(format!("expected integer, found {n}"))),
                    },
                    Json::String(s) => s
                        .parse::<i64>()
                        .map_err(|_| err(format!("expected integer, found string {}", shown(s))))?,
                    _ => return Err(mismatch()),
                };
                self.check_int(n).map_err(err)?;
                toml_edit::value(n)
            }
            Shape::Fraction => {
                let x = match v {
                    Json::Number(n) => n.as_f64(),
                    Json::String(s) => s.trim().parse::<f64>().ok(),
                    _ => return Err(mismatch()),
                };
                let x = x.ok_or_else(|| err(format!("expected {}", self.describe())))?;
                Shape::check_fraction(x).map_err(err)?;
                toml_edit::value(x)
            }
            Shape::Amount => {
                let x = match v {
                    Json::Number(n) => n.as_f64(),
                    Json::String(s) => s.trim().parse::<f64>().ok(),
                    _ => return Err(mismatch()),
                };
                let x = x.ok_or_else(|| err(format!("expected {}", self.describe())))?;
                Shape::check_amount(x).map_err(err)?;
                toml_edit::value(x)
            }
            Shape::Str | Shape::Enum(_) => match v {
                Json::String(s) => {
                    self.check_enum(s).map_err(err)?;
                    toml_edit::value(s.as_str())
                }
                _ => return Err(mismatch()),
            },
            Shape::StrList => match v {
                Json::Array(a) => {
                    let mut arr = Array::new();
                    for (i, e) in a.iter().enumerate() {
                        match e {
                            Json::String(s) => arr.push(s.as_str()),
                            _ => {
                                return Err(err(format!(
                                    "expected array of strings, element {i} is {}",
                                    json_kind(e)
                                )));
                            }
                        }
                    }
                    Item::Value(Value::Array(arr))
                }
                _ => return Err(mismatch()),
            },
            Shape::TableList(each) => {
                let Json::Array(list) = v else {
                    return Err(mismatch());
                };
                let mut arr = Array::new();
                for e in list {
                    // Deeper than any header: each entry comes back as an inline table.
                    let deep = path.child("_").child("_");
                    match each.to_item(e, &deep).map_err(|(_, m)| err(m))? {
                        Item::Value(v) => arr.push(v),
                        _ => return Err(err("expected an array of tables".into())),
                    }
                }
                Item::Value(Value::Array(arr))
            }
            Shape::Struct(_) | Shape::Map(_) => {
                let Json::Object(map) = v else {
                    return Err(mismatch());
                };
                let mut table = Table::new();
                for (k, ev) in map {
                    if k.is_empty() {
                        return Err(err("empty key".into()));
                    }
                    let child = path.child(k.as_str());
                    let shape = match self {
                        Shape::Struct(fields) => match fields.iter().find(|(f, _)| f == k) {
                            Some((_, s)) => s,
                            None => return Err((child, "unknown key".into())),
                        },
                        Shape::Map(value) => *value,
                        _ => unreachable!("matched above"),
                    };
                    table.insert(k, shape.to_item(ev, &child)?);
                }
                if path.len() <= 2 {
                    Item::Table(table)
                } else {
                    Item::Value(Value::InlineTable(table.into_inline_table()))
                }
            }
        };
        Ok(item)
    }
}

/// An empty container to create on the way to a deeper property.
pub fn new_container(inline_parent: bool) -> Item {
    if inline_parent {
        Item::Value(Value::InlineTable(InlineTable::new()))
    } else {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    }
}

fn item_kind(item: &Item) -> &'static str {
    match item {
        Item::None => "nothing",
        Item::Value(v) => value_kind(v),
        Item::Table(_) => "table",
        Item::ArrayOfTables(_) => "array of tables",
    }
}

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Integer(_) => "integer",
        Value::Float(_) => "float",
        Value::Boolean(_) => "boolean",
        Value::Datetime(_) => "datetime",
        Value::Array(_) => "array",
        Value::InlineTable(_) => "table",
    }
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "integer",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> PropPath {
        PropPath::parse(s).unwrap()
    }

    fn check(text: &str) -> Result<(), Located> {
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        ROOT.check_item(doc.as_item(), None)
    }

    #[test]
    fn default_file_matches_shape() {
        check(crate::schema::DEFAULT_CONFIG_TOML).unwrap();
    }

    #[test]
    fn file_errors_name_the_property() {
        let (at, m) = check("[security]\nbogus = 1\n").unwrap_err();
        assert_eq!(
            (at.to_string(), m.as_str()),
            ("security.bogus".into(), "unknown key")
        );
        let (at, m) = check("[users.x]\nuid = \"1001\"\n").unwrap_err();
        assert_eq!(at.to_string(), "users.x.uid");
        assert_eq!(m, "expected integer, found string");
        let (at, _) = check("[agents.a]\nautonomy = \"yolo\"\n").unwrap_err();
        assert_eq!(at.to_string(), "agents.a.autonomy");
        let (at, _) = check("[[agents]]\nprovider = \"x\"\n").unwrap_err();
        assert_eq!(at.to_string(), "agents");
        let (at, _) = check("[users.x]\nuid = -1\n").unwrap_err();
        assert_eq!(at.to_string(), "users.x.uid");
        let (at, _) = check("nope = 1\n").unwrap_err();
        assert_eq!(at.to_string(), "nope");
    }

    #[test]
    fn checkpoint_budget_is_a_bounded_count_of_mib() {
        check("[agents.a]\ncheckpoint_budget_mb = 0\n").unwrap();
        check("[agents.a]\ncheckpoint_budget_mb = 1048576\n").unwrap();
        for bad in ["-1", "1048577", "\"lots\"", "1.5"] {
            let (at, _) =
                check(&format!("[agents.a]\ncheckpoint_budget_mb = {bad}\n")).unwrap_err();
            assert_eq!(at.to_string(), "agents.a.checkpoint_budget_mb", "{bad}");
        }
        let budget = Shape::at(&p("agents.a.checkpoint_budget_mb")).unwrap();
        let path = p("agents.a.checkpoint_budget_mb");
        assert_eq!(
            budget.to_item(&json!("64"), &path).unwrap().as_integer(),
            Some(64)
        );
        assert!(budget.to_item(&json!(2_000_000), &path).is_err());
        let defaults = crate::schema::Config::default_file();
        assert_eq!(defaults.agents["default"].checkpoint_budget_mb, 512);
        assert_eq!(crate::schema::Agent::default().checkpoint_budget_mb, 512);
    }

    #[test]
    fn shape_lookup() {
        assert!(matches!(
            Shape::at(&p("users.example.uid")),
            Ok(Shape::Int { .. })
        ));
        assert!(matches!(
            Shape::at(&p("permission_profiles.op.grants.files")),
            Ok(Shape::StrList)
        ));
        assert!(Shape::at(&p("users.example.nope")).is_err());
        assert!(Shape::at(&p("wss.port.x")).is_err());
    }

    #[test]
    fn coercion() {
        let uid = Shape::at(&p("users.x.uid")).unwrap();
        assert_eq!(
            uid.to_item(&json!("1001"), &p("users.x.uid"))
                .unwrap()
                .as_integer(),
            Some(1001)
        );
        assert_eq!(
            uid.to_item(&json!(1001), &p("users.x.uid"))
                .unwrap()
                .as_integer(),
            Some(1001)
        );
        assert_eq!(
            uid.to_item(&json!("abc"), &p("users.x.uid")).unwrap_err().1,
            "expected integer, found string \"abc\""
        );
        assert!(uid.to_item(&json!(1.5), &p("users.x.uid")).is_err());
        assert!(uid.to_item(&json!(-1), &p("users.x.uid")).is_err());
        assert!(uid.to_item(&json!(null), &p("users.x.uid")).is_err());
        let b = Shape::at(&p("wss.enabled")).unwrap();
        assert_eq!(
            b.to_item(&json!("true"), &p("wss.enabled"))
                .unwrap()
                .as_bool(),
            Some(true)
        );
        assert!(b.to_item(&json!("yes"), &p("wss.enabled")).is_err());
        let s = Shape::at(&p("agents.a.model")).unwrap();
        assert!(s.to_item(&json!(5), &p("agents.a.model")).is_err());
        let prof = Shape::at(&p("permission_profiles.op")).unwrap();
        let (at, m) = prof
            .to_item(
                &json!({"admin": false, "grants": {"files": [1]}}),
                &p("permission_profiles.op"),
            )
            .unwrap_err();
        assert_eq!(at.to_string(), "permission_profiles.op.grants.files");
        assert!(m.contains("element 0"), "{m}");
        let (at, _) = prof
            .to_item(&json!({"adm": true}), &p("permission_profiles.op"))
            .unwrap_err();
        assert_eq!(at.to_string(), "permission_profiles.op.adm");
    }
}
