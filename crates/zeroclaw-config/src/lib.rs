//! zeroclaw-config: the daemon's configuration (SPEC §4, §6).
//!
//! - [`schema`]: typed, strict config (serde) and cross-reference checks;
//! - [`error`]: [`ConfigError`], why a read or write was refused, and [`PolicyError`], why a
//!   caller was (the daemon maps both to the wire);
//! - [`path`]: property paths and `config_write_paths` patterns;
//! - [`shape`]: the schema as data, for checking files and coercing JSON values;
//! - [`form`]: the configuration as a JSON Schema for forms (`config/schema`);
//! - [`store`]: [`ConfigStore`], serialized comment-preserving atomic writes;
//! - [`policy`]: principals, grants and the method → grant table;
//! - [`escalation`]: the "no escalation" rule for non-admin config writes;
//! - [`guard`]: everything a non-admin write may not bring about (escalation, admin-only
//!   settings changed from above, identities taken);
//! - [`secret`]: masking URL credentials and known secrets in text;
//! - [`persist`]: atomic file replacement (also used for uploads and pairing tokens);
//! - [`sweep`]: removing temp files an interrupted write left behind.

#![forbid(unsafe_code)]

pub mod autonomy;
pub mod error;
pub mod form;
pub mod hooks;
pub mod notify;
pub mod path;
pub mod schema;
pub mod shape;
pub mod webhooks;

pub use error::{ConfigError, PolicyError};
pub use hooks::{HOOK_EVENTS, Hook, Hooks};
pub use path::{PathError, PropPath, WritePattern};
pub use schema::{
    Agent, Autonomy, Config, Limits, McpServer, Profile, Provider, ProviderKind, SandboxMode,
    Security, User, Wss,
};
pub use webhooks::Webhook;
pub mod escalation;
pub mod guard;
pub mod policy;
pub mod value;

pub use policy::{Credential, Principal, resolve};
pub mod persist;
pub mod secret;
pub mod store;
pub mod sweep;

pub use store::{ConfigStore, Frozen, MAX_SET_MANY, OpenError, Writer};
pub use sweep::sweep_config_temp_files;
