//! What a daemon's checkpoints hold, read from its SQLite file with a connection of the
//! test's own: the streamed text of a session's open turns, joined as recovery joins it
//! (a text is written in pieces, one row each, in event order).

use std::time::{Duration, Instant};

use zeroclaw_testkit::daemon::TestDaemon;

/// The text checkpointed so far for session `id`: every text event's text, in order.
pub fn checkpointed_text(conn: &rusqlite::Connection, id: &str) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(
        "SELECT json_extract(payload, '$.text') FROM checkpoint_events \
         WHERE session IN (SELECT pk FROM sessions WHERE session_id = ?1) \
         AND kind = 'text' ORDER BY turn_id, n",
    )?;
    let pieces = stmt.query_map([id], |r| r.get::<_, String>(0))?;
    pieces.collect()
}

/// Waits until the checkpointed text of session `id` holds `text` (streamed text is
/// checkpointed within 250 ms), so that a crash from now on must recover at least that.
pub fn wait_checkpointed(daemon: &TestDaemon, id: &str, text: &str) {
    let conn = rusqlite::Connection::open(daemon.data_dir().join("zeroclaw.db")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !checkpointed_text(&conn, id).is_ok_and(|t| t.contains(text)) {
        assert!(Instant::now() < deadline, "{text:?} was not checkpointed");
        std::thread::sleep(Duration::from_millis(10));
    }
}
