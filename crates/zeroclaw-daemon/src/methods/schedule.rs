//! The `schedule/*` handlers (SPEC §24.1): each calls the schedules service with the
//! caller as its viewer (non-admins see and touch only their own schedules); a run asked
//! for now is handed to the daemon's timer, which starts it like one that came due.

use serde_json::json;
use zeroclaw_protocol::schedule::{
    Schedule, ScheduleCreated, ScheduleDeleted, ScheduleFields, ScheduleIdParams,
    ScheduleListResult, ScheduleRunStarted, ScheduleRunsParams, ScheduleRunsResult,
    ScheduleUpdateParams,
};
use zeroclaw_protocol::system::NoParams;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_schedules::{ScheduleError, Timestamp, Viewer};

use crate::auth::Principal;
use crate::state::Daemon;

fn viewer(p: &Principal) -> Viewer<'_> {
    Viewer {
        principal: &p.id,
        admin: p.admin,
    }
}

/// The wire error of a refusal: a bad field is -32602 naming it.
fn wire(e: ScheduleError) -> ErrorObject {
    match e {
        ScheduleError::Invalid(i) => {
            ErrorObject::invalid_params(i.to_string()).with_data(json!({"field": i.field}))
        }
        ScheduleError::NotFound(id) => {
            ErrorObject::invalid_params(format!("scheduleId: no schedule {id}"))
                .with_data(json!({"field": "scheduleId"}))
        }
        ScheduleError::Limit(limit) => ErrorObject::limit_exceeded(
            format!("at most {limit} schedules per principal (limits.schedules_per_principal)"),
            u64::from(limit),
            u64::from(limit),
        ),
        ScheduleError::Store(e) => {
            tracing::warn!("schedule store: {e}");
            ErrorObject::internal("the schedules could not be saved")
        }
    }
}

pub(crate) async fn create(
    daemon: &Daemon,
    p: &Principal,
    q: ScheduleFields,
) -> Result<ScheduleCreated, ErrorObject> {
    if let Some(alias) = q.agent_alias.as_deref()
        && !p.may_use_agent(alias)
    {
        return Err(ErrorObject::forbidden(format!(
            "principal {} may not use agent {alias}",
            p.id
        )));
    }
    let limit = daemon.config.current().limits.schedules_per_principal;
    daemon
        .schedules
        .create(&p.id, q, limit, Timestamp::now())
        .await
        .map_err(wire)
}

pub(crate) async fn list(
    daemon: &Daemon,
    p: &Principal,
    _: NoParams,
) -> Result<ScheduleListResult, ErrorObject> {
    Ok(ScheduleListResult {
        schedules: daemon.schedules.list(viewer(p)).await,
    })
}

pub(crate) async fn update(
    daemon: &Daemon,
    p: &Principal,
    q: ScheduleUpdateParams,
) -> Result<Schedule, ErrorObject> {
    if let Some(alias) = q.fields.agent_alias.as_deref()
        && !p.may_use_agent(alias)
    {
        return Err(ErrorObject::forbidden(format!(
            "principal {} may not use agent {alias}",
            p.id
        )));
    }
    daemon
        .schedules
        .update(viewer(p), q, Timestamp::now())
        .await
        .map_err(wire)
}

pub(crate) async fn delete(
    daemon: &Daemon,
    p: &Principal,
    q: ScheduleIdParams,
) -> Result<ScheduleDeleted, ErrorObject> {
    daemon
        .schedules
        .delete(viewer(p), &q.schedule_id)
        .await
        .map_err(wire)?;
    Ok(ScheduleDeleted { deleted: true })
}

pub(crate) async fn run(
    daemon: &Daemon,
    p: &Principal,
    q: ScheduleIdParams,
) -> Result<ScheduleRunStarted, ErrorObject> {
    daemon
        .schedules
        .run_now(viewer(p), &q.schedule_id, Timestamp::now())
        .await
        .map_err(wire)
}

pub(crate) async fn runs(
    daemon: &Daemon,
    p: &Principal,
    q: ScheduleRunsParams,
) -> Result<ScheduleRunsResult, ErrorObject> {
    let runs = daemon
        .schedules
        .runs(viewer(p), &q.schedule_id, q.limit)
        .await
        .map_err(wire)?;
    Ok(ScheduleRunsResult { runs })
}
