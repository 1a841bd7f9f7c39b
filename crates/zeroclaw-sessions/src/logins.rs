//! Dashboard logins (SPEC §20): one-time codes that `dashboard/login` hands a local caller,
//! and the session tokens `initialize {authCode}` exchanges them for. A code is random
//! (192 bits), valid [`CODE_TTL`], usable once, and stands for the credential of the caller
//! that asked for it; the session token stands for that same credential for
//! [`SESSION_TTL`] or until the daemon stops. Both live in memory only, kept by their
//! SHA-256; the tables are bounded, and shared out per credential (SPEC §17.2 "Quotas per
//! principal"): one credential holds at most [`CODES_PER_CREDENTIAL`] codes (used ones
//! until they expire) and [`SESSIONS_PER_CREDENTIAL`] sessions, a new session evicting
//! that credential's oldest, so no caller can use up the others' logins. When a whole table
//! is full (many credentials at their share), the credential holding the most gives up its
//! oldest entry: a full table never refuses one who holds less.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tokio::time::Instant;
use zeroclaw_config::policy::Credential;

/// How long a login code may be used.
pub const CODE_TTL: Duration = Duration::from_secs(60);
/// How long a dashboard session token is good for.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// Codes kept at once (used ones are kept until they expire, to say so).
const MAX_CODES: usize = 256;
/// Codes one credential may hold at once (used ones count until they expire).
pub const CODES_PER_CREDENTIAL: usize = 8;
/// Session tokens kept at once.
const MAX_SESSIONS: usize = 1024;
/// Sessions one credential may hold; a new one evicts its oldest.
pub const SESSIONS_PER_CREDENTIAL: usize = 16;
const CODE_PREFIX: &str = "zcl_";
const SESSION_PREFIX: &str = "zcs_";

/// Why a login code or session could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    #[error("authentication failed: unknown login code")]
    UnknownCode,
    #[error(
        "authentication failed: this login code was used already (run `zeroclaw dashboard` for a new one)"
    )]
    UsedCode,
    #[error(
        "authentication failed: this login code has expired (run `zeroclaw dashboard` for a new one)"
    )]
    ExpiredCode,
    #[error("too many login codes outstanding; try again in a minute")]
    TooManyCodes,
    #[error("too many dashboard sessions; try again later")]
    TooManySessions,
    #[error("no randomness available: {0}")]
    Random(String),
}

struct Code {
    credential: Credential,
    expires: Instant,
    used: bool,
}

struct Session {
    credential: Credential,
    expires: Instant,
    /// When it was made (the oldest is evicted first).
    made: Instant,
}

/// A code handed out.
#[derive(Debug, Clone)]
pub struct IssuedCode {
    pub code: String,
    /// Unix milliseconds.
    pub expires_at: i64,
}

/// Outstanding login codes and live dashboard sessions.
pub struct Logins {
    codes: Mutex<HashMap<String, Code>>,
    sessions: Mutex<HashMap<String, Session>>,
    code_ttl: Duration,
}

impl Default for Logins {
    fn default() -> Self {
        Logins::with_code_ttl(CODE_TTL)
    }
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn random(prefix: &str, bytes: usize) -> Result<String, LoginError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| LoginError::Random(e.to_string()))?;
    Ok(format!("{prefix}{}", hex::encode(buf)))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes room in a full table: the oldest entry of the credential holding the most goes
/// (of equal holders, the one whose oldest entry is oldest).
fn evict_from_largest<V>(
    table: &mut HashMap<String, V>,
    credential: impl Fn(&V) -> &Credential,
    age: impl Fn(&V) -> Instant,
) {
    // Per credential: how many it holds, and its oldest entry's key and age.
    let mut holders: HashMap<&Credential, (usize, &String, Instant)> = HashMap::new();
    for (key, v) in table.iter() {
        let at = age(v);
        let h = holders.entry(credential(v)).or_insert((0, key, at));
        h.0 += 1;
        if at < h.2 {
            (h.1, h.2) = (key, at);
        }
    }
    let victim = holders
        .into_values()
        .max_by_key(|(n, _, at)| (*n, std::cmp::Reverse(*at)))
        .map(|(_, key, _)| key.clone());
    if let Some(key) = victim {
        table.remove(&key);
    }
}

/// The key of the oldest session that `pick` selects.
fn oldest_of(
    sessions: &HashMap<String, Session>,
    pick: impl Fn(&Session) -> bool,
) -> Option<String> {
    sessions
        .iter()
        .filter(|(_, s)| pick(s))
        .min_by_key(|(_, s)| s.made)
        .map(|(k, _)| k.clone())
}

impl Logins {
    /// Codes valid `code_ttl` instead of [`CODE_TTL`] (a test hook shortens it).
    pub fn with_code_ttl(code_ttl: Duration) -> Logins {
        Logins {
            codes: Mutex::default(),
            sessions: Mutex::default(),
            code_ttl,
        }
    }

    /// A fresh one-time code standing for `credential`.
    pub fn issue(&self, credential: Credential) -> Result<IssuedCode, LoginError> {
        let code = random(CODE_PREFIX, 24)?;
        let now = Instant::now();
        let mut codes = lock(&self.codes);
        codes.retain(|_, c| now < c.expires);
        let held = codes
            .values()
            .filter(|c| c.credential == credential)
            .count();
        if held >= CODES_PER_CREDENTIAL {
            return Err(LoginError::TooManyCodes);
        }
        if codes.len() >= MAX_CODES {
            evict_from_largest(&mut codes, |c| &c.credential, |c| c.expires);
        }
        codes.insert(
            digest(&code),
            Code {
                credential,
                expires: now + self.code_ttl,
                used: false,
            },
        );
        let wall = SystemTime::now() + self.code_ttl;
        let expires_at = wall
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Ok(IssuedCode { code, expires_at })
    }

    /// Uses `code` up: a new session token and the credential it stands for.
    pub fn redeem(&self, code: &str) -> Result<(String, Credential), LoginError> {
        let now = Instant::now();
        let credential = {
            let mut codes = lock(&self.codes);
            let entry = codes
                .get_mut(&digest(code))
                .ok_or(LoginError::UnknownCode)?;
            if now >= entry.expires {
                return Err(LoginError::ExpiredCode);
            }
            if std::mem::replace(&mut entry.used, true) {
                return Err(LoginError::UsedCode);
            }
            entry.credential.clone()
        };
        let token = random(SESSION_PREFIX, 32)?;
        let mut sessions = lock(&self.sessions);
        sessions.retain(|_, s| now < s.expires);
        let held = sessions
            .values()
            .filter(|s| s.credential == credential)
            .count();
        if held >= SESSIONS_PER_CREDENTIAL {
            // This credential's oldest session makes room: its own, never another's.
            if let Some(oldest) = oldest_of(&sessions, |s| s.credential == credential) {
                sessions.remove(&oldest);
            }
        } else if sessions.len() >= MAX_SESSIONS {
            evict_from_largest(&mut sessions, |s| &s.credential, |s| s.made);
        }
        sessions.insert(
            digest(&token),
            Session {
                credential: credential.clone(),
                expires: now + SESSION_TTL,
                made: now,
            },
        );
        Ok((token, credential))
    }

    /// Whether `token` looks like a dashboard session token (not a pairing token).
    pub fn is_session_token(token: &str) -> bool {
        token.starts_with(SESSION_PREFIX)
    }

    /// The credential a live session token stands for.
    pub fn session(&self, token: &str) -> Option<Credential> {
        let sessions = lock(&self.sessions);
        let s = sessions.get(&digest(token))?;
        (Instant::now() < s.expires).then(|| s.credential.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_code_works_once_and_not_after_it_expires() {
        let logins = Logins::default();
        let issued = logins.issue(Credential::LocalUid(7)).expect("code");
        assert!(issued.code.len() >= 4 + 32, "at least 128 bits");
        let (token, cred) = logins.redeem(&issued.code).expect("first use");
        assert_eq!(cred, Credential::LocalUid(7));
        assert!(Logins::is_session_token(&token));
        assert_eq!(logins.session(&token), Some(Credential::LocalUid(7)));
        assert_eq!(
            logins.redeem(&issued.code).err(),
            Some(LoginError::UsedCode)
        );
        assert_eq!(
            logins.redeem("zcl_nope").err(),
            Some(LoginError::UnknownCode)
        );
        let late = logins.issue(Credential::LocalUid(7)).expect("code");
        tokio::time::advance(CODE_TTL).await;
        assert_eq!(
            logins.redeem(&late.code).err(),
            Some(LoginError::ExpiredCode)
        );
        tokio::time::advance(SESSION_TTL).await;
        assert_eq!(logins.session(&token), None, "sessions expire too");
    }

    #[tokio::test(start_paused = true)]
    async fn one_credential_holds_only_its_share_of_codes() {
        let logins = Logins::default();
        let bob = Credential::LocalUid(1001);
        for _ in 0..CODES_PER_CREDENTIAL {
            logins.issue(bob.clone()).expect("bob's code");
        }
        assert_eq!(
            logins.issue(bob.clone()).err(),
            Some(LoginError::TooManyCodes),
            "bob's ninth code"
        );
        let operator = logins.issue(Credential::LocalUid(0)).expect("operator");
        logins.redeem(&operator.code).expect("the operator logs in");
        tokio::time::advance(CODE_TTL).await;
        logins.issue(bob).expect("bob's codes expired: room again");
    }

    #[tokio::test(start_paused = true)]
    async fn full_tables_make_room_from_the_largest_holder() {
        let logins = Logins::default();
        let holders = (MAX_CODES / CODES_PER_CREDENTIAL) as u32;
        let mut first = None;
        for uid in 0..holders {
            for _ in 0..CODES_PER_CREDENTIAL {
                tokio::time::advance(Duration::from_millis(1)).await;
                let code = logins
                    .issue(Credential::LocalUid(1000 + uid))
                    .expect("code");
                first.get_or_insert(code.code);
            }
        }
        assert_eq!(lock(&logins.codes).len(), MAX_CODES);
        let late = logins.issue(Credential::LocalUid(0)).expect("room made");
        assert_eq!(lock(&logins.codes).len(), MAX_CODES);
        logins.redeem(&late.code).expect("the late one logs in");
        let first = first.expect("a first code");
        assert_eq!(
            logins.redeem(&first).err(),
            Some(LoginError::UnknownCode),
            "the oldest code of a largest holder made room"
        );

        let logins = Logins::default();
        let holders = (MAX_SESSIONS / SESSIONS_PER_CREDENTIAL) as u32;
        // Rounds of as many codes as one may hold, each credential in turn.
        for _ in 0..SESSIONS_PER_CREDENTIAL / CODES_PER_CREDENTIAL {
            for uid in 0..holders {
                for _ in 0..CODES_PER_CREDENTIAL {
                    let cred = Credential::LocalUid(1000 + uid);
                    let code = logins.issue(cred).expect("code");
                    logins.redeem(&code.code).expect("session");
                    tokio::time::advance(Duration::from_millis(1)).await;
                }
            }
            tokio::time::advance(CODE_TTL).await;
        }
        assert_eq!(lock(&logins.sessions).len(), MAX_SESSIONS);
        let code = logins.issue(Credential::LocalUid(0)).expect("code");
        let (token, _) = logins.redeem(&code.code).expect("room made");
        assert_eq!(logins.session(&token), Some(Credential::LocalUid(0)));
        assert_eq!(lock(&logins.sessions).len(), MAX_SESSIONS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_seventeenth_session_evicts_that_credentials_oldest() {
        let logins = Logins::default();
        let bob = Credential::LocalUid(1001);
        let operator = logins.issue(Credential::LocalUid(0)).expect("code");
        let (op_token, _) = logins.redeem(&operator.code).expect("operator");
        let mut tokens = Vec::new();
        for _ in 0..=SESSIONS_PER_CREDENTIAL {
            tokio::time::advance(Duration::from_millis(1)).await;
            let code = logins.issue(bob.clone()).expect("code");
            tokens.push(logins.redeem(&code.code).expect("bob").0);
            tokio::time::advance(CODE_TTL).await;
        }
        assert_eq!(logins.session(&tokens[0]), None, "bob's oldest evicted");
        assert!(tokens[1..].iter().all(|t| logins.session(t).is_some()));
        assert_eq!(
            logins.session(&op_token),
            Some(Credential::LocalUid(0)),
            "the operator's session stays"
        );
    }
}
