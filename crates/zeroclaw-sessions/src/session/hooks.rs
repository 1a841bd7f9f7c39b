//! A session's hooks (SPEC §21.1) as the daemon runs them: the [`HookSet`] built from the
//! configuration in force (global hooks first, then the agent's), the `hook` update of each
//! run, `session_start` when a session goes live and `pre_compact` before a compaction.
//! The turn's own events (`user_prompt_submit`, the tool events, `stop`) run in the turn
//! loop (`zeroclaw_agent::turn`).
//!
//! Layers: a leaf used by the agent builder, the compaction and the session opener; reads
//! the live session only.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use zeroclaw_agent::hooks::{HookDef, HookEvent, HookReport, HookSet};
use zeroclaw_config::Config;
use zeroclaw_protocol::UpdateKind;

use super::live::LiveSession;

/// The hooks of `session` under `config`; `None` when there are none.
pub(crate) fn set_for(config: &Config, session: &LiveSession) -> Option<Arc<HookSet>> {
    let mut set = HookSet::new(
        session.key.session_id.clone(),
        session.agent_alias.clone(),
        session.cwd.clone(),
    );
    let scopes = [
        Some(&config.hooks),
        config.agents.get(&session.agent_alias).map(|a| &a.hooks),
    ];
    for scope in scopes.into_iter().flatten() {
        for event in HookEvent::ALL {
            for hook in scope.of(event.as_str()) {
                let matcher = match hook.matcher.as_deref() {
                    None => None,
                    // Validated when written; a file edited by hand to a bad matcher
                    // skips the hook rather than running it for every tool.
                    Some(m) => match zeroclaw_config::hooks::compile_matcher(m) {
                        Ok(re) => Some(re),
                        Err(e) => {
                            tracing::warn!(command = %hook.command, "hook skipped: bad matcher: {e}");
                            continue;
                        }
                    },
                };
                set.add(
                    event,
                    HookDef {
                        command: hook.command.clone(),
                        matcher,
                        timeout: Duration::from_secs(hook.timeout_secs.max(1)),
                    },
                );
            }
        }
    }
    (!set.is_empty()).then(|| Arc::new(set))
}

/// The `hook` update of one run.
pub(crate) fn update_of(report: HookReport) -> UpdateKind {
    UpdateKind::Hook {
        event: report.event.as_str().to_owned(),
        command: report.command,
        outcome: report.outcome.to_owned(),
        duration_ms: report.duration_ms,
        message: report.message,
    }
}

/// `pre_compact {trigger}` before a compaction; its runs are sent as `hook` updates of
/// the turn the compaction belongs to.
pub(crate) async fn pre_compact(set: Option<&HookSet>, session: &LiveSession, manual: bool) {
    let Some(set) = set.filter(|s| s.has(HookEvent::PreCompact, None)) else {
        return;
    };
    let mut fields = Map::new();
    fields.insert(
        "trigger".into(),
        Value::from(if manual { "manual" } else { "auto" }),
    );
    let verdict = set.run(HookEvent::PreCompact, None, fields).await;
    for report in verdict.reports {
        session.stream.emit_update(&update_of(report));
    }
}

/// `session_start {}` when `session` goes live, in the background (a slow hook does not
/// hold `session/new`). No turn runs then, so its runs are logged, not sent.
pub(crate) fn session_start(config: &Config, session: &LiveSession) {
    let Some(set) = set_for(config, session).filter(|s| s.has(HookEvent::SessionStart, None))
    else {
        return;
    };
    tokio::spawn(async move {
        let verdict = set.run(HookEvent::SessionStart, None, Map::new()).await;
        for r in verdict.reports {
            tracing::info!(session = %set.session_id, command = %r.command, outcome = r.outcome, duration_ms = r.duration_ms, message = ?r.message, "session_start hook ran");
        }
    });
}
