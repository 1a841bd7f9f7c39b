//! `config/schema` (SPEC §6): the configuration's JSON Schema for settings forms, built
//! once from the config crate's shape table ([`zeroclaw_config::form`]) and answered from
//! memory.

use std::sync::OnceLock;

use serde_json::Value;
use zeroclaw_protocol::config_schema::ConfigSchemaResult;
use zeroclaw_protocol::system::NoParams;
use zeroclaw_rpc::ErrorObject;

/// `config/schema {}`: the same document for every caller (it holds no values but the
/// defaults; secrets are marked `writeOnly`).
pub(crate) fn schema(_: NoParams) -> Result<ConfigSchemaResult, ErrorObject> {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let schema = SCHEMA
        .get_or_init(zeroclaw_config::form::json_schema)
        .clone();
    Ok(ConfigSchemaResult { schema })
}
