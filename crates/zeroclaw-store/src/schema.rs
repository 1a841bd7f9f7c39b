//! Connection set-up and schema migrations.
//!
//! Migrations are keyed by `PRAGMA user_version` and run inside `BEGIN IMMEDIATE`, so two
//! processes opening the same file at once cannot both migrate (the second waits on the
//! write lock, then sees the new version and does nothing). Opening twice is a no-op.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::{Result, StoreError};

/// Ordered migrations; index + 1 is the `user_version` after applying it. Never edit a
/// released entry: append a new one.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE sessions (
    pk                  INTEGER PRIMARY KEY,
    mode                TEXT    NOT NULL CHECK (mode IN ('acp', 'chat')),
    session_id          TEXT    NOT NULL,
    agent_alias         TEXT    NOT NULL,
    owner               TEXT    NOT NULL,
    cwd                 TEXT,
    interaction_surface TEXT    NOT NULL,
    created_at          INTEGER NOT NULL,
    last_activity       INTEGER NOT NULL,
    killed_at           INTEGER,
    UNIQUE (mode, session_id)
);

-- The raw visible transcript. Append-only: seq is per session, dense from 1, and rows are
-- only removed together with their session.
CREATE TABLE transcript (
    session    INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    turn_id    TEXT,
    role       TEXT    NOT NULL
               CHECK (role IN ('user', 'assistant', 'tool_call', 'tool_result', 'interruption')),
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    -- checkpoint event number this row was recovered from (NULL for ordinary rows); lets
    -- recovery skip progress already in the transcript.
    event_n    INTEGER,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;

CREATE UNIQUE INDEX transcript_recovered_event
    ON transcript (session, turn_id, event_n) WHERE event_n IS NOT NULL;

CREATE TABLE checkpoints (
    session     INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    turn_id     TEXT    NOT NULL,
    status      TEXT    NOT NULL
                CHECK (status IN ('open', 'completed', 'cancelled', 'failed', 'interrupted')),
    started_seq INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (session, turn_id)
) WITHOUT ROWID;

CREATE INDEX checkpoints_open ON checkpoints (session) WHERE status = 'open';

CREATE TABLE checkpoint_events (
    session    INTEGER NOT NULL,
    turn_id    TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    -- upsert key within the turn: text:<segment>, call:<id>, result:<id>
    event_key  TEXT    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('text', 'tool_call', 'tool_result')),
    payload    TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session, turn_id, n),
    UNIQUE (session, turn_id, event_key),
    FOREIGN KEY (session, turn_id) REFERENCES checkpoints (session, turn_id) ON DELETE CASCADE
) WITHOUT ROWID;

-- Retained provider context; the latest snapshot of a session is the one with max(id).
CREATE TABLE snapshots (
    session    INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    id         INTEGER NOT NULL,
    covers_seq INTEGER NOT NULL,
    messages   TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session, id)
) WITHOUT ROWID;
"#,
    // 2: `session/list` paging.
    r#"
-- `session/list` pages, newest activity first (all rows, or one owner's).
CREATE INDEX sessions_by_activity ON sessions (last_activity, pk);
CREATE INDEX sessions_by_owner_activity ON sessions (owner, last_activity, pk);
"#,
    // 3: per-session settings (session/configure) and token totals (SPEC §16).
    r#"
CREATE TABLE session_settings (
    session        INTEGER PRIMARY KEY REFERENCES sessions (pk) ON DELETE CASCADE,
    autonomy       TEXT,
    model          TEXT,
    total_tokens   INTEGER NOT NULL DEFAULT 0,
    context_tokens INTEGER NOT NULL DEFAULT 0
);
"#,
    // 4: sessions that last (SPEC §18): `compaction` rows and the `rewound` flag on the
    // transcript, the retained-context boundary of every turn start, titles and forks.
    r#"
-- SQLite cannot change a CHECK constraint in place: rebuild the transcript table. Nothing
-- references it, so the copy, drop and rename keep every foreign key as it was.
CREATE TABLE transcript_v4 (
    session    INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    turn_id    TEXT,
    role       TEXT    NOT NULL
               CHECK (role IN ('user', 'assistant', 'tool_call', 'tool_result', 'interruption',
                               'compaction')),
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    event_n    INTEGER,
    -- 1 once a rewind went back to before this row's turn (SPEC §18): the row stays, with
    -- its seq, but leaves the visible transcript and the provider context.
    rewound    INTEGER NOT NULL DEFAULT 0 CHECK (rewound IN (0, 1)),
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;

INSERT INTO transcript_v4 (session, seq, turn_id, role, content, created_at, event_n)
    SELECT session, seq, turn_id, role, content, created_at, event_n FROM transcript;
DROP TABLE transcript;
ALTER TABLE transcript_v4 RENAME TO transcript;
CREATE UNIQUE INDEX transcript_recovered_event
    ON transcript (session, turn_id, event_n) WHERE event_n IS NOT NULL;

-- The latest snapshot when the turn started (NULL: none). With `started_seq` it is the
-- retained context just before the turn's prompt; a snapshot named here is kept.
ALTER TABLE checkpoints ADD COLUMN snapshot_id INTEGER;

ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN forked_from_session TEXT;
ALTER TABLE sessions ADD COLUMN forked_from_turn TEXT;
"#,
    // 5: large texts written without SQLite copying them (issue 27): the transcript and
    // the snapshots become rowid tables with their text as the LAST column. Incremental
    // blob I/O needs a rowid, and only a trailing zeroblob is left out of the record SQLite
    // builds, so a large text is inserted as zeroblob(len) and then written into the row
    // in pieces (large_text.rs). A WITHOUT ROWID insert also read a neighbouring cell
    // whole to compare keys, a third copy of a large row.
    r#"
CREATE TABLE transcript_v5 (
    session    INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    turn_id    TEXT,
    role       TEXT    NOT NULL
               CHECK (role IN ('user', 'assistant', 'tool_call', 'tool_result', 'interruption',
                               'compaction')),
    created_at INTEGER NOT NULL,
    event_n    INTEGER,
    rewound    INTEGER NOT NULL DEFAULT 0 CHECK (rewound IN (0, 1)),
    -- TEXT, or for a large text a BLOB of its UTF-8 bytes (large_text.rs).
    content    TEXT    NOT NULL,
    PRIMARY KEY (session, seq)
);
INSERT INTO transcript_v5 (session, seq, turn_id, role, created_at, event_n, rewound, content)
    SELECT session, seq, turn_id, role, created_at, event_n, rewound, content FROM transcript;
DROP TABLE transcript;
ALTER TABLE transcript_v5 RENAME TO transcript;
CREATE UNIQUE INDEX transcript_recovered_event
    ON transcript (session, turn_id, event_n) WHERE event_n IS NOT NULL;

CREATE TABLE snapshots_v5 (
    session    INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    id         INTEGER NOT NULL,
    covers_seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    -- JSON text, or for a large snapshot a BLOB of its UTF-8 bytes (large_text.rs).
    messages   TEXT    NOT NULL,
    PRIMARY KEY (session, id)
);
INSERT INTO snapshots_v5 (session, id, covers_seq, created_at, messages)
    SELECT session, id, covers_seq, created_at, messages FROM snapshots;
DROP TABLE snapshots;
ALTER TABLE snapshots_v5 RENAME TO snapshots;
"#,
    // 6: a session's count of visible transcript rows is stored, not counted on each read
    // (issue 27): `session/list` counted every row of every session it showed, a table
    // lookup per row. Triggers keep it exact for every writer: an insert, a delete (only a
    // session's cascade today) and a rewind's flag.
    r#"
ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET message_count =
    (SELECT COUNT(*) FROM transcript t WHERE t.session = sessions.pk AND t.rewound = 0);
CREATE TRIGGER transcript_row_added AFTER INSERT ON transcript WHEN NEW.rewound = 0
BEGIN
    UPDATE sessions SET message_count = message_count + 1 WHERE pk = NEW.session;
END;
CREATE TRIGGER transcript_row_removed AFTER DELETE ON transcript WHEN OLD.rewound = 0
BEGIN
    UPDATE sessions SET message_count = message_count - 1 WHERE pk = OLD.session;
END;
CREATE TRIGGER transcript_row_rewound AFTER UPDATE OF rewound ON transcript
    WHEN OLD.rewound <> NEW.rewound
BEGIN
    UPDATE sessions SET message_count = message_count + OLD.rewound - NEW.rewound
        WHERE pk = NEW.session;
END;
"#,
    // 7: a failed turn keeps an `error` row (SPEC §22). The role CHECK goes: every row is
    // written and read back through the store's `Role` type, which refuses a spelling it
    // does not know, so a new role no longer copies the whole transcript to widen a
    // constraint. The table is rebuilt once more for that; columns, keys, index and the
    // message-count triggers of migration 6 are as before (the triggers are created after
    // the copy, so the counts are not added twice).
    r#"
CREATE TABLE transcript_v7 (
    session    INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    turn_id    TEXT,
    role       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    event_n    INTEGER,
    rewound    INTEGER NOT NULL DEFAULT 0 CHECK (rewound IN (0, 1)),
    content    TEXT    NOT NULL,
    PRIMARY KEY (session, seq)
);
INSERT INTO transcript_v7 (session, seq, turn_id, role, created_at, event_n, rewound, content)
    SELECT session, seq, turn_id, role, created_at, event_n, rewound, content FROM transcript;
DROP TABLE transcript;
ALTER TABLE transcript_v7 RENAME TO transcript;
CREATE UNIQUE INDEX transcript_recovered_event
    ON transcript (session, turn_id, event_n) WHERE event_n IS NOT NULL;
CREATE TRIGGER transcript_row_added AFTER INSERT ON transcript WHEN NEW.rewound = 0
BEGIN
    UPDATE sessions SET message_count = message_count + 1 WHERE pk = NEW.session;
END;
CREATE TRIGGER transcript_row_removed AFTER DELETE ON transcript WHEN OLD.rewound = 0
BEGIN
    UPDATE sessions SET message_count = message_count - 1 WHERE pk = OLD.session;
END;
CREATE TRIGGER transcript_row_rewound AFTER UPDATE OF rewound ON transcript
    WHEN OLD.rewound <> NEW.rewound
BEGIN
    UPDATE sessions SET message_count = message_count + OLD.rewound - NEW.rewound
        WHERE pk = NEW.session;
END;
"#,
    // Schedules (SPEC §24.1): one row per schedule, its definition as JSON; its runs.
    r#"
CREATE TABLE schedules (
    schedule_id   TEXT    PRIMARY KEY,
    owner         TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    definition    TEXT    NOT NULL,
    next_run_at   INTEGER,
    last_session  TEXT,
    created_at    INTEGER NOT NULL
);
CREATE INDEX schedules_owner ON schedules (owner);
CREATE TABLE schedule_runs (
    pk            INTEGER PRIMARY KEY,
    run_id        TEXT    NOT NULL UNIQUE,
    schedule_id   TEXT    NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    scheduled_for INTEGER NOT NULL,
    started_at    INTEGER,
    session_id    TEXT,
    turn_id       TEXT,
    outcome       TEXT    NOT NULL,
    error         TEXT
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, pk);
"#,
    // Web Push subscriptions per principal (SPEC §24.3).
    r#"
CREATE TABLE push_subscriptions (
    endpoint    TEXT    PRIMARY KEY,
    principal   TEXT    NOT NULL,
    p256dh      TEXT    NOT NULL,
    auth        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX push_subscriptions_principal ON push_subscriptions (principal);
"#,
    // Budgets (SPEC §24.2): tokens and cost per UTC day, principal and agent, so a daily
    // budget holds across a restart and `usage/summary` can answer.
    r#"
CREATE TABLE usage_daily (
    day           TEXT    NOT NULL,
    principal     TEXT    NOT NULL,
    agent         TEXT    NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (day, principal, agent)
);
"#,
    // Webhook deliveries (SPEC §23.1): the idempotency record of each delivery id (kept
    // 24 h) and what became of it.
    r#"
CREATE TABLE webhook_deliveries (
    webhook     TEXT    NOT NULL,
    delivery_id TEXT    NOT NULL,
    received_at INTEGER NOT NULL,
    status      TEXT    NOT NULL,
    session_id  TEXT,
    turn_id     TEXT,
    error       TEXT,
    PRIMARY KEY (webhook, delivery_id)
);
CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (webhook, received_at);
"#,
];

/// Schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Opens (creating if needed) the database at `path`, sets the connection pragmas and
/// migrates the schema.
pub(crate) fn open_connection(path: &Path) -> Result<Connection> {
    create_private_file(path)?;
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(journal_mode = %mode, "SQLite did not switch to WAL");
    }
    // FULL, not NORMAL: in WAL mode NORMAL survives a process crash but a power loss may
    // roll back the last commits. The daemon acknowledges turns (`turn_complete`) and
    // trims (`history_trimmed`) only after commit, so a commit must be on disk when it
    // returns. The extra fsync per transaction is small next to a provider round trip
    // (see examples/recovery_bench.rs).
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // 512 KiB of page cache, not SQLite's default 2 MB: what is read again soon (the
    // session row, a turn's checkpoint pages) fits, and a long turn's appended pieces no
    // longer fill 2 MB of the daemon's memory with pages it has written and will not read
    // (the kernel's page cache still holds the file).
    conn.pragma_update(None, "cache_size", -512)?;
    migrate(&mut conn)?;
    Ok(conn)
}

/// The database holds session history: create it owner-only (SQLite gives the -wal and
/// -shm files the same permissions as the main file).
fn create_private_file(path: &Path) -> Result<()> {
    if path.exists() {
        return Ok(());
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map(drop).map_err(|source| StoreError::Io {
        path: path.display().to_string(),
        source,
    })
}

fn migrate(conn: &mut Connection) -> Result<()> {
    migrate_to(conn, SCHEMA_VERSION)
}

/// Creates (or migrates) the file at `path` up to schema `version` only: tests build the
/// files older builds wrote, then open them with [`crate::Store`] to check the migration.
pub(crate) fn create_at_version(path: &Path, version: i64) -> Result<()> {
    create_private_file(path)?;
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    migrate_to(&mut conn, version.clamp(0, SCHEMA_VERSION))
}

fn migrate_to(conn: &mut Connection, target: i64) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(found as usize)
    {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tracing::info!(version = i + 1, "applied store migration");
    }
    tx.commit()?;
    Ok(())
}

/// Reads the schema version (for tests).
pub(crate) fn user_version(conn: &Connection) -> Result<i64> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}
