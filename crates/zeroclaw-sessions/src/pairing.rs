//! Pairing tokens for WebSocket clients (SPEC §4): `zeroclaw pair --user NAME` makes a
//! token, prints it once, and stores only its SHA-256 in `<data dir>/tokens.json` (0600);
//! `zeroclaw unpair` revokes. The daemon re-reads the file when it changes, so a token
//! unpaired from the command line is refused on that connection's next call.
//!
//! Writers serialize on an exclusive lock of `tokens.json.lock` and replace the file
//! atomically ([`zeroclaw_config::persist`]; a temp file an interrupted write left is
//! removed by the next write). Readers never take that
//! lock (the rename is atomic); the daemon's commit step holds it shared, waiting for it
//! without blocking an async thread and for at most [`HOLD_TIMEOUT`].

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroclaw_config::persist;
use zeroclaw_config::policy::Credential;

const FILE_NAME: &str = "tokens.json";
/// Temp files of the atomic writer: `.tokens.json.<random>`.
const TEMP_PREFIX: &str = ".tokens.json.";
const TOKEN_PREFIX: &str = "zct_";
/// How long a commit waits for a pairing change by another process to finish.
pub const HOLD_TIMEOUT: Duration = Duration::from_secs(5);
const HOLD_POLL: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Entry {
    user: String,
    sha256: String,
    created_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFile {
    tokens: Vec<Entry>,
}

fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A short, non-secret name for a token (for limits and logs): a prefix of its hash.
pub fn fingerprint(token: &str) -> String {
    digest(token)[..16].to_string()
}

fn tokens_path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

fn read_file(path: &Path) -> Result<TokenFile, String> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TokenFile::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Runs `change` on the token file under the writers' lock and saves the result.
fn update<T>(data_dir: &Path, change: impl FnOnce(&mut TokenFile) -> T) -> Result<T, String> {
    fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let lock_path = data_dir.join(format!("{FILE_NAME}.lock"));
    let lock = open_private(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let path = tokens_path(data_dir);
    let mut file = read_file(&path)?;
    let out = change(&mut file);
    let text = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
    // Under the writers' lock no other write is in flight: a temp file now is a leftover.
    persist::sweep_temp_files(data_dir, TEMP_PREFIX);
    persist::write_atomic(&path, &text, TEMP_PREFIX, false)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(out)
}

fn open_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).write(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Makes a new token for `user`; the token itself is returned and never stored.
pub fn pair(data_dir: &Path, user: &str) -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness available: {e}"))?;
    let token = format!("{TOKEN_PREFIX}{}", hex::encode(bytes));
    let entry = Entry {
        user: user.to_string(),
        sha256: digest(&token),
        created_at: now_secs(),
    };
    update(data_dir, |file| file.tokens.push(entry))?;
    Ok(token)
}

/// Revokes every token of `user`; returns how many there were.
pub fn unpair_user(data_dir: &Path, user: &str) -> Result<usize, String> {
    update(data_dir, |file| {
        let before = file.tokens.len();
        file.tokens.retain(|e| e.user != user);
        before - file.tokens.len()
    })
}

/// Revokes one token; returns whether it was paired.
pub fn unpair_token(data_dir: &Path, token: &str) -> Result<bool, String> {
    let hash = digest(token.trim());
    update(data_dir, |file| {
        let before = file.tokens.len();
        file.tokens.retain(|e| e.sha256 != hash);
        before != file.tokens.len()
    })
}

/// Why a presented credential stands for nobody.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairingError {
    #[error("authentication failed: unknown or revoked token")]
    UnknownToken,
}

/// A shared lock on the token file: no pairing change lands while it is held.
pub struct TokenHold {
    _lock: Option<File>,
}

/// What identifies one version of the token file on disk.
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = fs::metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let ino = 0;
    Some((meta.modified().ok()?, meta.len(), ino))
}

/// The daemon's view of the paired tokens, reloaded whenever the file changes.
pub struct TokenStore {
    path: PathBuf,
    cache: Mutex<(Stamp, Vec<Entry>)>,
}

impl TokenStore {
    pub fn new(data_dir: &Path) -> TokenStore {
        TokenStore {
            path: tokens_path(data_dir),
            cache: Mutex::new((None, Vec::new())),
        }
    }

    /// Holds the set of paired tokens unchanged (writers wait) until the guard drops.
    /// Never blocks the calling async thread: the lock is polled without blocking, and a
    /// writer that keeps it longer than [`HOLD_TIMEOUT`] makes this fail.
    pub async fn hold(&self) -> Result<TokenHold, String> {
        self.hold_within(HOLD_TIMEOUT).await
    }

    async fn hold_within(&self, limit: Duration) -> Result<TokenHold, String> {
        let lock_path = self.path.with_file_name(format!("{FILE_NAME}.lock"));
        let open = tokio::task::spawn_blocking(move || open_private(&lock_path).ok());
        let Ok(Ok(lock)) = tokio::time::timeout(limit, open).await else {
            return Err("the pairing token lock could not be opened in time".into());
        };
        // No lock file to be had (read-only data dir): nobody can change the tokens either.
        let Some(lock) = lock else {
            return Ok(TokenHold { _lock: None });
        };
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match lock.try_lock_shared() {
                Ok(()) => return Ok(TokenHold { _lock: Some(lock) }),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => {
                    tracing::warn!("cannot lock the pairing tokens: {e}");
                    return Ok(TokenHold { _lock: None });
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "the pairing tokens are being changed by another process (locked over {} s)",
                    limit.as_secs_f64()
                ));
            }
            tokio::time::sleep(HOLD_POLL).await;
        }
    }

    /// The credential a pairing token stands for under the token set in force now: its
    /// user, or nobody once it is unpaired.
    pub fn resolve(&self, token: &str) -> Result<Credential, PairingError> {
        self.user_for(token)
            .map(|user| Credential::Token { user })
            .ok_or(PairingError::UnknownToken)
    }

    /// The user a token is paired to, under the token set in force now.
    pub fn user_for(&self, token: &str) -> Option<String> {
        let hash = digest(token);
        self.with_tokens(|tokens| {
            tokens
                .iter()
                .find(|e| e.sha256 == hash)
                .map(|e| e.user.clone())
        })
    }

    /// Whether `user` holds a pairing token (SPEC §17.1: such a name is not handed to a
    /// new user by a non-admin).
    pub fn has_user(&self, user: &str) -> bool {
        self.with_tokens(|tokens| tokens.iter().any(|e| e.user == user))
    }

    /// Runs `look` on the token set in force now (re-read when the file changed).
    fn with_tokens<T>(&self, look: impl FnOnce(&[Entry]) -> T) -> T {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let now = stamp(&self.path);
        if now != cache.0 || now.is_none() {
            match read_file(&self.path) {
                Ok(file) => *cache = (now, file.tokens),
                Err(e) => {
                    // An unreadable file pairs nobody: fail closed.
                    tracing::warn!("cannot read pairing tokens: {e}");
                    *cache = (None, Vec::new());
                }
            }
        }
        look(&cache.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_lookup_and_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path());
        let a = pair(dir.path(), "alice").unwrap();
        let b = pair(dir.path(), "alice").unwrap();
        let c = pair(dir.path(), "bob").unwrap();
        assert!(a.starts_with(TOKEN_PREFIX) && a != b);
        assert_eq!(store.user_for(&a).as_deref(), Some("alice"));
        assert_eq!(store.user_for(&c).as_deref(), Some("bob"));
        assert_eq!(store.user_for("zct_nope"), None);
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(
            !text.contains(&a) && text.contains(&digest(&a)),
            "only the hash is stored"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join(FILE_NAME))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(unpair_token(dir.path(), &b).unwrap());
        assert!(!unpair_token(dir.path(), &b).unwrap());
        assert_eq!(store.user_for(&b), None);
        assert_eq!(store.user_for(&a).as_deref(), Some("alice"));
        assert_eq!(unpair_user(dir.path(), "alice").unwrap(), 1);
        assert_eq!(store.user_for(&a), None);
        assert_eq!(store.user_for(&c).as_deref(), Some("bob"));
    }

    #[test]
    fn an_interrupted_write_leaves_nothing_after_the_next() {
        let dir = tempfile::tempdir().unwrap();
        // What a crash between writing the temp file and the rename leaves behind.
        fs::write(dir.path().join(format!("{TEMP_PREFIX}Ab12cd")), b"{\"tok").unwrap();
        let token = pair(dir.path(), "alice").unwrap();
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [FILE_NAME, &format!("{FILE_NAME}.lock")]);
        let store = TokenStore::new(dir.path());
        assert_eq!(store.user_for(&token).as_deref(), Some("alice"));
    }

    #[tokio::test]
    async fn hold_waits_without_blocking_and_gives_up() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path());
        let held = store.hold().await.unwrap();
        assert!(held._lock.is_some());
        drop(held);
        // Another process (an open file description of its own) changing the tokens.
        let writer = open_private(&dir.path().join(format!("{FILE_NAME}.lock"))).unwrap();
        writer.lock().unwrap();
        let started = std::time::Instant::now();
        let ticks = tokio::spawn(async {
            let mut n = 0u32;
            let t0 = std::time::Instant::now();
            while t0.elapsed() < Duration::from_millis(250) {
                tokio::time::sleep(Duration::from_millis(5)).await;
                n += 1;
            }
            n
        });
        let e = store
            .hold_within(Duration::from_millis(300))
            .await
            .err()
            .expect("a held writer lock makes hold fail");
        assert!(e.contains("being changed"), "{e}");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(3));
        assert!(
            ticks.await.unwrap() > 10,
            "the runtime kept running meanwhile"
        );
        writer.unlock().unwrap();
        assert!(store.hold_within(Duration::from_millis(300)).await.is_ok());
    }
}
