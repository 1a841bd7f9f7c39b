//! Pairing tokens for WebSocket clients (SPEC §4): `zeroclaw pair --user NAME` makes a
//! token, prints it once, and stores only its SHA-256 in `<data dir>/tokens.json` (0600);
//! `zeroclaw unpair` revokes. The daemon re-reads the file when it changes, so a token
//! unpaired from the command line is refused on that connection's next call.
//!
//! Writers serialize on an exclusive lock of `tokens.json.lock` and replace the file
//! atomically (temp file in the same directory, fsync, rename).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const FILE_NAME: &str = "tokens.json";
const TOKEN_PREFIX: &str = "zct_";

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
    let tmp = data_dir.join(format!(".{FILE_NAME}.tmp"));
    let write = || -> std::io::Result<()> {
        let _ = fs::remove_file(&tmp);
        let mut f = open_private(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)?;
        File::open(data_dir)?.sync_all()
    };
    write().map_err(|e| format!("{}: {e}", path.display()))?;
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
    pub fn hold(&self) -> TokenHold {
        let lock_path = self.path.with_file_name(format!("{FILE_NAME}.lock"));
        let lock = open_private(&lock_path)
            .ok()
            .filter(|f| f.lock_shared().is_ok());
        TokenHold { _lock: lock }
    }

    /// The user a token is paired to, under the token set in force now.
    pub fn user_for(&self, token: &str) -> Option<String> {
        let hash = digest(token);
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
        cache
            .1
            .iter()
            .find(|e| e.sha256 == hash)
            .map(|e| e.user.clone())
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
}
