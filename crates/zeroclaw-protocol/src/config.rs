//! Params and results of `config/get`, `config/set`, `config/set-many` and `config/delete`
//! (SPEC §6). Values are JSON; properties are dotted paths (`agents."my.agent".model`).
//! Unknown params fields are refused, as the daemon does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::unchecked::Unchecked;

/// `config/get` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigGetParams {
    /// Without it, the whole config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prop: Option<String>,
}

/// `config/get` result: one property, or the whole config. Secrets read as `"***"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ConfigGetResult {
    Prop { prop: String, value: Value },
    Whole { config: Value },
}

/// `config/set` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSetParams {
    pub prop: String,
    pub value: Value,
}

/// One entry of `config/set-many`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigEntry {
    pub prop: String,
    pub value: Value,
}

/// `config/set-many` params: 1–256 entries, applied in order as one write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSetManyParams {
    /// Each is checked in turn, so its error can name it (`data.index`, `data.prop`).
    #[schemars(length(min = 1, max = 256))]
    pub sets: Vec<Unchecked<ConfigEntry>>,
}

/// `config/delete` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigDeleteParams {
    pub prop: String,
}

/// `config/set` result. `restartRequired`: a written property is read only at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSetResult {
    /// The canonical spelling of the written property.
    pub prop: String,
    pub set: bool,
    pub restart_required: bool,
}

/// `config/set-many` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSetManyResult {
    /// The written properties in request order, duplicates once.
    pub props: Vec<String>,
    pub set: bool,
    pub restart_required: bool,
}

/// `config/delete` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigDeleteResult {
    pub prop: String,
    pub deleted: bool,
    pub restart_required: bool,
}
