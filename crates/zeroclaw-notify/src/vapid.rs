//! The daemon's VAPID identity (RFC 8292): a P-256 key pair made at first use and kept in
//! the data dir (`vapid_key`, mode 0600, the private scalar in base64url), and the
//! `Authorization: vapid t=JWT, k=KEY` header of each push — an ES256 JWT naming the push
//! service's origin, valid 12 hours.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::SecretKey;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;

/// The key file's name in the data dir.
pub const KEY_FILE: &str = "vapid_key";
/// How long a JWT is valid (RFC 8292 allows at most 24 hours).
pub const JWT_LIFETIME_SECS: u64 = 12 * 3600;
/// The `sub` claim: a contact for the push service.
pub const SUBJECT: &str = "mailto:zeroclaw@localhost";

/// Fills `buf` from the system's random source.
pub(crate) fn fill_random(buf: &mut [u8]) {
    // The system source failing is fatal everywhere else in the daemon too (session ids).
    getrandom::fill(buf).expect("the system's random source");
}

/// A fresh P-256 private key.
pub(crate) fn random_secret() -> SecretKey {
    loop {
        let mut bytes = [0u8; 32];
        fill_random(&mut bytes);
        // Fails only for zero or a scalar above the group order (odds 2^-32).
        if let Ok(key) = SecretKey::from_slice(&bytes) {
            return key;
        }
    }
}

/// The daemon's VAPID key pair.
pub struct Vapid {
    key: SigningKey,
    public: String,
}

impl Vapid {
    /// The key of `data_dir`, made and saved (0600) at first use.
    pub fn load_or_create(data_dir: &Path) -> std::io::Result<Vapid> {
        let path = data_dir.join(KEY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(text.trim()).ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} does not hold a P-256 private key", path.display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::create(&path),
            Err(e) => Err(e),
        }
    }

    fn create(path: &PathBuf) -> std::io::Result<Vapid> {
        let secret = random_secret();
        let text = URL_SAFE_NO_PAD.encode(secret.to_bytes());
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(path) {
            Ok(mut file) => {
                file.write_all(text.as_bytes())?;
                file.sync_all()?;
                Ok(Self::from_secret(&secret))
            }
            // Another start made it first: use that one.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(path)?;
                Self::parse(text.trim()).ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::InvalidData, "bad VAPID key file")
                })
            }
            Err(e) => Err(e),
        }
    }

    fn parse(text: &str) -> Option<Vapid> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let secret = SecretKey::from_slice(&bytes).ok()?;
        Some(Self::from_secret(&secret))
    }

    pub fn from_secret(secret: &SecretKey) -> Vapid {
        let public = URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false).as_bytes());
        Vapid {
            key: SigningKey::from(secret),
            public,
        }
    }

    /// The public key, base64url of the uncompressed point: the dashboard's
    /// `applicationServerKey`.
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push to `endpoint` at `now` (seconds since the
    /// epoch); `None` when the endpoint has no origin.
    pub fn authorization(&self, endpoint: &str, now: u64) -> Option<String> {
        let url = url::Url::parse(endpoint).ok()?;
        let origin = url.origin();
        if !origin.is_tuple() {
            return None;
        }
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": origin.ascii_serialization(),
            "exp": now + JWT_LIFETIME_SECS,
            "sub": SUBJECT,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{claims}");
        let signature: Signature = self.key.sign(input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(signature.to_bytes());
        Some(format!("vapid t={input}.{signature}, k={}", self.public))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;

    #[test]
    fn made_once_kept_private_and_reread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Vapid::load_or_create(dir.path()).expect("made");
        let b = Vapid::load_or_create(dir.path()).expect("read");
        assert_eq!(a.public_key(), b.public_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .expect("key file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join(KEY_FILE), "not a key").expect("write");
        assert!(Vapid::load_or_create(dir.path()).is_err());
    }

    #[test]
    fn jwt_names_the_origin_and_verifies() {
        let vapid = Vapid::from_secret(&random_secret());
        let auth = vapid
            .authorization("https://push.example.net:8443/send/abc?x=1", 1_000)
            .expect("header");
        let rest = auth.strip_prefix("vapid t=").expect("scheme");
        let (jwt, k) = rest.split_once(", k=").expect("k");
        assert_eq!(k, vapid.public_key());
        let (input, sig) = jwt.rsplit_once('.').expect("signature");
        let (_, claims) = input.split_once('.').expect("claims");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).expect("b64")).expect("json");
        assert_eq!(claims["aud"], "https://push.example.net:8443");
        assert_eq!(claims["exp"], 1_000 + JWT_LIFETIME_SECS);
        let key =
            VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(k).expect("b64")).expect("key");
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).expect("b64")).expect("sig");
        assert!(key.verify(input.as_bytes(), &sig).is_ok());
        assert!(key.verify(b"something else", &sig).is_err());
        assert!(vapid.authorization("not a url", 0).is_none());
    }
}
