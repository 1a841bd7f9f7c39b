//! `session/rewind` as the session's worker runs it (SPEC §18). It is queued like a prompt
//! and refused (-32002) while a turn runs or anything waits, so nothing races it.
//!
//! Order: the store's one transaction first (rows from the turn on flagged rewound, a new
//! snapshot holding the context as it was before the turn's prompt); then the in-memory
//! context is reloaded from the store; then the files are put back (when asked: only those
//! the rewound turns changed and nobody changed since, or all with `force`); then a
//! `rewind` row is appended to the transcript (SPEC §22: visible, never sent to the model);
//! only then `session_rewound` is sent, as the first event of the rewind's own turn. A kill -9 at
//! any point leaves the old history or the whole rewind (the store), and the file restore
//! is journaled by the checkpoint store (completed when the daemon next starts).

use zeroclaw_protocol::UpdateKind;
use zeroclaw_protocol::history::{Conflict, RewindResult, Unrestorable};
use zeroclaw_store::{NewRow, Role};

use super::error::SessionError;
use super::file_restore::{self, FilesRestored};
use super::live::LiveSession;
use super::persist;
use super::turn::Runner;

impl Runner {
    /// Leaves the rewind's visible row in the transcript (SPEC §22, `role: "rewind"`): what
    /// it went back to, the turns it took back, the files that came back and whether files
    /// were asked for. Never part of the model's context. A failure to write it is logged:
    /// the rewind itself is committed.
    async fn note_rewind(
        &self,
        session: &LiveSession,
        to: &str,
        rewound_turns: &[String],
        restored_files: &[String],
        restore_files: bool,
    ) {
        let content = serde_json::json!({
            "toTurnId": to,
            "rewoundTurns": rewound_turns,
            "restoredFiles": restored_files,
            "restoreFiles": restore_files,
        })
        .to_string();
        let turn = session.running_turn();
        if let Err(e) = self
            .store
            .append_rows(
                &session.key,
                turn.as_deref(),
                vec![NewRow::new(Role::Rewind, content)],
            )
            .await
        {
            tracing::warn!(session = %session.key.session_id, to, "rewind row not written: {e}");
        }
    }

    /// Goes back to just before turn `to` of this session.
    pub(crate) async fn rewind(
        &mut self,
        session: &LiveSession,
        to: &str,
        restore_files: bool,
        force: bool,
        budget_mb: u32,
    ) -> Result<RewindResult, SessionError> {
        if self.needs_recover {
            self.reload(session).await?;
        }
        let to_messages: zeroclaw_store::ToMessages =
            Box::new(|ctx| Ok(serde_json::to_value(persist::context_from(ctx))?));
        let rewound = self.store.rewind(&session.key, to, to_messages).await?;
        if rewound.snapshot_id.is_some() {
            // What the store now holds is the context: read it back rather than rebuild
            // it twice.
            let restored = self.store.context(&session.key).await?;
            self.context = persist::context_from(&restored);
        }
        // What the context amounts to now, for `session/status` (the dashboard's meter)
        // until the next provider call reports it (SPEC §22).
        let mut usage = session.usage();
        usage.context = zeroclaw_agent::estimate_tokens(&self.context) as u64;
        session.set_usage(usage);
        let files = if restore_files {
            // The history part is committed: a failed file restore is reported, not
            // turned into a failed rewind.
            // Only what the turns from `to` on changed goes back (SPEC §17.2).
            file_restore::restore_for_rewind(self.files.as_ref(), session, to, force, budget_mb)
                .await
                .unwrap_or_else(|e| {
                    tracing::error!(session = %session.key.session_id, to, "file restore failed: {e}");
                    FilesRestored {
                        unrestorable: vec![(session.cwd.display().to_string(), e.to_string())],
                        ..FilesRestored::default()
                    }
                })
        } else {
            FilesRestored::default()
        };
        if !rewound.rewound_turns.is_empty() || !files.restored.is_empty() {
            self.note_rewind(
                session,
                to,
                &rewound.rewound_turns,
                &files.restored,
                restore_files,
            )
            .await;
            session.stream.emit_update(&UpdateKind::SessionRewound {
                to_turn_id: to.to_owned(),
                rewound_turns: rewound.rewound_turns.clone(),
                restored_files: files.restored.clone(),
            });
        }
        session.stream.end_turn();
        tracing::info!(session = %session.key.session_id, to, rewound = ?rewound.rewound_turns, "session rewound");
        Ok(RewindResult {
            session_id: session.key.session_id.clone().into(),
            rewound_turns: rewound.rewound_turns,
            prompt: rewound.prompt,
            restored_files: files.restored,
            unrestorable: files
                .unrestorable
                .into_iter()
                .map(|(path, reason)| Unrestorable { path, reason })
                .collect(),
            conflicts: files
                .conflicts
                .into_iter()
                .map(|(path, reason)| Conflict { path, reason })
                .collect(),
        })
    }
}
