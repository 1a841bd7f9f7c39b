//! Plain data types that cross the store's API. Nothing here touches SQLite.
//!
//! Transcript `content` is text. For `tool_call` and `tool_result` rows it is compact JSON
//! in the same shape as the wire updates ([`ToolCall`], [`ToolResult`]); use
//! [`Progress::to_row`] (or [`NewRow::tool_call`] / [`NewRow::tool_result`]) to build them so
//! recovery, which turns checkpoint events into rows itself, writes exactly the same shape.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Content of an `interruption` row.
pub const INTERRUPTED: &str = "[interrupted]";

/// The interaction surface of sessions created over the daemon's RPC socket.
pub const RPC_SURFACE: &str = "rpc";

/// A stored spelling that names no value of a [`Mode`], [`Role`] or [`CheckpointStatus`]
/// (read back as [`StoreError::Corrupt`](crate::StoreError::Corrupt)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownValue(pub String);

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnknownValue {}

macro_rules! str_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $var),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];

            /// The spelling stored in SQLite and used on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$var => $s),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;
            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $($s => Ok(Self::$var),)+
                    other => Err(UnknownValue(format!(
                        concat!("unknown ", stringify!($name), " {:?}"), other))),
                }
            }
        }
    };
}

str_enum!(
    /// Session mode: ACP sessions have checkpoints and snapshots; chat sessions keep plain
    /// history. The two never share rows, even with the same `session_id`.
    Mode { Acp = "acp", Chat = "chat" }
);

str_enum!(
    /// Role of a transcript row, as clients see it.
    Role {
        User = "user",
        Assistant = "assistant",
        ToolCall = "tool_call",
        ToolResult = "tool_result",
        /// Marker for an unfinished turn; content is exactly [`INTERRUPTED`]. Never part of
        /// the model context.
        Interruption = "interruption",
        /// The summary a compaction made (SPEC §18): visible to clients, never sent to the
        /// provider from the transcript (the compaction's snapshot carries it).
        Compaction = "compaction",
        /// A rewind's note (SPEC §22): what it went back to, the turns it took back and the
        /// files it restored, as JSON; visible to clients, never part of the model context.
        Rewind = "rewind",
        /// A failed turn's error (SPEC §22): JSON `{"message", "retries"}` ([`TurnError`]).
        /// Visible to clients, never part of the model context.
        Error = "error",
        /// A plan-mode turn's proposed plan (SPEC §26), markdown, after the turn's rows.
        /// Visible to clients, never part of the model context (the `propose_plan` call
        /// carries it there).
        Plan = "plan",
    }
);

str_enum!(
    /// State of a turn's checkpoint.
    CheckpointStatus {
        Open = "open",
        Completed = "completed",
        Cancelled = "cancelled",
        Failed = "failed",
        Interrupted = "interrupted",
    }
);

/// Addresses one session row: `(mode, session_id)` is unique.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    pub mode: Mode,
    pub session_id: String,
}

impl SessionKey {
    pub fn acp(session_id: impl Into<String>) -> Self {
        Self {
            mode: Mode::Acp,
            session_id: session_id.into(),
        }
    }

    pub fn chat(session_id: impl Into<String>) -> Self {
        Self {
            mode: Mode::Chat,
            session_id: session_id.into(),
        }
    }
}

/// Input of [`crate::Store::open_session`].
#[derive(Debug, Clone)]
pub struct NewSession {
    pub key: SessionKey,
    pub agent_alias: String,
    pub owner: String,
    pub cwd: Option<String>,
    /// [`RPC_SURFACE`] for sessions made over the daemon's socket.
    pub interaction_surface: String,
}

/// A session row. Times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    pub mode: Mode,
    pub session_id: String,
    pub agent_alias: String,
    pub owner: String,
    pub cwd: Option<String>,
    pub interaction_surface: String,
    pub created_at: i64,
    pub last_activity: i64,
    /// Set when the session was killed (tombstone).
    pub killed_at: Option<i64>,
    /// Number of visible transcript rows (rewound rows are not counted).
    pub message_count: i64,
    /// The title set with `session/set_title`, else the first line of the first prompt cut
    /// to [`DERIVED_TITLE_CHARS`] characters (SPEC §18); `None` when there is neither.
    pub title: Option<String>,
    /// The session and turn this one was forked from (SPEC §18 `session/fork`).
    pub forked_from: Option<ForkedFrom>,
}

/// Where a forked session came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    pub session_id: String,
    /// The source's last turn copied (`None`: the source had no finished turn).
    pub turn_id: Option<String>,
}

/// Characters of the first prompt's first line that make a session's default title.
pub const DERIVED_TITLE_CHARS: usize = 80;

/// Longest title `session/set_title` takes, in characters (SPEC §18).
pub const MAX_TITLE_CHARS: usize = 200;

impl SessionRow {
    pub fn key(&self) -> SessionKey {
        SessionKey {
            mode: self.mode,
            session_id: self.session_id.clone(),
        }
    }

    pub fn is_killed(&self) -> bool {
        self.killed_at.is_some()
    }
}

/// Result of [`crate::Store::open_session`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedSession {
    pub row: SessionRow,
    /// An existing, non-killed row was found (its history should be restored).
    pub resumed: bool,
}

/// A transcript row to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRow {
    pub role: Role,
    /// The row's text, unless it is [`NewRow::long`].
    pub content: String,
    /// A long text kept out of memory (a spilled answer), written into the row a piece at
    /// a time; `content` is then empty.
    pub long: Option<LongContent>,
}

/// A text the store reads a piece at a time, never whole (issue 27).
pub trait LongText: Send + Sync {
    /// Its length in bytes.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Calls `write` with each piece of its UTF-8 bytes, in order, until it fails.
    fn write_pieces(
        &self,
        write: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()>;
}

/// A shared [`LongText`], as a row carries it.
#[derive(Clone)]
pub struct LongContent(pub std::sync::Arc<dyn LongText>);

impl std::fmt::Debug for LongContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LongContent({} bytes)", self.0.len())
    }
}

/// The same text, not merely an equal one.
impl PartialEq for LongContent {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for LongContent {}

impl NewRow {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            long: None,
        }
    }

    /// A row of `role` whose text is `long`, written a piece at a time.
    pub fn long(role: Role, long: std::sync::Arc<dyn LongText>) -> Self {
        Self {
            role,
            content: String::new(),
            long: Some(LongContent(long)),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    pub fn tool_call(call: &ToolCall) -> Self {
        Self::new(Role::ToolCall, call.to_content())
    }

    pub fn tool_result(result: &ToolResult) -> Self {
        Self::new(Role::ToolResult, result.to_content())
    }

    /// A failed turn's `error` row.
    pub fn error(error: &TurnError) -> Self {
        Self::new(Role::Error, error.to_content())
    }

    /// A plan-mode turn's `plan` row (SPEC §26).
    pub fn plan(plan: impl Into<String>) -> Self {
        Self::new(Role::Plan, plan)
    }
}

/// A visible transcript row, as `session/messages` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRow {
    pub seq: i64,
    pub role: Role,
    pub content: String,
    pub turn_id: Option<String>,
    pub created_at: i64,
    /// A rewind went back to before this row's turn (only listed with `include_rewound`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rewound: bool,
    /// The content was cut: to [`MessagesQuery::max_content`], or to fit the page's byte
    /// budget (only for a single row larger than the whole budget).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A tool call, as recorded in a checkpoint and as `tool_call` row content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub name: String,
    pub raw_input: Value,
}

impl ToolCall {
    /// Compact JSON `{"toolCallId","name","rawInput"}`.
    pub fn to_content(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_content(content: &str) -> Option<Self> {
        serde_json::from_str(content).ok()
    }
}

/// A tool result, as recorded in a checkpoint and as `tool_result` row content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub tool_call_id: String,
    pub name: String,
    pub raw_output: Value,
}

impl ToolResult {
    /// Compact JSON `{"toolCallId","name","rawOutput"}`.
    pub fn to_content(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_content(content: &str) -> Option<Self> {
        serde_json::from_str(content).ok()
    }
}

/// A failed turn's error, as `error` row content (SPEC §22 "Failures stay in history"):
/// what the provider (or the daemon) said, and how many times the provider call was tried
/// again before the turn gave up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    pub message: String,
    pub retries: u32,
}

impl TurnError {
    /// Compact JSON `{"message","retries"}`.
    pub fn to_content(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_content(content: &str) -> Option<Self> {
        serde_json::from_str(content).ok()
    }
}

/// One step of a running turn, recorded in its checkpoint by
/// [`crate::Store::record_progress`].
///
/// Events are upserted by a key, so re-recording is never a duplicate:
/// - `Text` by `segment`: the daemon passes the text accumulated so far in the current text
///   segment (its own counter, 0, 1, … within the turn); a later call with the same segment
///   replaces the earlier text in place and keeps its position. A streaming text may
///   instead be recorded in pieces ([`crate::Store::append_text`]); the checkpoint then
///   shows the pieces joined as the segment's one text, at the first piece's position;
/// - `ToolCall` / `ToolResult` by `tool_call_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Progress {
    Text { segment: u32, text: String },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
}

impl Progress {
    /// The stored `kind` column: `text`, `tool_call` or `tool_result`.
    pub fn kind(&self) -> &'static str {
        match self {
            Progress::Text { .. } => "text",
            Progress::ToolCall(_) => "tool_call",
            Progress::ToolResult(_) => "tool_result",
        }
    }

    /// Upsert key within the turn.
    pub(crate) fn event_key(&self) -> String {
        match self {
            Progress::Text { segment, .. } => text_key(*segment),
            Progress::ToolCall(c) => format!("call:{}", c.tool_call_id),
            Progress::ToolResult(r) => format!("result:{}", r.tool_call_id),
        }
    }

    /// The transcript row this step becomes; `None` for empty text.
    pub fn to_row(&self) -> Option<NewRow> {
        match self {
            Progress::Text { text, .. } if text.is_empty() => None,
            Progress::Text { text, .. } => Some(NewRow::assistant(text.clone())),
            Progress::ToolCall(c) => Some(NewRow::tool_call(c)),
            Progress::ToolResult(r) => Some(NewRow::tool_result(r)),
        }
    }
}

/// The upsert key of segment `segment`'s text, and the prefix of its appended pieces' keys
/// (`text:<segment>+<n>`, `n` the piece's own event number). `+` sorts just below `,`, so a
/// segment's pieces are the keys in `("text:<segment>+", "text:<segment>,")`.
pub(crate) fn text_key(segment: u32) -> String {
    format!("text:{segment}")
}

/// A recorded checkpoint event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointEvent {
    /// Position within the turn, from 0; stable across text updates.
    pub n: u32,
    pub progress: Progress,
}

/// A turn's checkpoint with its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub turn_id: String,
    pub status: CheckpointStatus,
    /// Seq of the turn's user prompt row.
    pub started_seq: i64,
    /// The latest snapshot when the turn started (`None`: there was none). With
    /// `started_seq` it fixes the retained context just before the prompt (SPEC §18).
    pub snapshot_id: Option<i64>,
    pub updated_at: i64,
    pub events: Vec<CheckpointEvent>,
}

/// Input of [`crate::Store::messages`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessagesQuery {
    /// At most this many rows: the last ones before `before_seq`. `None` = no row limit.
    pub limit: Option<u32>,
    /// Exclusive upper bound on `seq`.
    pub before_seq: Option<i64>,
    /// Upper bound on the size of the returned rows as one compact JSON array of
    /// [`MessageRow`]. Older rows that do not fit are left for the next page; a single row
    /// larger than the whole budget is returned cut to fit, with `truncated: true`.
    pub max_bytes: usize,
    /// Longest `content` of one row, in bytes: longer content is cut at a character
    /// boundary, with `truncated: true` (SPEC §17).
    pub max_content: usize,
    /// Also list rows a rewind left behind (each carries `rewound: true`).
    pub include_rewound: bool,
}

impl Default for MessagesQuery {
    fn default() -> Self {
        Self {
            limit: None,
            before_seq: None,
            max_bytes: DEFAULT_PAGE_BYTES,
            max_content: MAX_MESSAGE_CONTENT,
            include_rewound: false,
        }
    }
}

/// 1 MiB: the longest `content` of one `session/messages` row (SPEC §17).
pub const MAX_MESSAGE_CONTENT: usize = 1024 * 1024;

/// 4 MiB: half the daemon's 8 MiB line limit, leaving room for the envelope.
pub const DEFAULT_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Result of [`crate::Store::messages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessagesPage {
    /// Ascending by `seq`.
    pub rows: Vec<MessageRow>,
    /// Every row of the session the query could list (rewound rows only with
    /// `include_rewound`).
    pub total: i64,
    /// Rows before `rows[0]` within the request's range were left out (by `limit` or by the
    /// byte budget); ask again with `before_seq = rows[0].seq`.
    pub has_more: bool,
}

/// Row of [`crate::Store::list_sessions`]; same as [`SessionRow`].
pub type SessionSummary = SessionRow;

/// A saved snapshot of the retained provider context.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub id: i64,
    /// Highest transcript seq the snapshot reflects.
    pub covers_seq: i64,
    /// Provider messages, opaque to the store. `[]` is authoritative (nothing before the
    /// boundary).
    pub messages: Value,
    pub created_at: i64,
}

/// A transcript row for replay into the model context (never an `interruption`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRow {
    pub seq: i64,
    pub turn_id: Option<String>,
    pub role: Role,
    pub content: String,
}

/// The model context to restore for a session.
///
/// The context is `snapshot.messages` (if any, even when empty) followed by `rows` converted
/// to provider messages. `rows` are the transcript rows after the snapshot's boundary (all
/// rows without a snapshot), which after recovery include the interrupted turn's checkpoint
/// progress. `interruption` rows are never included, and tool calls without their result
/// (and results without their call) are already dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct RestoredContext {
    pub snapshot: Option<Snapshot>,
    pub rows: Vec<ContextRow>,
}

/// Result of [`crate::Store::recover`].
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery {
    /// Turns whose open checkpoint this call closed as `interrupted` (empty when there was
    /// nothing to recover, e.g. the second time).
    pub interrupted_turns: Vec<String>,
    /// Transcript rows appended (progress rows plus markers).
    pub appended_rows: usize,
    pub context: RestoredContext,
}

/// One session touched by [`crate::Store::recover_all_interrupted`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredSession {
    pub key: SessionKey,
    pub interrupted_turns: Vec<String>,
    pub appended_rows: usize,
}

/// Largest page of [`crate::Store::list_page`] (SPEC §17: `session/list` `limit`).
pub const MAX_LIST_LIMIT: u32 = 500;

/// A position in the `session/list` order (newest activity first, then newest row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListCursor {
    pub last_activity: i64,
    pub(crate) pk: i64,
}

impl ListCursor {
    /// The opaque text a client hands back as `cursor`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.last_activity, self.pk)
    }

    /// `None` when `text` is not a cursor this store made.
    pub fn decode(text: &str) -> Option<ListCursor> {
        let (activity, pk) = text.split_once('.')?;
        Some(ListCursor {
            last_activity: activity.parse().ok()?,
            pk: pk.parse().ok()?,
        })
    }
}

/// Input of [`crate::Store::list_page`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Only sessions of this mode.
    pub mode: Option<Mode>,
    /// Only sessions of this owner (`None`: every owner).
    pub owner: Option<String>,
    /// At most this many rows (clamped to 1..=[`MAX_LIST_LIMIT`]).
    pub limit: u32,
    /// Rows strictly after this position.
    pub after: Option<ListCursor>,
    /// Only sessions whose title contains this text, ignoring case (SPEC §18).
    pub search: Option<String>,
    /// Only sessions whose recorded `cwd` is exactly this (SPEC §22).
    pub cwd: Option<String>,
}

/// One page of non-killed sessions, newest activity first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPage {
    /// Each row with the cursor that continues right after it.
    pub rows: Vec<(ListCursor, SessionRow)>,
    /// More rows follow the last one.
    pub has_more: bool,
}

/// Per-session settings and token totals (`session_settings`); defaults when none saved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSettings {
    /// Autonomy chosen with `session/configure` (`None` = the agent's).
    pub autonomy: Option<String>,
    /// Model chosen with `session/configure` (`None` = the agent's).
    pub model: Option<String>,
    pub total_tokens: u64,
    pub context_tokens: u64,
}

/// Result of [`crate::Store::rewind`].
#[derive(Debug, Clone, PartialEq)]
pub struct Rewound {
    /// Turns this rewind flagged, oldest first; empty when they already were (a second
    /// rewind to the same turn changes nothing).
    pub rewound_turns: Vec<String>,
    /// The prompt text of the turn rewound to.
    pub prompt: String,
    /// The snapshot committed with the rewind (`None` when nothing changed).
    pub snapshot_id: Option<i64>,
}

/// Input of [`crate::Store::fork`].
#[derive(Debug, Clone)]
pub struct ForkRequest {
    pub source: SessionKey,
    /// The last turn to copy; `None` = the source's last finished turn.
    pub turn_id: Option<String>,
    /// The new ACP session's id (must be free).
    pub new_session_id: String,
}

/// Result of [`crate::Store::fork`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    pub row: SessionRow,
    pub forked_from: ForkedFrom,
}
