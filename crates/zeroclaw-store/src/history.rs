//! `session/messages`: the raw visible transcript, paged so that one page never exceeds a
//! byte budget (the daemon never writes a line over 8 MiB).

use std::io;

use rusqlite::params;

use crate::db::{self, Db};
use crate::error::Result;
use crate::large_text::{self, StoredText};
use crate::types::{MessageRow, MessagesPage, MessagesQuery, SessionKey};

/// Counts bytes written without keeping them.
struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Bytes `row` takes in a JSON array: its compact serialization plus a separator.
pub fn json_size(row: &MessageRow) -> usize {
    let mut c = Counter(0);
    // Serializing plain strings and integers into a counter cannot fail.
    let _ = serde_json::to_writer(&mut c, row);
    c.0 + 1
}

/// Bytes `ch` takes inside a JSON string, as serde_json escapes it.
fn escaped_len(ch: char) -> usize {
    match ch {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The largest character boundary of `s` at or below `at`.
pub fn char_floor(s: &str, at: usize) -> usize {
    let mut end = at.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Cuts `row.content` so that the row fits `budget` bytes (a row larger than a whole page).
fn truncate_to_fit(row: &mut MessageRow, budget: usize) {
    let content = std::mem::take(&mut row.content);
    row.truncated = true;
    let overhead = json_size(row);
    let mut room = budget.saturating_sub(overhead);
    let mut end = 0;
    for (i, ch) in content.char_indices() {
        let len = escaped_len(ch);
        if len > room {
            break;
        }
        room -= len;
        end = i + ch.len_utf8();
    }
    row.content = content[..end].to_owned();
}

/// A row's content cut to `max_content` bytes at a character boundary, and whether it was
/// cut. A large text is read only that far.
fn content_of(
    conn: &rusqlite::Connection,
    r: &rusqlite::Row<'_>,
    max_content: usize,
) -> Result<(String, bool)> {
    if let Some(len) = r.get::<_, Option<i64>>(7)? {
        let rowid: i64 = r.get(6)?;
        let head = large_text::head(conn, c"transcript", c"content", rowid, max_content)?;
        return Ok((
            head,
            usize::try_from(len).unwrap_or(usize::MAX) > max_content,
        ));
    }
    let mut content = r.get::<_, StoredText>(2)?.0;
    if content.len() <= max_content {
        return Ok((content, false));
    }
    content.truncate(char_floor(&content, max_content));
    Ok((content, true))
}

pub(crate) fn messages(db: &mut Db, key: &SessionKey, q: MessagesQuery) -> Result<MessagesPage> {
    db.read(|conn| {
        let (pk, row) = db::require_session(conn, key)?;
        let before = q.before_seq.unwrap_or(i64::MAX);
        // SQLite treats a negative LIMIT as "no limit".
        let limit = q.limit.map_or(-1, i64::from);
        // Rewound rows are listed only when asked for (`?4` = 1 lists them).
        let with_rewound = i64::from(q.include_rewound);
        // A large text (a BLOB, large_text.rs) is not loaded by the query: `typeof` and a
        // BLOB's `length` are answered without reading it, and only as much of it as a
        // row may carry is read through blob I/O ([`content_of`]).
        let mut stmt = conn.prepare_cached(
            "SELECT seq, role, CASE WHEN typeof(content) = 'text' THEN content END, turn_id, \
             created_at, rewound, rowid, CASE WHEN typeof(content) = 'blob' THEN length(content) END \
             FROM transcript \
             WHERE session = ?1 AND seq < ?2 AND rewound <= ?4 ORDER BY seq DESC LIMIT ?3",
        )?;
        let mut cursor = stmt.query(params![pk, before, limit, with_rewound])?;
        let mut rows: Vec<MessageRow> = Vec::new();
        // The rows travel as one JSON array: `[` + rows joined by `,` + `]`. Counting the
        // brackets here and one separator per row keeps the array within `max_bytes`.
        let budget = q.max_bytes.saturating_sub(2);
        let mut used = 0usize;
        while let Some(r) = cursor.next()? {
            let (content, truncated) = content_of(conn, r, q.max_content)?;
            let mut m = MessageRow {
                seq: r.get(0)?,
                role: r.get::<_, String>(1)?.parse()?,
                content,
                turn_id: r.get(3)?,
                created_at: r.get(4)?,
                rewound: r.get::<_, i64>(5)? != 0,
                truncated,
            };
            let size = json_size(&m);
            if used + size > budget {
                if rows.is_empty() {
                    truncate_to_fit(&mut m, budget);
                    rows.push(m);
                }
                break;
            }
            used += size;
            rows.push(m);
        }
        drop(cursor);
        rows.reverse();
        let has_more = match rows.first() {
            Some(first) => conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM transcript \
                 WHERE session = ?1 AND seq < ?2 AND rewound <= ?3)",
                params![pk, first.seq, with_rewound],
                |r| r.get(0),
            )?,
            None => false,
        };
        let total = if q.include_rewound {
            // Seqs are dense from 1 and rows leave only with their session: the last seq
            // is the count of every row, rewound ones included, without walking them.
            db::last_seq(conn, pk)?
        } else {
            row.message_count
        };
        Ok(MessagesPage {
            rows,
            total,
            has_more,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Role;

    #[test]
    fn escaped_len_matches_serde_json() {
        let chars = (0u32..0x300)
            .filter_map(char::from_u32)
            .chain(['\u{2028}', '\u{fffd}', '😀']);
        for ch in chars {
            let json = serde_json::to_string(&ch.to_string()).unwrap();
            assert_eq!(escaped_len(ch), json.len() - 2, "{ch:?}");
        }
    }

    #[test]
    fn truncation_fits_the_budget_on_a_char_boundary() {
        for budget in [0, 50, 120, 121, 122, 123, 300] {
            let mut row = MessageRow {
                seq: 7,
                role: Role::Assistant,
                content: "é\n😀\"x".repeat(40),
                turn_id: Some("t".into()),
                created_at: 1,
                rewound: false,
                truncated: false,
            };
            let original = row.content.clone();
            truncate_to_fit(&mut row, budget);
            assert!(row.truncated);
            assert!(original.starts_with(&row.content));
            if !row.content.is_empty() {
                assert!(json_size(&row) <= budget, "budget {budget}");
            }
        }
    }
}
