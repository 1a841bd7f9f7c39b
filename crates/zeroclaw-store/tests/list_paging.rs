//! `session/list` paging in the store (SPEC §17): newest activity first, owner and mode
//! filters, killed rows left out, every row exactly once across pages, one indexed query.

mod common;

use common::*;
use zeroclaw_store::{
    ListCursor, ListQuery, MAX_LIST_LIMIT, Mode, NewSession, RPC_SURFACE, SessionKey,
};

fn query(limit: u32, after: Option<ListCursor>) -> ListQuery {
    ListQuery {
        mode: None,
        owner: None,
        limit,
        after,
        search: None,
        cwd: None,
    }
}

/// Every page of `q` (with its `after` replaced as it goes): the session ids in order,
/// checking that activity never increases along the way.
async fn walk(t: &TestStore, mut q: ListQuery) -> Vec<String> {
    let mut last = i64::MAX;
    let mut ids = Vec::new();
    loop {
        let page = t.store.list_page(q.clone()).await.unwrap();
        assert!(page.rows.len() <= q.limit.clamp(1, MAX_LIST_LIMIT) as usize);
        for (_, r) in &page.rows {
            assert!(r.last_activity <= last, "newest activity first");
            last = r.last_activity;
            ids.push(r.session_id.clone());
        }
        if !page.has_more {
            return ids;
        }
        let (cursor, _) = page.rows.last().unwrap();
        // The cursor travels as text.
        q.after = ListCursor::decode(&cursor.encode());
        assert_eq!(q.after, Some(*cursor));
    }
}

#[tokio::test]
async fn pages_walk_every_row_once_newest_activity_first() {
    let t = open().await;
    for i in 0..23 {
        let mode = if i % 3 == 0 { Mode::Chat } else { Mode::Acp };
        let key = SessionKey {
            mode,
            session_id: format!("s{i:02}"),
        };
        t.store
            .open_session(NewSession {
                owner: if i % 2 == 0 { "alice" } else { "bob" }.into(),
                ..session(&key, RPC_SURFACE)
            })
            .await
            .unwrap();
    }
    // Activity: s05 is the newest (possibly tied in the same millisecond); s07 is killed.
    t.store
        .append_rows(
            &SessionKey::acp("s05"),
            None,
            vec![zeroclaw_store::NewRow::user("hi".to_string())],
        )
        .await
        .unwrap();
    t.store.kill(&SessionKey::acp("s07")).await.unwrap();

    let all = walk(&t, query(4, None)).await;
    assert_eq!(all.len(), 22, "{all:?}");
    assert!(
        matches!(all.iter().position(|s| s == "s05"), Some(0..=2)),
        "{all:?}"
    );
    assert!(!all.contains(&"s07".to_string()));
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "each row once");
    assert_eq!(
        walk(&t, query(500, None)).await,
        all,
        "page size changes nothing"
    );

    let bob = walk(
        &t,
        ListQuery {
            owner: Some("bob".into()),
            ..query(3, None)
        },
    )
    .await;
    assert_eq!(bob.len(), 10, "{bob:?}");
    let chat = walk(
        &t,
        ListQuery {
            mode: Some(Mode::Chat),
            ..query(2, None)
        },
    )
    .await;
    assert_eq!(chat.len(), 8, "{chat:?}");

    // A limit of 0 is clamped to 1; a huge one to the maximum.
    assert_eq!(
        t.store.list_page(query(0, None)).await.unwrap().rows.len(),
        1
    );
    assert!(ListCursor::decode("nonsense").is_none());
    assert!(ListCursor::decode("1.x").is_none());
}

#[tokio::test]
async fn a_page_is_one_indexed_query() {
    let t = open().await;
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    for (sql, index) in [
        (
            "SELECT pk FROM sessions s WHERE s.killed_at IS NULL AND (s.last_activity, s.pk) < (1, 2) \
             ORDER BY s.last_activity DESC, s.pk DESC LIMIT 501",
            "sessions_by_activity",
        ),
        (
            "SELECT pk FROM sessions s WHERE s.killed_at IS NULL AND s.owner = 'a' \
             AND (s.last_activity, s.pk) < (1, 2) ORDER BY s.last_activity DESC, s.pk DESC LIMIT 501",
            "sessions_by_owner_activity",
        ),
    ] {
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let plan = plan.join(" | ");
        assert!(plan.contains(index), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "no sort step: {plan}");
    }
}
