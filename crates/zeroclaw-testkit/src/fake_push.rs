//! [`FakePush`]: a fake Web Push service and notification receiver on `127.0.0.1:0`. It
//! holds a browser's side of a subscription — a P-256 key pair and an auth secret of its
//! own — so it can decrypt what the daemon sent (RFC 8291 `aes128gcm`, written here
//! independently of the daemon's sealing) and verify the VAPID JWT (RFC 8292, ES256). Every
//! request (any path: push endpoints, webhook and ntfy receivers alike) is recorded with
//! its raw body; the status it gets is 201 unless a path was told otherwise (410 to drop a
//! subscription).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aes_gcm::aead::Aead;
use aes_gcm::{Aes128Gcm, KeyInit, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use serde_json::Value;
use sha2::Sha256;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::Served;
use crate::fake_serve::{read_request, serve};

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct PushRequest {
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl PushRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<PushRequest>>,
    statuses: Mutex<HashMap<String, u16>>,
}

/// The fake push service (see the module doc).
pub struct FakePush {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
    /// The browser's private key.
    ua_private: SecretKey,
    /// The browser's auth secret.
    auth: [u8; 16],
}

impl Drop for FakePush {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn random_key() -> SecretKey {
    loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("random");
        if let Ok(k) = SecretKey::from_slice(&bytes) {
            return k;
        }
    }
}

impl FakePush {
    pub async fn start() -> std::io::Result<FakePush> {
        let state = Arc::new(State::default());
        let (addr, task) = serve(Arc::clone(&state), "fake push", handle).await?;
        let mut auth = [0u8; 16];
        getrandom::fill(&mut auth).expect("random");
        Ok(FakePush {
            addr,
            state,
            task,
            ua_private: random_key(),
            auth,
        })
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The browser's public key, base64url (`keys.p256dh`).
    pub fn p256dh(&self) -> String {
        URL_SAFE_NO_PAD.encode(
            self.ua_private
                .public_key()
                .to_encoded_point(false)
                .as_bytes(),
        )
    }

    /// The browser's auth secret, base64url (`keys.auth`).
    pub fn auth(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.auth)
    }

    /// `push/subscribe` params for the endpoint at `path`.
    pub fn subscription(&self, path: &str) -> Value {
        serde_json::json!({
            "endpoint": self.url(path),
            "keys": {"p256dh": self.p256dh(), "auth": self.auth()},
        })
    }

    /// Answers requests to `path` with `status` from now on.
    pub fn set_status(&self, path: &str, status: u16) {
        lock(&self.state.statuses).insert(path.to_owned(), status);
    }

    /// The requests received so far at `path`.
    pub fn requests(&self, path: &str) -> Vec<PushRequest> {
        lock(&self.state.requests)
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// Waits (up to `limit`) until `path` has received `n` requests; returns them.
    pub fn wait_requests(&self, path: &str, n: usize, limit: Duration) -> Vec<PushRequest> {
        let until = Instant::now() + limit;
        loop {
            let got = self.requests(path);
            if got.len() >= n || Instant::now() >= until {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Decrypts an `aes128gcm` body sealed for this browser (RFC 8291 §3.4, RFC 8188).
    pub fn decrypt(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        if body.len() < 21 {
            return Err("shorter than the header".into());
        }
        let salt = &body[..16];
        let idlen = usize::from(body[20]);
        if idlen != 65 || body.len() < 21 + idlen + 17 {
            return Err(format!("keyid of {idlen} bytes"));
        }
        let as_public = &body[21..21 + idlen];
        let ciphertext = &body[21 + idlen..];
        let sender = PublicKey::from_sec1_bytes(as_public).map_err(|e| e.to_string())?;
        let shared =
            p256::ecdh::diffie_hellman(self.ua_private.to_nonzero_scalar(), sender.as_affine());
        let ua_public = self.ua_private.public_key().to_encoded_point(false);
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(ua_public.as_bytes());
        info.extend_from_slice(as_public);
        let mut ikm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&self.auth), shared.raw_secret_bytes())
            .expand(&info, &mut ikm)
            .map_err(|e| e.to_string())?;
        let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
        let mut cek = [0u8; 16];
        let mut nonce = [0u8; 12];
        prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
            .map_err(|e| e.to_string())?;
        prk.expand(b"Content-Encoding: nonce\0", &mut nonce)
            .map_err(|e| e.to_string())?;
        let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|e| e.to_string())?;
        let mut plain = cipher
            .decrypt(Nonce::from_slice(&nonce), ciphertext)
            .map_err(|_| "the tag does not verify".to_string())?;
        // Padding, then the last record's delimiter 0x02.
        while plain.last() == Some(&0) {
            plain.pop();
        }
        if plain.pop() != Some(2) {
            return Err("no last-record delimiter".into());
        }
        Ok(plain)
    }

    /// Verifies `Authorization: vapid t=JWT, k=KEY` (RFC 8292): the ES256 signature under
    /// `k`, `aud` this service's origin, `exp` in the next 24 hours. Returns the claims
    /// and `k`.
    pub fn verify_vapid(&self, authorization: &str) -> Result<(Value, String), String> {
        let rest = authorization
            .strip_prefix("vapid t=")
            .ok_or("not the vapid scheme")?;
        let (jwt, k) = rest.split_once(", k=").ok_or("no k=")?;
        let (input, sig) = jwt.rsplit_once('.').ok_or("no signature")?;
        let (header, claims) = input.split_once('.').ok_or("no claims")?;
        let b64 = |s: &str| URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string());
        let header: Value = serde_json::from_slice(&b64(header)?).map_err(|e| e.to_string())?;
        if header["alg"] != "ES256" {
            return Err(format!("alg {}", header["alg"]));
        }
        let key = VerifyingKey::from_sec1_bytes(&b64(k)?).map_err(|e| e.to_string())?;
        let sig = Signature::from_slice(&b64(sig)?).map_err(|e| e.to_string())?;
        key.verify(input.as_bytes(), &sig)
            .map_err(|_| "the signature does not verify".to_string())?;
        let claims: Value = serde_json::from_slice(&b64(claims)?).map_err(|e| e.to_string())?;
        if claims["aud"] != format!("http://{}", self.addr) {
            return Err(format!("aud {}", claims["aud"]));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let exp = claims["exp"].as_u64().ok_or("no exp")?;
        if exp <= now || exp > now + 24 * 3600 {
            return Err(format!("exp {exp} (now {now})"));
        }
        Ok((claims, k.to_owned()))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

async fn handle(mut stream: TcpStream, state: Arc<State>) {
    while let Ok(Some((head, body))) = read_request(&mut stream).await {
        let status = lock(&state.statuses)
            .get(&head.path)
            .copied()
            .unwrap_or(201);
        lock(&state.requests).push(PushRequest {
            path: head.path,
            headers: head.headers,
            body,
            at: Instant::now(),
        });
        let reply = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

impl Served<FakePush> {
    pub fn start() -> Served<FakePush> {
        Served::serve(FakePush::start, "fake push")
    }
}
