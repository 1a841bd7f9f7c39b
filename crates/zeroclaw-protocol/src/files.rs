//! Params and results of `file/attach` and the chunked upload `file/upload/{begin, chunk,
//! commit}` (SPEC §8). The stored-file entry and the upload results keep their snake_case
//! wire names (`ref_id`, `upload_id`, …), as the SPEC writes them. Unknown params fields
//! are refused, as the daemon does.

use crate::ids::SessionId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::Mode;
use crate::unchecked::Unchecked;

/// One file to store: inline base64 (`dataB64`) or, on the local endpoint for admin
/// principals, a `path` the daemon reads. Exactly one of the two.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileInput {
    #[serde(default, alias = "data_b64", skip_serializing_if = "Option::is_none")]
    pub data_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, alias = "mime_type", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// `file/attach` params: at most 10 MiB a file, 20 MiB in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Each is checked once the session is known, so its error can name it.
    #[schemars(length(min = 1))]
    pub files: Vec<Unchecked<FileInput>>,
}

/// A stored file (`file/attach` entries, `file/upload/commit` result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StoredFile {
    /// `sha256:<hex>` of the content.
    pub ref_id: String,
    /// `[IMAGE:<path>]` for images, else `[Document: <filename>] <path>`.
    pub marker: String,
    /// Absolute path in the agent's workspace (`uploads/<sha256>[.<ext>]`).
    pub workspace_path: String,
    pub size_bytes: u64,
    /// The same content was already stored for this session.
    pub deduplicated: bool,
}

/// `file/attach` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttachResult {
    pub files: Vec<StoredFile>,
}

/// `file/upload/begin` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadBeginParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(alias = "size_bytes")]
    pub size_bytes: u64,
    /// At most 255 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Hex SHA-256 the committed bytes must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// `file/upload/begin` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UploadBeginResult {
    pub upload_id: String,
    pub chunk_bytes: u64,
    pub max_bytes: u64,
}

/// `file/upload/chunk` params: `offset` must equal the bytes received so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadChunkParams {
    #[serde(alias = "upload_id")]
    pub upload_id: String,
    pub offset: u64,
    /// At most 1 MiB once decoded.
    #[serde(alias = "data_b64")]
    pub data_b64: String,
}

/// `file/upload/chunk` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UploadChunkResult {
    pub upload_id: String,
    pub received_bytes: u64,
}

/// `file/upload/commit` params; the result is a [`StoredFile`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadCommitParams {
    #[serde(alias = "upload_id")]
    pub upload_id: String,
}
