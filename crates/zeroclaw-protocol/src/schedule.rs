//! The params and results of the `schedule/*` methods (SPEC §24.1). Times on the wire
//! are RFC 3339 strings in UTC.

use crate::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::Autonomy;

/// What a schedule runs and when: the fields `schedule/create` takes, all but `name`,
/// `agentAlias` and `prompt` optional. `schedule/update` takes the same, each optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(
        default,
        alias = "agent_alias",
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_alias: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Five cron fields (ranges, steps, lists, names) or `@hourly`, `@daily`, `@weekly`,
    /// `@monthly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// A duration of at least one minute: `"15m"`, `"2h"`, `"1d"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// An RFC 3339 time: runs once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// An IANA zone name (default: the daemon's local zone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// `"new"` (default), `"continue"` or a session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<Autonomy>,
    /// `"skip"` (default) or `"once"`.
    #[serde(default, alias = "catch_up", skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// `schedule/create` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleCreated {
    pub schedule_id: String,
    /// `None`: it will not run (disabled).
    pub next_run_at: Option<String>,
}

/// `schedule/update` params: the schedule and the fields to change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleUpdateParams {
    #[serde(alias = "schedule_id")]
    pub schedule_id: String,
    #[serde(flatten)]
    pub fields: ScheduleFields,
}

/// Params naming one schedule (`schedule/delete`, `schedule/run`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleIdParams {
    #[serde(alias = "schedule_id")]
    pub schedule_id: String,
}

/// `schedule/runs` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRunsParams {
    #[serde(alias = "schedule_id")]
    pub schedule_id: String,
    /// Newest first; default 20, at most 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One run of a schedule. `outcome`: `running`, `completed`, `cancelled`, `failed`,
/// `missed` (the daemon was down) or `skipped_overlap` (a run was still going).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRun {
    pub run_id: String,
    pub scheduled_for: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A schedule as `schedule/list` and `schedule/update` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    pub schedule_id: String,
    /// The creator's principal id.
    pub owner: String,
    pub name: String,
    pub agent_alias: String,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub tz: String,
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<Autonomy>,
    pub catch_up: String,
    pub enabled: bool,
    pub next_run_at: Option<String>,
    pub last_run: Option<ScheduleRun>,
    pub created_at: String,
}

/// `schedule/list` result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleListResult {
    pub schedules: Vec<Schedule>,
}

/// `schedule/delete` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleDeleted {
    pub deleted: bool,
}

/// `schedule/run` result: the run it started (or recorded `skipped_overlap`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRunStarted {
    pub run_id: String,
    pub outcome: String,
}

/// `schedule/runs` result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRunsResult {
    pub runs: Vec<ScheduleRun>,
}
