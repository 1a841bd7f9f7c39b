//! Large texts into a row without SQLite holding copies of them, and back out (issue 27).
//!
//! A text bound to a statement is copied by SQLite (rusqlite binds with SQLITE_TRANSIENT),
//! and the insert then builds the row's record from it, a second copy: an 8 MiB answer
//! cost 16 MiB more for the moment it was written. A text of at least [`LARGE_TEXT`] bytes
//! is instead inserted as `zeroblob(len)`, which SQLite leaves out of the record when it is
//! the row's last column (schema migration 5 puts it there), and then written into the row
//! through incremental blob I/O, inside the same transaction: a kill before the commit
//! leaves no row at all, never a row of zeros.
//!
//! Such a value is stored as a BLOB of the text's UTF-8 bytes. [`StoredText`] reads either
//! kind; [`head`] reads only the start of a large one (a derived title, a page's cut row).

use std::ffi::CStr;
use std::io::{BufWriter, Read, Seek, Write};

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use rusqlite::{Connection, MAIN_DB};

use crate::error::Result;
use crate::json::EncodeJson;

/// Texts of this many bytes or more are written through blob I/O; shorter ones are bound
/// as ordinary TEXT (their copies are small, and the row stays readable as text).
pub(crate) const LARGE_TEXT: usize = 64 * 1024;

/// Bytes a serializer hands SQLite per blob write.
const PIECE: usize = 64 * 1024;

/// What to bind for a text column: the text itself, or for a large one the zeroblob it is
/// written into afterwards by [`fill`].
pub(crate) fn bind(text: &str) -> Result<ToSqlOutput<'_>> {
    if text.len() < LARGE_TEXT {
        return Ok(ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())));
    }
    zeroblob(text.len())
}

/// A zeroblob of `len` bytes to bind, for a large text written in later.
pub(crate) fn zeroblob(len: usize) -> Result<ToSqlOutput<'static>> {
    let len = i32::try_from(len)
        .map_err(|_| std::io::Error::other(format!("a text of {len} bytes is too large")))?;
    Ok(ToSqlOutput::ZeroBlob(len))
}

/// Writes `text` into `column` of the row just inserted (`rowid`) when [`bind`] left a
/// zeroblob there; does nothing for a short text. Call it in the inserting transaction.
pub(crate) fn fill(
    conn: &Connection,
    table: &'static CStr,
    column: &'static CStr,
    rowid: i64,
    text: &str,
) -> Result<()> {
    if text.len() < LARGE_TEXT {
        return Ok(());
    }
    let mut blob = conn.blob_open(MAIN_DB, table, column, rowid, false)?;
    // SQLite writes straight into the row's pages; nothing is copied whole.
    blob.write_all(text.as_bytes())?;
    blob.close()?;
    Ok(())
}

/// Writes `long` into `column` of the row just inserted (`rowid`) with a zeroblob of its
/// length, a piece at a time. Call it in the inserting transaction.
pub(crate) fn fill_pieces(
    conn: &Connection,
    table: &'static CStr,
    column: &'static CStr,
    rowid: i64,
    long: &dyn crate::types::LongText,
) -> Result<()> {
    let mut blob = conn.blob_open(MAIN_DB, table, column, rowid, false)?;
    let mut written = 0;
    long.write_pieces(&mut |piece| {
        written += piece.len();
        blob.write_all(piece)
    })?;
    if written != long.len() {
        // A text that changed length under its writer would leave zeros in the row.
        return Err(std::io::Error::other(format!(
            "a long text gave {written} of its {} bytes",
            long.len()
        ))
        .into());
    }
    blob.close()?;
    Ok(())
}

/// The compact JSON of `value` as it is to be bound: `Ok(Inline(json))` when short, or
/// `Ok(Streamed(len))` when it is to be written by [`fill_json`] after a zeroblob of `len`.
pub(crate) enum Json {
    Inline(String),
    Streamed(usize),
}

impl Json {
    /// Measures `value`'s JSON (a first pass that keeps nothing) and encodes a short one.
    pub(crate) fn of(value: &dyn EncodeJson) -> Result<Json> {
        let len = value.json_len()?;
        if len < LARGE_TEXT {
            let mut json = Vec::with_capacity(len);
            value.write_json(&mut json)?;
            let json = String::from_utf8(json).map_err(std::io::Error::other)?;
            return Ok(Json::Inline(json));
        }
        Ok(Json::Streamed(len))
    }

    /// What to bind for it.
    pub(crate) fn bind(&self) -> Result<ToSqlOutput<'_>> {
        match self {
            Json::Inline(s) => bind(s),
            Json::Streamed(len) => zeroblob(*len),
        }
    }
}

/// Encodes `value` straight into `column` of row `rowid`, which holds a zeroblob of the
/// JSON's length ([`Json::Streamed`]): the JSON never exists whole in memory. Fails, and
/// the caller's transaction rolls back, if the encoding is not exactly that long.
pub(crate) fn fill_json(
    conn: &Connection,
    table: &'static CStr,
    column: &'static CStr,
    rowid: i64,
    len: usize,
    value: &dyn EncodeJson,
) -> Result<()> {
    let blob = conn.blob_open(MAIN_DB, table, column, rowid, false)?;
    let mut out = BufWriter::with_capacity(PIECE, blob);
    // A longer encoding fails here: a blob never grows.
    value.write_json(&mut out)?;
    let mut blob = out.into_inner().map_err(|e| e.into_error())?;
    let written = blob.stream_position()?;
    if written != len as u64 {
        return Err(
            std::io::Error::other(format!("the JSON was {written} bytes, measured {len}")).into(),
        );
    }
    blob.close()?;
    Ok(())
}

/// The first `max_bytes` bytes of the large text in `column` of row `rowid`, cut to whole
/// characters: the rest of it is never read. Bytes that are not UTF-8 before the cut are an
/// error, as [`StoredText`] makes them.
pub(crate) fn head(
    conn: &Connection,
    table: &'static CStr,
    column: &'static CStr,
    rowid: i64,
    max_bytes: usize,
) -> Result<String> {
    let blob = conn.blob_open(MAIN_DB, table, column, rowid, true)?;
    let want = max_bytes.min(blob.len());
    let mut bytes = Vec::with_capacity(want);
    blob.take(want as u64).read_to_end(&mut bytes)?;
    let whole = match std::str::from_utf8(&bytes) {
        Ok(_) => bytes.len(),
        // A character cut by `max_bytes` ends the text early; anything else is damage.
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e).into()),
    };
    bytes.truncate(whole);
    Ok(String::from_utf8(bytes).unwrap_or_default())
}

/// A text column read back, whether it was stored as TEXT or (when large) as a BLOB of
/// its UTF-8 bytes.
pub(crate) struct StoredText(pub String);

impl FromSql for StoredText {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => std::str::from_utf8(bytes)
                .map(|s| StoredText(s.to_owned()))
                .map_err(|e| FromSqlError::Other(Box::new(e))),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}
