//! A compaction's durable step (SPEC §18): ONE transaction appending the visible
//! `compaction` row (the summary) and saving the new retained-context snapshot. Either
//! both are there after a crash, or neither: recovery never applies half a compaction.

use crate::json::EncodeJson;
use crate::large_text::Json;

use crate::db::{self, Db, now_ms};
use crate::error::Result;
use crate::types::{Role, SessionKey};

/// What a committed compaction wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionCommit {
    /// The `compaction` row's seq.
    pub row_seq: i64,
    pub snapshot_id: i64,
    /// The snapshot's boundary.
    pub covers_seq: i64,
}

/// Appends the `compaction` row of `turn_id` and saves `messages` as the snapshot covering
/// rows `..= covers_seq` (`None` = up to and including that new row).
pub(crate) fn commit(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
    summary: &str,
    covers_seq: Option<i64>,
    messages: &dyn EncodeJson,
) -> Result<CompactionCommit> {
    db::require_acp(key)?;
    let json = Json::of(messages)?;
    db.write(|conn| {
        let pk = db::require_live_pk(conn, key)?;
        let now = now_ms();
        let row_seq = db::append_row(
            conn,
            pk,
            Some(turn_id),
            Role::Compaction,
            summary,
            None,
            now,
        )?;
        let covers_seq = covers_seq.unwrap_or(row_seq);
        let snapshot_id =
            crate::turns::insert_snapshot_encoded(conn, pk, covers_seq, &json, messages)?;
        db::touch(conn, pk, now)?;
        Ok(CompactionCommit {
            row_seq,
            snapshot_id,
            covers_seq,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewSession, SerdeJson, Store, StoreError};
    use serde_json::json;

    async fn store_with_turn() -> (tempfile::TempDir, Store, SessionKey) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("z.db")).await.unwrap();
        let key = SessionKey::acp("s1");
        store
            .open_session(NewSession {
                key: key.clone(),
                agent_alias: "default".into(),
                owner: "operator".into(),
                cwd: None,
                interaction_surface: crate::RPC_SURFACE.into(),
            })
            .await
            .unwrap();
        store.begin_turn(&key, "t1", "hello").await.unwrap();
        store
            .finish_turn(
                &key,
                "t1",
                crate::CheckpointStatus::Completed,
                vec![crate::NewRow::assistant("hi")],
            )
            .await
            .unwrap();
        (dir, store, key)
    }

    #[tokio::test]
    async fn row_and_snapshot_commit_together() {
        let (_d, store, key) = store_with_turn().await;
        let msgs = json!([{"role": "user", "content": "summary"}]);
        let c = store
            .commit_compaction(&key, "t2", "summary", None, SerdeJson(msgs.clone()))
            .await
            .unwrap();
        assert_eq!((c.row_seq, c.covers_seq), (3, 3));
        let ctx = store.context(&key).await.unwrap();
        let snap = ctx.snapshot.expect("snapshot");
        assert_eq!((snap.id, snap.covers_seq), (c.snapshot_id, 3));
        assert_eq!(snap.messages, msgs);
        assert!(ctx.rows.is_empty());
    }

    #[tokio::test]
    async fn a_failed_write_leaves_neither() {
        let (_d, store, key) = store_with_turn().await;
        store.set_fail_writes(true);
        let e = store
            .commit_compaction(&key, "t2", "summary", None, SerdeJson(json!([])))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::InjectedFailure), "{e}");
        store.set_fail_writes(false);
        let ctx = store.context(&key).await.unwrap();
        assert!(ctx.snapshot.is_none());
        assert_eq!(ctx.rows.len(), 2);
        let e = store
            .commit_compaction(&key, "t2", "summary", Some(9), SerdeJson(json!([])))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::InvalidBoundary { .. }), "{e}");
    }
}
