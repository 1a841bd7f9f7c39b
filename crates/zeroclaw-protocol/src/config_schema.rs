//! The result of `config/schema` (SPEC §6): the configuration's JSON Schema, for building a
//! settings form (sections, help text per property, enums, ranges, write-only secrets).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `config/schema` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigSchemaResult {
    /// A JSON Schema (2020-12) of the whole configuration; `x-groups` lists its sections,
    /// each top-level property names its own in `x-group`, secrets are `writeOnly`.
    pub schema: Value,
}
