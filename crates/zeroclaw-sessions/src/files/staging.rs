//! Chunked uploads being staged (SPEC §8.2): each belongs to the connection that began it
//! and is bound to one session generation; it holds its bytes until `commit`.
//!
//! Limits: 4 staged uploads per connection, and a daemon-wide budget of 256 MiB that counts
//! each upload's declared size plus its retained metadata (so empty uploads are not free),
//! of which one principal may hold at most a quarter ([`PRINCIPAL_SHARE_BYTES`], SPEC §17.2
//! "Quotas per principal"): with three others at their share, the operator can still
//! upload. `begin` reserves that cost. An upload idle for 5 minutes is expired: unknown to `chunk`
//! and `commit` from then on, and when a new one would not fit, expired uploads are
//! reclaimed first, whichever connection holds them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;
use zeroclaw_store::SessionKey;

use super::error::FilesError;
use super::workspace::{MAX_FILE_BYTES, check_filename};

pub const MAX_STAGED_PER_CONNECTION: usize = 4;
pub const STAGED_BUDGET_BYTES: u64 = 256 * 1024 * 1024;
/// What one principal may hold of [`STAGED_BUDGET_BYTES`].
pub const PRINCIPAL_SHARE_BYTES: u64 = STAGED_BUDGET_BYTES / 4;
pub const CHUNK_BYTES: usize = 1024 * 1024;
pub const IDLE_EXPIRY: Duration = Duration::from_secs(5 * 60);
/// Bookkeeping counted per upload beyond its strings (map entry, struct, allocation).
const FIXED_OVERHEAD: u64 = 256;

/// The exact session an upload was begun on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadTarget {
    pub key: SessionKey,
    pub generation: u64,
    pub owner: String,
    pub agent: String,
}

/// A finished upload handed to the commit step.
#[derive(Debug)]
pub struct Finished {
    pub target: UploadTarget,
    pub filename: Option<String>,
    pub bytes: Vec<u8>,
    /// SHA-256 of `bytes` (hex), computed as the chunks arrived.
    pub sha256: String,
}

struct Staged {
    conn: u64,
    /// The principal that began it (whose share it counts in).
    principal: String,
    target: UploadTarget,
    filename: Option<String>,
    sha256: Option<String>,
    size: usize,
    data: Vec<u8>,
    /// Hash of `data` so far: each byte is hashed once, as it arrives.
    hasher: Sha256,
    cost: u64,
    touched: Instant,
}

#[derive(Default)]
struct Inner {
    uploads: HashMap<String, Staged>,
    used: u64,
}

#[derive(Default)]
pub struct UploadManager {
    inner: Mutex<Inner>,
    next: AtomicU64,
}

fn unknown(upload_id: &str) -> FilesError {
    FilesError::UnknownUpload(upload_id.to_string())
}

impl UploadManager {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves room for an upload of `size` bytes, begun by `principal`, and returns its id.
    pub fn begin(
        &self,
        conn: u64,
        principal: &str,
        target: UploadTarget,
        size: u64,
        filename: Option<String>,
        sha256: Option<String>,
    ) -> Result<String, FilesError> {
        if size > MAX_FILE_BYTES as u64 {
            return Err(FilesError::DeclaredTooLarge {
                size,
                limit: MAX_FILE_BYTES,
            });
        }
        if let Some(name) = &filename {
            check_filename(name)?;
        }
        let sha256 = match sha256 {
            Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Some(h.to_ascii_lowercase())
            }
            Some(_) => return Err(FilesError::BadSha256),
            None => None,
        };
        let cost = size
            + FIXED_OVERHEAD
            + (target.key.session_id.len() + target.owner.len() + target.agent.len()) as u64
            + filename.as_ref().map_or(0, |f| f.len() as u64)
            + sha256.as_ref().map_or(0, |h| h.len() as u64);
        let mut inner = self.lock();
        let mine = inner.uploads.values().filter(|u| u.conn == conn).count();
        if mine >= MAX_STAGED_PER_CONNECTION {
            return Err(FilesError::TooManyStaged {
                staged: mine,
                limit: MAX_STAGED_PER_CONNECTION,
            });
        }
        let held = |inner: &Inner| -> u64 {
            inner
                .uploads
                .values()
                .filter(|u| u.principal == principal)
                .map(|u| u.cost)
                .sum()
        };
        if inner.used + cost > STAGED_BUDGET_BYTES || held(&inner) + cost > PRINCIPAL_SHARE_BYTES {
            Self::reclaim_expired(&mut inner);
        }
        let mine = held(&inner);
        if mine + cost > PRINCIPAL_SHARE_BYTES {
            return Err(FilesError::ShareExhausted {
                needed: mine + cost,
                share: PRINCIPAL_SHARE_BYTES,
            });
        }
        if inner.used + cost > STAGED_BUDGET_BYTES {
            return Err(FilesError::BudgetExhausted {
                needed: inner.used + cost,
                budget: STAGED_BUDGET_BYTES,
            });
        }
        let id = format!("up-{}-{}", conn, self.next.fetch_add(1, Ordering::Relaxed));
        inner.used += cost;
        let staged = Staged {
            conn,
            principal: principal.to_owned(),
            target,
            filename,
            sha256,
            size: size as usize,
            data: Vec::new(),
            hasher: Sha256::new(),
            cost,
            touched: Instant::now(),
        };
        inner.uploads.insert(id.clone(), staged);
        Ok(id)
    }

    fn reclaim_expired(inner: &mut Inner) {
        let now = Instant::now();
        let expired: Vec<String> = inner
            .uploads
            .iter()
            .filter(|(_, u)| now.duration_since(u.touched) > IDLE_EXPIRY)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            if let Some(u) = inner.uploads.remove(&id) {
                tracing::info!(upload = %id, "reclaimed an idle upload");
                inner.used -= u.cost;
            }
        }
    }

    /// Accepts the bytes at `offset`; returns the bytes received so far.
    pub fn chunk(
        &self,
        conn: u64,
        upload_id: &str,
        offset: u64,
        data: &[u8],
    ) -> Result<u64, FilesError> {
        if data.len() > CHUNK_BYTES {
            return Err(FilesError::ChunkTooLarge {
                size: data.len(),
                limit: CHUNK_BYTES,
            });
        }
        let mut inner = self.lock();
        let staged = match inner.uploads.get_mut(upload_id) {
            Some(u) if u.conn == conn => u,
            _ => return Err(unknown(upload_id)),
        };
        if Instant::now().duration_since(staged.touched) > IDLE_EXPIRY {
            if let Some(u) = inner.uploads.remove(upload_id) {
                inner.used -= u.cost;
            }
            return Err(unknown(upload_id));
        }
        let received = staged.data.len() as u64;
        let end = offset.saturating_add(data.len() as u64);
        if offset > received {
            return Err(FilesError::Gap { offset, received });
        }
        if end > staged.size as u64 {
            return Err(FilesError::PastSize {
                end,
                size: staged.size,
            });
        }
        // Bytes at already accepted offsets must be identical (a safe retry).
        let overlap = (received.min(end) - offset) as usize;
        let start = offset as usize;
        if staged.data[start..start + overlap] != data[..overlap] {
            return Err(FilesError::Conflict(offset));
        }
        if staged.data.capacity() == 0 {
            staged.data.reserve_exact(staged.size);
        }
        let fresh = &data[overlap..];
        staged.data.extend_from_slice(fresh);
        staged.hasher.update(fresh);
        // Only bytes never received before count as activity: empty or repeated chunks
        // must not hold the budget forever (SPEC §17.1 "Uploads idle is idle").
        if !fresh.is_empty() {
            staged.touched = Instant::now();
        }
        Ok(staged.data.len() as u64)
    }

    /// Takes a complete upload out of staging (checking its declared hash). An incomplete
    /// upload stays staged; a hash mismatch discards it. Nothing is written here.
    pub fn finish(&self, conn: u64, upload_id: &str) -> Result<Finished, FilesError> {
        let mut inner = self.lock();
        let staged = match inner.uploads.get(upload_id) {
            Some(u) if u.conn == conn => u,
            _ => return Err(unknown(upload_id)),
        };
        if Instant::now().duration_since(staged.touched) > IDLE_EXPIRY {
            if let Some(u) = inner.uploads.remove(upload_id) {
                inner.used -= u.cost;
            }
            return Err(unknown(upload_id));
        }
        if staged.data.len() < staged.size {
            return Err(FilesError::Incomplete {
                received: staged.data.len(),
                size: staged.size,
            });
        }
        let Some(staged) = inner.uploads.remove(upload_id) else {
            return Err(unknown(upload_id));
        };
        inner.used -= staged.cost;
        drop(inner);
        let actual = hex::encode(staged.hasher.finalize());
        if let Some(expected) = staged.sha256.filter(|e| *e != actual) {
            return Err(FilesError::HashMismatch { expected, actual });
        }
        Ok(Finished {
            target: staged.target,
            filename: staged.filename,
            bytes: staged.data,
            sha256: actual,
        })
    }

    /// Drops every upload of a connection that closed.
    pub fn drop_connection(&self, conn: u64) {
        let mut inner = self.lock();
        let ids: Vec<String> = inner
            .uploads
            .iter()
            .filter(|(_, u)| u.conn == conn)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            if let Some(u) = inner.uploads.remove(&id) {
                inner.used -= u.cost;
            }
        }
    }

    /// Whether an upload not yet expired is open on this exact session instance (it then
    /// does not rest, SPEC §22).
    pub fn holds(&self, key: &SessionKey, generation: u64) -> bool {
        let now = Instant::now();
        self.lock().uploads.values().any(|u| {
            u.target.key == *key
                && u.target.generation == generation
                && now.duration_since(u.touched) <= IDLE_EXPIRY
        })
    }

    /// Bytes of the budget in use (reservations included).
    #[cfg(test)]
    pub fn used_bytes(&self) -> u64 {
        self.lock().used
    }

    #[cfg(test)]
    pub fn staged_count(&self) -> usize {
        self.lock().uploads.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::error::Refusal;
    use serde_json::json;
    use zeroclaw_store::Mode;

    fn target() -> UploadTarget {
        UploadTarget {
            key: SessionKey {
                mode: Mode::Acp,
                session_id: "s".into(),
            },
            generation: 1,
            owner: "operator".into(),
            agent: "default".into(),
        }
    }

    #[test]
    fn offsets_retries_gaps_and_overruns() {
        let m = UploadManager::default();
        let id = m
            .begin(1, "operator", target(), 6, Some("f.txt".into()), None)
            .unwrap();
        assert_eq!(m.chunk(1, &id, 0, b"abc").unwrap(), 3);
        assert_eq!(
            m.chunk(1, &id, 0, b"abc").unwrap(),
            3,
            "identical retry acknowledged unchanged"
        );
        assert_eq!(
            m.chunk(1, &id, 0, b"xbc").refusal().code,
            -32602,
            "conflict"
        );
        assert_eq!(m.chunk(1, &id, 4, b"e").refusal().code, -32602, "gap");
        assert_eq!(
            m.chunk(1, &id, 3, b"defg").refusal().code,
            -32602,
            "past size"
        );
        assert_eq!(
            m.chunk(2, &id, 3, b"def").refusal().message,
            format!("unknown upload {id}")
        );
        assert_eq!(m.finish(1, &id).refusal().code, -32602, "incomplete");
        assert_eq!(
            m.chunk(1, &id, 2, b"cdef").unwrap(),
            6,
            "overlap identical, tail appended"
        );
        let done = m.finish(1, &id).unwrap();
        assert_eq!(done.bytes, b"abcdef");
        assert_eq!(m.used_bytes(), 0);
        assert_eq!(m.finish(1, &id).refusal().code, -32602, "gone after commit");
    }

    #[test]
    fn declared_hash_must_match() {
        let m = UploadManager::default();
        let good = super::super::workspace::sha256_hex(b"hi");
        let id = m
            .begin(1, "operator", target(), 2, None, Some(good.to_uppercase()))
            .unwrap();
        m.chunk(1, &id, 0, b"hi").unwrap();
        assert!(m.finish(1, &id).is_ok());
        let id = m
            .begin(1, "operator", target(), 2, None, Some("0".repeat(64)))
            .unwrap();
        m.chunk(1, &id, 0, b"hi").unwrap();
        let e = m.finish(1, &id).refusal();
        assert!(e.message.contains("sha256 mismatch"));
        assert_eq!(
            m.begin(1, "operator", target(), 2, None, Some("xyz".into()))
                .refusal()
                .code,
            -32602
        );
    }

    #[test]
    fn per_connection_and_size_limits() {
        let m = UploadManager::default();
        for _ in 0..4 {
            m.begin(7, "operator", target(), 0, None, None).unwrap();
        }
        let e = m.begin(7, "operator", target(), 0, None, None).refusal();
        assert_eq!(
            (e.code, e.data.clone()),
            (-32013, Some(json!({"limit": 4, "value": 5})))
        );
        m.begin(8, "operator", target(), 0, None, None)
            .expect("another connection");
        assert!(
            m.used_bytes() > 0,
            "empty uploads still cost their metadata"
        );
        m.drop_connection(7);
        assert_eq!(m.staged_count(), 1);
        assert_eq!(
            m.begin(
                9,
                "operator",
                target(),
                MAX_FILE_BYTES as u64 + 1,
                None,
                None
            )
            .refusal()
            .code,
            -32602
        );
        assert_eq!(
            m.begin(9, "operator", target(), 1, Some("n".repeat(256)), None)
                .refusal()
                .code,
            -32602
        );
        assert_eq!(
            m.chunk(8, "up-8-4", 0, &vec![0; CHUNK_BYTES + 1])
                .refusal()
                .code,
            -32602
        );
    }

    #[tokio::test(start_paused = true)]
    async fn budget_exhaustion_and_reclaim_of_idle_uploads() {
        let m = UploadManager::default();
        let ten = MAX_FILE_BYTES as u64;
        // 25 uploads of 10 MiB across 7 connections of 5 principals fill most of the
        // 256 MiB budget.
        let mut ids = Vec::new();
        for i in 0..25u64 {
            let who = format!("user:{}", i % 5);
            ids.push(
                m.begin(100 + i / 4, &who, target(), ten, None, None)
                    .unwrap(),
            );
        }
        let e = m
            .begin(200, "operator", target(), ten, None, None)
            .refusal();
        assert_eq!(e.code, -32013);
        // Four minutes on, one upload is still active; nothing is idle long enough yet.
        tokio::time::advance(Duration::from_secs(4 * 60)).await;
        m.chunk(100, &ids[0], 0, b"x").unwrap();
        assert_eq!(
            m.begin(200, "operator", target(), ten, None, None)
                .refusal()
                .code,
            -32013
        );
        // Past five minutes of idleness, the other 24 are reclaimed to make room.
        tokio::time::advance(Duration::from_secs(61 + 60)).await;
        let id = m
            .begin(200, "operator", target(), ten, None, None)
            .expect("room after reclaim");
        assert_eq!(m.staged_count(), 2);
        assert_eq!(
            m.chunk(101, &ids[4], 0, b"x").refusal().message,
            format!("unknown upload {}", ids[4])
        );
        assert_eq!(
            m.chunk(100, &ids[0], 1, b"y").unwrap(),
            2,
            "the active one survived"
        );
        assert!(m.chunk(200, &id, 0, b"z").is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn one_principal_holds_at_most_its_share() {
        let m = UploadManager::default();
        let ten = MAX_FILE_BYTES as u64;
        let fits = (PRINCIPAL_SHARE_BYTES / (ten + 1024)) as usize;
        for i in 0..fits {
            m.begin(i as u64 / 4, "user:bob", target(), ten, None, None)
                .expect("within bob's share");
        }
        let e = m.begin(99, "user:bob", target(), ten, None, None).refusal();
        assert_eq!(e.code, -32013);
        assert_eq!(
            e.data.as_ref().map(|d| d["limit"].clone()),
            Some(json!(PRINCIPAL_SHARE_BYTES))
        );
        m.begin(100, "operator", target(), ten, None, None)
            .expect("the operator is not held back by bob");
        // Bob's idle uploads are reclaimed for bob too.
        tokio::time::advance(IDLE_EXPIRY + Duration::from_secs(1)).await;
        m.begin(99, "user:bob", target(), ten, None, None)
            .expect("bob's idle uploads reclaimed");
    }

    #[tokio::test(start_paused = true)]
    async fn empty_and_repeated_chunks_do_not_keep_an_upload_alive() {
        let m = UploadManager::default();
        let id = m.begin(1, "operator", target(), 4, None, None).unwrap();
        m.chunk(1, &id, 0, b"ab").unwrap();
        for _ in 0..5 {
            tokio::time::advance(Duration::from_secs(59)).await;
            // Answered (the upload is still known) but no new byte arrived.
            assert_eq!(m.chunk(1, &id, 2, b"").unwrap(), 2);
            assert_eq!(m.chunk(1, &id, 0, b"ab").unwrap(), 2);
        }
        tokio::time::advance(Duration::from_secs(7)).await;
        let e = m.chunk(1, &id, 2, b"cd").refusal();
        assert_eq!(
            (e.code, e.message),
            (-32602, format!("unknown upload {id}"))
        );
        assert_eq!((m.staged_count(), m.used_bytes()), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_upload_is_unknown_to_chunk_and_commit() {
        let m = UploadManager::default();
        let complete = m.begin(1, "operator", target(), 2, None, None).unwrap();
        m.chunk(1, &complete, 0, b"hi").unwrap();
        let partial = m.begin(1, "operator", target(), 2, None, None).unwrap();
        m.chunk(1, &partial, 0, b"h").unwrap();
        // Just under five idle minutes both are still known; the budget was never needed.
        tokio::time::advance(IDLE_EXPIRY).await;
        assert_eq!(m.staged_count(), 2);
        tokio::time::advance(Duration::from_secs(1)).await;
        let e = m.finish(1, &complete).refusal();
        assert_eq!(
            (e.code, e.message),
            (-32602, format!("unknown upload {complete}"))
        );
        let e = m.chunk(1, &partial, 1, b"i").refusal();
        assert_eq!(
            (e.code, e.message),
            (-32602, format!("unknown upload {partial}"))
        );
        assert_eq!((m.staged_count(), m.used_bytes()), (0, 0));
    }
}
