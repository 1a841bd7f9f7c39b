//! Recording one turn start ([`record`]): walk the tree, reuse the digest of every regular
//! file whose `(size, mtime, ctime, inode)` matches the previous manifest, read and hash
//! only the others, store the new contents and the manifest, then write the turn's record
//! — in that order, each step durable before the next, so a record never refers to missing
//! content. Then the budget is enforced.
//!
//! A file whose change time is within [`RACY_NS`](crate::limits::RACY_NS) of the previous
//! walk's start may have changed after it was read without its metadata showing it
//! (timestamps are coarse), so it is hashed again. Files over the limit are recorded without their content; a tree
//! over the limits, a missed deadline or a failed write leave the turn recorded as
//! unrestorable, with the reason, and the turn still runs.
//!
//! A leaf above the walk, the session store, the budget and the manifest.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::budget;
use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::escape;
use crate::limits::RecordOptions;
use crate::manifest::{Content, Entry, Kind, Manifest, NotStored, Stat};
use crate::objects::Batch;
use crate::session::SessionStore;
use crate::turns::TurnRecord;
use crate::walk::{self, Found, FoundKind, Stop, WalkSpec};

/// What recording a turn start did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Regular files, directories and symlinks recorded.
    pub entries: usize,
    /// Regular files read and hashed (the others matched the previous manifest).
    pub hashed: usize,
    /// Bytes of new content stored.
    pub stored_bytes: u64,
    /// Files recorded without their content: `(path, reason)`.
    pub not_stored: Vec<(String, String)>,
    /// Set when the whole turn cannot be restored: why.
    pub unrestorable: Option<String>,
    /// Turns evicted to keep within the budget (now unrestorable).
    pub evicted: Vec<String>,
}

/// The latest manifest of a session, kept between turns so it is not parsed again.
pub type Cached = Option<(Digest, Arc<Manifest>)>;

pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Records the tree at `root` as turn `turn_id`'s start. Returns what it did and the new
/// manifest (for the cache).
pub fn record(
    store: &mut SessionStore,
    skip: Option<&Path>,
    turn_id: &str,
    root: &Path,
    opts: &RecordOptions,
    cached: Cached,
) -> Result<(Recorded, Cached)> {
    let started_ns = now_ns();
    let root = root
        .canonicalize()
        .ctx(|| format!("resolve {}", root.display()))?;
    let mut record = TurnRecord {
        turn_id: turn_id.to_owned(),
        seq: store.next_seq(),
        started_ns,
        root: escape::encode(root.as_os_str().as_bytes()),
        manifest: None,
        unrestorable: None,
    };
    let mut batch = Batch::default();
    match build(store, skip, &root, &record, opts, cached, &mut batch) {
        Ok(Built::Manifest(mut done, digest, manifest)) => {
            let staged = batch.sizes();
            let commit = store.objects.commit(batch);
            if let Err(e) = commit {
                return give_up(store, record, format!("checkpoint failed: {e}"));
            }
            for (d, n) in staged {
                store.sizes.insert(d, n);
            }
            record.manifest = Some(digest.to_hex());
            store.put_record(record)?;
            match budget::enforce(store, opts.budget_bytes, Some((digest, &manifest))) {
                Ok(evicted) => done.evicted = evicted,
                // The turn is recorded; the next turn start tries the budget again.
                Err(e) => tracing::warn!(turn = %turn_id, "checkpoint budget not enforced: {e}"),
            }
            let cached = store
                .latest_with_manifest()
                .filter(|r| r.manifest.as_deref() == Some(digest.to_hex().as_str()))
                .map(|_| (digest, manifest));
            if store.index.last().is_some_and(|r| r.manifest.is_none()) {
                // The budget evicted this very turn.
                done.unrestorable = Some(budget::evicted_reason(opts.budget_bytes));
            }
            Ok((done, cached))
        }
        Ok(Built::Stopped(reason)) => {
            store.objects.discard(batch);
            give_up(store, record, reason)
        }
        Err(e) => {
            store.objects.discard(batch);
            give_up(store, record, format!("checkpoint failed: {e}"))
        }
    }
}

/// Records the turn as unrestorable with `reason`.
fn give_up(
    store: &mut SessionStore,
    mut record: TurnRecord,
    reason: String,
) -> Result<(Recorded, Cached)> {
    tracing::warn!(turn = %record.turn_id, "file checkpoint not recorded: {reason}");
    record.manifest = None;
    record.unrestorable = Some(reason.clone());
    store.put_record(record)?;
    Ok((
        Recorded {
            unrestorable: Some(reason),
            ..Recorded::default()
        },
        None,
    ))
}

enum Built {
    Manifest(Recorded, Digest, Arc<Manifest>),
    Stopped(String),
}

fn build(
    store: &SessionStore,
    skip: Option<&Path>,
    root: &Path,
    record: &TurnRecord,
    opts: &RecordOptions,
    cached: Cached,
    batch: &mut Batch,
) -> Result<Built> {
    if opts.budget_bytes == 0 {
        return Ok(Built::Stopped(
            "file checkpoints are off (checkpoint_budget_mb = 0)".to_owned(),
        ));
    }
    let limits = opts.limits;
    let spec = WalkSpec {
        root,
        skip,
        max_files: limits.max_tree_files,
        max_bytes: Some((limits.max_file_bytes, limits.max_tree_bytes)),
        deadline: opts.deadline,
    };
    let found = match walk::walk(&spec)? {
        Ok(found) => found,
        Err(stop) => return Ok(Built::Stopped(stop.describe())),
    };
    // The previous manifest of the same root, and when its walk started.
    let base = match store.latest_with_manifest() {
        Some(prev) if prev.root == record.root => {
            let d = prev.manifest_digest()?;
            match (d, cached) {
                (Some(d), Some((cd, m))) if cd == d => Some((m, prev.started_ns, d)),
                (Some(d), _) => Some((Arc::new(store.read_manifest(d)?), prev.started_ns, d)),
                (None, _) => None,
            }
        }
        _ => None,
    };
    let mut done = Recorded::default();
    let mut entries = Vec::with_capacity(found.len());
    for (n, f) in found.into_iter().enumerate() {
        if n % 64 == 63 && opts.past_deadline() {
            return Ok(Built::Stopped(Stop::Deadline.describe()));
        }
        let kind = match f.kind {
            FoundKind::Dir => Kind::Dir { mode: f.mode },
            FoundKind::Symlink => match std::fs::read_link(root.join(path_of(&f.path))) {
                Ok(target) => Kind::Symlink {
                    target: target.as_os_str().as_bytes().into(),
                },
                // Gone since the walk: not recorded.
                Err(_) => continue,
            },
            FoundKind::File => {
                let reused = base
                    .as_ref()
                    .and_then(|(m, started, _)| reuse(m, *started - opts.racy_ns, &f));
                match reused {
                    Some(kind) => kind,
                    None => {
                        done.hashed += 1;
                        let kind = read_file(store, root, &f, opts, batch)?;
                        if let Kind::File {
                            content: Content::NotStored(why),
                            ..
                        } = &kind
                        {
                            done.not_stored
                                .push((escape::display(&f.path), why.describe().to_owned()));
                        }
                        kind
                    }
                }
            }
        };
        entries.push(Entry {
            path: f.path.into_boxed_slice(),
            kind,
        });
    }
    done.entries = entries.len();
    done.stored_bytes = batch.bytes;
    // Nothing changed: the previous manifest, already stored, is this one.
    if let Some((m, _, d)) = &base
        && m.entries == entries
    {
        return Ok(Built::Manifest(done, *d, Arc::clone(m)));
    }
    let manifest = Manifest { entries };
    let text = manifest.to_text();
    let digest = Digest::of(text.as_bytes());
    store.objects.stage(batch, digest, text.as_bytes())?;
    Ok(Built::Manifest(done, digest, Arc::new(manifest)))
}

fn path_of(rel: &[u8]) -> &Path {
    Path::new(std::ffi::OsStr::from_bytes(rel))
}

/// The previous entry of `f` if its metadata shows it unchanged and it had not changed
/// since `settled_before` (ns) when it was recorded.
fn reuse(base: &Manifest, settled_before: i64, f: &Found) -> Option<Kind> {
    let prev = base.get(&f.path)?;
    let Kind::File {
        stat,
        mode,
        content,
    } = &prev.kind
    else {
        return None;
    };
    let settled = f.stat.ctime_ns < settled_before && f.stat.mtime_ns < settled_before;
    let same = *stat == f.stat && *mode == f.mode;
    // A file not stored for its size stays not stored while it is unchanged; one not
    // stored for another reason is tried again.
    let reusable = matches!(
        content,
        Content::Stored(_) | Content::NotStored(NotStored::TooLarge)
    );
    (same && settled && reusable).then(|| prev.kind.clone())
}

/// Reads, hashes and stages the regular file `f` (never following a symlink there).
fn read_file(
    store: &SessionStore,
    root: &Path,
    f: &Found,
    opts: &RecordOptions,
    batch: &mut Batch,
) -> Result<Kind> {
    let not_stored = |stat: Stat, why| {
        Ok(Kind::File {
            stat,
            mode: f.mode,
            content: Content::NotStored(why),
        })
    };
    if f.stat.size > opts.limits.max_file_bytes {
        return not_stored(f.stat, NotStored::TooLarge);
    }
    let path = root.join(path_of(&f.path));
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return not_stored(f.stat, NotStored::Vanished);
        }
        Err(_) => return not_stored(f.stat, NotStored::Unreadable),
    };
    let meta = file.metadata().ctx(|| format!("stat {}", path.display()))?;
    // Replaced since the walk (by another file, a FIFO, a device…): not read.
    if !meta.is_file() || meta.ino() != f.stat.ino {
        return not_stored(f.stat, NotStored::Vanished);
    }
    let stat = walk::stat_of(&meta);
    if stat.size > opts.limits.max_file_bytes {
        return not_stored(stat, NotStored::TooLarge);
    }
    let mut bytes = Vec::with_capacity(stat.size as usize);
    let read = file
        .take(opts.limits.max_file_bytes + 1)
        .read_to_end(&mut bytes);
    if read.is_err() {
        return not_stored(stat, NotStored::Unreadable);
    }
    if bytes.len() as u64 > opts.limits.max_file_bytes {
        return not_stored(stat, NotStored::TooLarge);
    }
    let d = Digest::of(&bytes);
    store.objects.stage(batch, d, &bytes)?;
    Ok(Kind::File {
        stat,
        mode: f.mode,
        content: Content::Stored(d),
    })
}
