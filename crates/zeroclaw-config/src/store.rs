//! [`ConfigStore`]: the running configuration and the only writer of `config.toml`.
//!
//! Invariants:
//! - every write holds one async write lock from before permissions are resolved until the
//!   new view is installed, so concurrent writers never lose an update and a grant revoked
//!   while a writer waited is honoured;
//! - the `toml_edit` document under the lock is the user's file as last written (comments
//!   kept); a write edits a clone (the candidate), validates it whole, persists it once
//!   atomically, and only then replaces the document and installs the typed view. Any
//!   failure before that leaves file, document and view untouched;
//! - a non-admin write that would give any principal more than the writer holds, change an
//!   admin-only setting from a table above it, or take an identity is refused whole (see
//!   [`crate::guard`]), naming the first batch entry whose cumulative application does it;
//! - readers ([`ConfigStore::current`]) never wait for a writer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tokio::sync::{Mutex, watch};
use toml_edit::DocumentMut;

use crate::error::ConfigError;
use crate::guard::{self, Offence};
use crate::path::PropPath;
use crate::persist::{ensure_dir, write_atomic};
use crate::policy::Principal;
use crate::schema::{Config, DEFAULT_CONFIG_TOML, Violation};
use crate::sweep::TEMP_PREFIX;
use crate::value::{Invalid, check_document, get_json, masked_json, remove, set_json};

/// Most entries one `config/set-many` may carry.
pub const MAX_SET_MANY: usize = 256;

/// Why the config file could not be opened; the message names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "config file {}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for OpenError {}

pub struct ConfigStore {
    path: PathBuf,
    doc: Mutex<DocumentMut>,
    view: watch::Sender<Arc<Config>>,
    fail_next_persist: Arc<AtomicBool>,
}

/// Who is writing: the principal resolved under the write lock, and what the daemon knows
/// of user names (SPEC §17.1 "Identities cannot be taken").
pub struct Writer {
    pub principal: Principal,
    /// Whether a user name owns sessions or pairing tokens (a non-admin may not create a
    /// user under such a name).
    pub name_in_use: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl Writer {
    pub fn new(
        principal: Principal,
        name_in_use: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        Writer {
            principal,
            name_in_use: Box::new(name_in_use),
        }
    }
}

/// A principal alone: a writer for which no user name owns anything (a store without
/// sessions or tokens, as in this crate's tests).
impl From<Principal> for Writer {
    fn from(principal: Principal) -> Writer {
        Writer::new(principal, |_| false)
    }
}

enum Op {
    Set(PropPath, Value),
    Delete(PropPath),
}

impl Op {
    fn path(&self) -> &PropPath {
        match self {
            Op::Set(p, _) | Op::Delete(p) => p,
        }
    }
}

/// The longest property path a call may name, in bytes (real ones are far shorter: map
/// keys are at most 64 bytes). Longer ones are refused without being echoed.
pub const MAX_PROP_BYTES: usize = 1024;

/// A value or configuration invalid at `at` (see [`ConfigError::Invalid`]).
fn entry_error(index: Option<usize>, prop: &PropPath, at: &PropPath, msg: &str) -> ConfigError {
    ConfigError::Invalid {
        index,
        prop: prop.clone(),
        at: at.clone(),
        message: msg.to_string(),
    }
}

/// A property path over [`MAX_PROP_BYTES`], naming the entry but not echoing it.
fn check_prop_len(raw: &str, index: Option<usize>) -> Result<(), ConfigError> {
    if raw.len() <= MAX_PROP_BYTES {
        return Ok(());
    }
    Err(ConfigError::PropTooLong {
        bytes: raw.len(),
        limit: MAX_PROP_BYTES,
        index,
    })
}

/// A written property path, parsed.
fn parse_prop(raw: &str, index: Option<usize>) -> Result<PropPath, ConfigError> {
    PropPath::parse(raw).map_err(|e| ConfigError::BadPath {
        raw: raw.to_string(),
        reason: e.0,
        index,
    })
}

/// Whether `op` writes at, above or below one of `props`.
fn overlaps(op: &Op, props: &[PropPath]) -> bool {
    props
        .iter()
        .any(|p| op.path().starts_with(p) || p.starts_with(op.path()))
}

/// The batch entry to blame for offences, without replaying the batch: the first one at,
/// above or below a property that caused one (else the last entry), with that message.
fn blame_overlap(found: &[Offence], ops: &[Op]) -> (usize, String) {
    let mut best: Option<(usize, &Offence)> = None;
    for o in found {
        if let Some(i) = ops.iter().position(|op| overlaps(op, &o.props))
            && best.is_none_or(|(b, _)| i < b)
        {
            best = Some((i, o));
        }
    }
    match best {
        Some((i, o)) => (i, o.message.clone()),
        None => (
            ops.len().saturating_sub(1),
            found.first().map(|o| o.message.clone()).unwrap_or_default(),
        ),
    }
}

/// The first batch entry whose cumulative application brings about an offence (SPEC §4.1
/// "the first offending entry"): `[{p.grants: …}, {p.admin: true}]` blames entry 1, not
/// entry 0, which alone escalates nothing.
///
/// Only entries touching a property of the offences `found` in the whole batch can change
/// the outcome, so only the batch staged up to one of them is tried; a prefix that is not a
/// valid configuration (e.g. one uid on two users, half-way through a swap) counts as not
/// offending. The search is a bisection over those entries (at most 9 checks for 256
/// entries rather than one per entry, all under the write lock): it finds an entry
/// whose prefix offends while the prefix of the entry tried before it does not, which is
/// the first one when an offence, once made, stays (the usual case). Falls back to
/// [`blame_overlap`].
fn blame_first(
    found: &[Offence],
    ops: &[Op],
    doc: &DocumentMut,
    offences: impl Fn(&Config) -> Vec<Offence>,
) -> (usize, String) {
    if ops.len() < 2 {
        return blame_overlap(found, ops);
    }
    let props: Vec<PropPath> = found.iter().flat_map(|o| o.props.clone()).collect();
    let candidates: Vec<usize> = (0..ops.len())
        .filter(|&k| overlaps(&ops[k], &props))
        .collect();
    // The offence the batch staged up to entry `k` brings about, if any.
    let offends = |k: usize| -> Option<String> {
        let mut staged = doc.clone();
        for op in &ops[..=k] {
            // Every entry staged on the whole batch already; a failure here cannot be.
            stage(&mut staged, op).ok()?;
        }
        // Typed straight from the document (no text round trip), then cross-checked: what
        // decides validity here is what the whole batch was checked for already.
        let prefix: Config = toml_edit::de::from_document(staged).ok()?;
        if !prefix.validate().is_empty() {
            return None;
        }
        let now = offences(&prefix);
        now.iter()
            .find(|o| overlaps(&ops[k], &o.props))
            .or(now.first())
            .map(|o| o.message.clone())
    };
    let (mut lo, mut hi) = (0, candidates.len());
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match offends(candidates[mid]) {
            Some(why) => {
                best = Some((candidates[mid], why));
                hi = mid;
            }
            None => lo = mid + 1,
        }
    }
    best.unwrap_or_else(|| blame_overlap(found, ops))
}

/// Applies one entry to `doc`.
fn stage(doc: &mut DocumentMut, op: &Op) -> Result<(), crate::shape::Located> {
    match op {
        Op::Set(path, value) => set_json(doc, path, value),
        Op::Delete(path) => remove(doc, path),
    }
}

/// The entry a cross-reference violation is blamed on: the one sharing the longest path
/// prefix with it (the latest on ties), else the last entry.
fn blame<'a>(violations: &'a [Violation], ops: &[Op]) -> (usize, &'a Violation) {
    let mut best: Option<(usize, usize, &Violation)> = None;
    for v in violations {
        for (i, op) in ops.iter().enumerate() {
            let score = op.path().common_prefix_len(&v.prop);
            if score > 0 && best.is_none_or(|(s, _, _)| score >= s) {
                best = Some((score, i, v));
            }
        }
    }
    match best {
        Some((_, i, v)) => (i, v),
        None => (ops.len().saturating_sub(1), &violations[0]),
    }
}

/// The configuration, held unchanged (see [`ConfigStore::freeze`]).
pub struct Frozen<'a> {
    _guard: tokio::sync::MutexGuard<'a, DocumentMut>,
    config: Arc<Config>,
}

impl Frozen<'_> {
    pub fn config(&self) -> &Config {
        &self.config
    }
}

impl ConfigStore {
    /// Opens `path`, first writing the default configuration (mode 0600, directory 0700)
    /// if the file does not exist. Errors name the file and the problem.
    pub fn open(path: &Path) -> Result<ConfigStore, OpenError> {
        let err = |message: String| OpenError {
            path: path.to_path_buf(),
            message,
        };
        if !path.exists() {
            if let Some(dir) = path.parent() {
                ensure_dir(dir).map_err(|e| err(format!("cannot create directory: {e}")))?;
            }
            match write_atomic(path, DEFAULT_CONFIG_TOML.as_bytes(), TEMP_PREFIX, true) {
                Ok(()) => tracing::info!(path = %path.display(), "wrote default configuration"),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(err(format!("cannot write default configuration: {e}"))),
            }
        }
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
            err(format!("invalid TOML: {}", e.to_string().trim_end()))
        })?;
        let config = check_document(&doc).map_err(|e| err(e.describe()))?;
        Ok(ConfigStore {
            path: path.to_path_buf(),
            doc: Mutex::new(doc),
            view: watch::Sender::new(Arc::new(config)),
            fail_next_persist: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory holding the config file.
    pub fn config_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The running configuration (cheap; never waits for a writer).
    pub fn current(&self) -> Arc<Config> {
        self.view.borrow().clone()
    }

    /// Notified with each newly installed configuration, after it is on disk.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Config>> {
        self.view.subscribe()
    }

    /// `config/get`: the value at `prop`, or the whole config; secrets read as `"***"`.
    pub fn get(&self, prop: Option<&str>) -> Result<Value, ConfigError> {
        let config = self.current();
        let Some(raw) = prop else {
            return Ok(masked_json(&config));
        };
        check_prop_len(raw, None)?;
        let path = PropPath::parse(raw).map_err(|e| ConfigError::BadQuery(e.0))?;
        get_json(&config, &path).map_err(|(at, m)| entry_error(None, &path, &at, &m))
    }

    /// `config/set-many`. `authorize` runs under the write lock against the config current
    /// at that moment and returns the caller's principal (or why it is refused).
    /// Returns the canonical props in request order, duplicates once.
    pub async fn set_many<F, W, E>(
        &self,
        sets: Vec<(String, Value)>,
        authorize: F,
    ) -> Result<Vec<String>, E>
    where
        F: FnOnce(&Config) -> Result<W, E>,
        W: Into<Writer>,
        E: From<ConfigError>,
    {
        if sets.is_empty() || sets.len() > MAX_SET_MANY {
            return Err(ConfigError::BatchSize {
                got: sets.len(),
                max: MAX_SET_MANY,
            }
            .into());
        }
        let mut ops = Vec::with_capacity(sets.len());
        for (i, (raw, value)) in sets.into_iter().enumerate() {
            check_prop_len(&raw, Some(i))?;
            ops.push(Op::Set(parse_prop(&raw, Some(i))?, value));
        }
        let mut props: Vec<String> = Vec::new();
        for op in &ops {
            let p = op.path().to_string();
            if !props.contains(&p) {
                props.push(p);
            }
        }
        self.write(ops, authorize, true).await?;
        Ok(props)
    }

    /// `config/set`: one property. Returns the canonical prop.
    pub async fn set<F, W, E>(&self, prop: &str, value: Value, authorize: F) -> Result<String, E>
    where
        F: FnOnce(&Config) -> Result<W, E>,
        W: Into<Writer>,
        E: From<ConfigError>,
    {
        check_prop_len(prop, None)?;
        let path = parse_prop(prop, None)?;
        let canonical = path.to_string();
        self.write(vec![Op::Set(path, value)], authorize, false)
            .await?;
        Ok(canonical)
    }

    /// `config/delete`: removes a key or a map entry; invalid if it is not set in the file
    /// or if the config without it is invalid (e.g. a provider an agent still uses).
    pub async fn delete<F, W, E>(&self, prop: &str, authorize: F) -> Result<String, E>
    where
        F: FnOnce(&Config) -> Result<W, E>,
        W: Into<Writer>,
        E: From<ConfigError>,
    {
        check_prop_len(prop, None)?;
        let path = parse_prop(prop, None)?;
        let canonical = path.to_string();
        self.write(vec![Op::Delete(path)], authorize, false).await?;
        Ok(canonical)
    }

    /// Holds the write lock, so the policy in force cannot change until the returned guard
    /// is dropped: for steps that check permissions and then act (an upload commit).
    pub async fn freeze(&self) -> Frozen<'_> {
        let guard = self.doc.lock().await;
        Frozen {
            _guard: guard,
            config: self.current(),
        }
    }

    /// Test hook: the next persist fails as if the disk had refused the write.
    #[doc(hidden)]
    pub fn fail_next_persist(&self) {
        self.fail_next_persist.store(true, Ordering::SeqCst);
    }

    /// `authorize`'s own error is returned as it is; every other refusal is a
    /// [`ConfigError`].
    async fn write<F, W, E>(&self, ops: Vec<Op>, authorize: F, batch: bool) -> Result<(), E>
    where
        F: FnOnce(&Config) -> Result<W, E>,
        W: Into<Writer>,
        E: From<ConfigError>,
    {
        let idx = |i: usize| batch.then_some(i);
        // 1. The write lock, held until the new view is installed.
        let mut doc = self.doc.lock().await;
        // 2. The caller's permissions as of now (a grant revoked while waiting counts).
        let Writer {
            principal,
            name_in_use,
        } = authorize(&self.current())?.into();
        // 3. Every path, before anything is staged.
        for (i, op) in ops.iter().enumerate() {
            principal.require_write(op.path(), idx(i))?;
        }
        // 4. Stage in order into one candidate.
        let mut candidate = doc.clone();
        for (i, op) in ops.iter().enumerate() {
            stage(&mut candidate, op).map_err(|(at, m)| entry_error(idx(i), op.path(), &at, &m))?;
        }
        // 5. Validate the whole candidate.
        let config = match check_document(&candidate) {
            Ok(c) => c,
            Err(Invalid::At(violations)) if !violations.is_empty() => {
                let (i, v) = blame(&violations, &ops);
                return Err(entry_error(idx(i), ops[i].path(), &v.prop, &v.message).into());
            }
            Err(other) => {
                let i = ops.len() - 1;
                return Err(
                    entry_error(idx(i), ops[i].path(), ops[i].path(), &other.describe()).into(),
                );
            }
        };
        // 6. A non-admin brings about no escalation (SPEC §4.1), no change to an admin-only
        //    setting and no identity taken (SPEC §17.1).
        let before = self.current();
        let offences = |after: &Config| guard::find(&principal, &before, after, &*name_in_use);
        let found = offences(&config);
        if !found.is_empty() {
            let (i, why) = blame_first(&found, &ops, &doc, offences);
            return Err(ConfigError::Refused {
                index: idx(i),
                prop: ops[i].path().clone(),
                reason: why,
            }
            .into());
        }
        // 7. Persist once, atomically.
        let text = candidate.to_string();
        let path = self.path.clone();
        let fail = self.fail_next_persist.swap(false, Ordering::SeqCst);
        let persisted = tokio::task::spawn_blocking(move || {
            if fail {
                return Err(std::io::Error::other("injected persist failure"));
            }
            write_atomic(&path, text.as_bytes(), TEMP_PREFIX, false)
        })
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r);
        if let Err(e) = persisted {
            tracing::error!(path = %self.path.display(), error = %e, "config write failed");
            return Err(ConfigError::Persist {
                path: self.path.clone(),
                source: e,
            }
            .into());
        }
        // 8. Install, only after the commit.
        *doc = candidate;
        self.view.send_replace(Arc::new(config));
        Ok(())
    }
}
