//! `zeroclaw schedule add|list|rm|run|runs` (SPEC §24.1): the `schedule/*` methods for
//! people, a table or one line each (`--json`: the result as the daemon sent it).

use std::path::PathBuf;

use clap::{ArgGroup, Subcommand};
use serde_json::Value;
use zeroclaw_client::ClientHandle;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::schedule::{ScheduleFields, ScheduleIdParams, ScheduleRunsParams};
use zeroclaw_client::protocol::system::NoParams;

use super::error::CliError;
use super::{human, rpc};

// Parsed once per process: the size of the `add` variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum ScheduleAction {
    /// Add a schedule that prompts an agent: exactly one of --cron, --every, --at.
    #[command(group(ArgGroup::new("when").required(true).args(["cron", "every", "at"])))]
    Add {
        /// Its name (runs say `schedule:NAME`; new sessions are titled "NAME · date").
        name: String,
        /// What the agent is asked each time.
        #[arg(long)]
        prompt: String,
        /// Agent alias.
        #[arg(long, default_value = "default")]
        agent: String,
        /// Five cron fields, or @hourly, @daily, @weekly, @monthly.
        #[arg(long, value_name = "EXPR")]
        cron: Option<String>,
        /// A period of at least a minute: 15m, 2h, 1d.
        #[arg(long, value_name = "DURATION")]
        every: Option<String>,
        /// Once, at an RFC 3339 time (2026-12-24T09:00:00+01:00).
        #[arg(long, value_name = "TIME")]
        at: Option<String>,
        /// IANA time zone (default: the daemon's local zone).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// new (default), continue, or a session id.
        #[arg(long, value_name = "SESSION")]
        session: Option<String>,
        /// Where the agent's tools run.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Runs missed while the daemon was down: skip (default) or once.
        #[arg(long, value_name = "POLICY")]
        catch_up: Option<String>,
        /// Add it disabled.
        #[arg(long)]
        disabled: bool,
    },
    /// List your schedules (every one for an admin).
    List,
    /// Delete a schedule and its runs.
    Rm {
        /// The schedule id.
        id: String,
    },
    /// Run a schedule now.
    Run {
        /// The schedule id.
        id: String,
    },
    /// A schedule's runs, newest first.
    Runs {
        /// The schedule id.
        id: String,
        /// At most this many (1 to 200).
        #[arg(long, default_value_t = 20, value_name = "N")]
        limit: u32,
    },
}

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    action: ScheduleAction,
    json: bool,
) -> Result<(), CliError> {
    let handle = rpc::handle(config_dir, socket).await?;
    let result = match action {
        ScheduleAction::Add {
            name,
            prompt,
            agent,
            cron,
            every,
            at,
            tz,
            session,
            cwd,
            catch_up,
            disabled,
        } => {
            let cwd = match cwd {
                Some(dir) => Some(absolute(dir)?),
                None => None,
            };
            let fields = ScheduleFields {
                name: Some(name),
                agent_alias: Some(agent),
                prompt: Some(prompt),
                cron,
                every,
                at,
                tz,
                session,
                cwd,
                autonomy: None,
                catch_up,
                enabled: disabled.then_some(false),
            };
            call_value::<call::ScheduleCreate>(&handle, &fields).await?
        }
        ScheduleAction::List => call_value::<call::ScheduleList>(&handle, &NoParams {}).await?,
        ScheduleAction::Rm { id } => {
            call_value::<call::ScheduleDelete>(&handle, &ScheduleIdParams { schedule_id: id })
                .await?
        }
        ScheduleAction::Run { id } => {
            call_value::<call::ScheduleRun>(&handle, &ScheduleIdParams { schedule_id: id }).await?
        }
        ScheduleAction::Runs { id, limit } => {
            let params = ScheduleRunsParams {
                schedule_id: id,
                limit: Some(limit),
            };
            call_value::<call::ScheduleRuns>(&handle, &params).await?
        }
    };
    if json {
        rpc::print_json(&result);
    } else {
        print!("{}", for_people(&result));
    }
    Ok(())
}

async fn call_value<C: zeroclaw_client::protocol::Call>(
    handle: &ClientHandle,
    params: &C::Params,
) -> Result<Value, CliError> {
    handle
        .call_typed_value::<C>(params)
        .await
        .map_err(CliError::from_client)
}

fn absolute(dir: PathBuf) -> Result<String, CliError> {
    let dir = if dir.is_absolute() {
        dir
    } else {
        std::env::current_dir()
            .map_err(|e| CliError::failed(format!("cannot read the current directory: {e}")))?
            .join(dir)
    };
    Ok(dir.to_string_lossy().into_owned())
}

/// A result read for people, whichever `schedule/*` method answered it.
fn for_people(result: &Value) -> String {
    if let Some(list) = result["schedules"].as_array() {
        return schedules_table(list);
    }
    if let Some(runs) = result["runs"].as_array() {
        return runs_table(runs);
    }
    if let Some(id) = result["scheduleId"].as_str() {
        let next = result["nextRunAt"].as_str().unwrap_or("never (disabled)");
        return format!("schedule {id} added; next run {next}\n");
    }
    if result["deleted"] == true {
        return "schedule deleted\n".to_owned();
    }
    if let Some(run) = result["runId"].as_str() {
        let outcome = result["outcome"].as_str().unwrap_or("?");
        return format!("run {run}: {outcome}\n");
    }
    format!("{result}\n")
}

fn schedules_table(list: &[Value]) -> String {
    if list.is_empty() {
        return "no schedules\n".to_owned();
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|s| {
            let when = ["cron", "every", "at"]
                .iter()
                .find_map(|k| s[*k].as_str().map(|v| format!("{k} {v}")))
                .unwrap_or_default();
            let last = match s["lastRun"]["outcome"].as_str() {
                Some(outcome) => outcome.to_owned(),
                None => "-".to_owned(),
            };
            vec![
                text(&s["scheduleId"]),
                human::first_line(s["name"].as_str().unwrap_or(""), 24),
                format!("{when} ({})", text(&s["tz"])),
                if s["enabled"] == true {
                    text(&s["nextRunAt"])
                } else {
                    "disabled".to_owned()
                },
                last,
            ]
        })
        .collect();
    human::table(&["ID", "NAME", "WHEN", "NEXT RUN", "LAST"], &rows)
}

fn runs_table(runs: &[Value]) -> String {
    if runs.is_empty() {
        return "no runs yet\n".to_owned();
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut outcome = text(&r["outcome"]);
            if let Some(e) = r["error"].as_str() {
                outcome = format!("{outcome}: {}", human::first_line(e, 60));
            }
            vec![
                text(&r["runId"]),
                text(&r["scheduledFor"]),
                text(&r["startedAt"]),
                text(&r["sessionId"]),
                outcome,
            ]
        })
        .collect();
    human::table(
        &["RUN", "SCHEDULED FOR", "STARTED", "SESSION", "OUTCOME"],
        &rows,
    )
}
