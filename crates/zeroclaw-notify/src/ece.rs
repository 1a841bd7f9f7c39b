//! Web Push payload encryption (RFC 8291 over RFC 8188's `aes128gcm`): one record, sealed
//! for one browser's key (`p256dh`) and auth secret with a fresh sender key and salt.
//!
//! The key schedule, as the RFC writes it:
//! - `ecdh_secret = ECDH(as_private, ua_public)`;
//! - `IKM = HKDF(salt = auth_secret, ikm = ecdh_secret, info = "WebPush: info\0" ‖
//!   ua_public ‖ as_public, 32)`;
//! - `CEK = HKDF(salt, IKM, "Content-Encoding: aes128gcm\0", 16)`, `NONCE = HKDF(salt,
//!   IKM, "Content-Encoding: nonce\0", 12)`;
//! - body = `salt ‖ rs (u32 BE) ‖ idlen (65) ‖ as_public ‖ AES-128-GCM(plaintext ‖ 0x02)`.

use aes_gcm::aead::Aead;
use aes_gcm::{Aes128Gcm, KeyInit, Nonce};
use hkdf::Hkdf;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use sha2::Sha256;

/// The record size written in the header: the whole payload is one record below it.
pub const RECORD_SIZE: u32 = 4096;
/// The most plaintext one record carries (its delimiter and tag take 17 bytes).
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - 17;

/// Why a payload could not be sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EceError {
    /// `p256dh` is not an uncompressed P-256 point.
    BadPublicKey,
    /// `auth` is not 16 bytes.
    BadAuth,
    /// The plaintext does not fit one record.
    TooLong,
}

impl std::fmt::Display for EceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EceError::BadPublicKey => "keys.p256dh is not a P-256 public key",
            EceError::BadAuth => "keys.auth is not 16 bytes",
            EceError::TooLong => "the payload does not fit one record",
        })
    }
}

impl std::error::Error for EceError {}

/// Checks a subscription's keys as `push/subscribe` receives them (decoded).
pub fn check_keys(ua_public: &[u8], auth: &[u8]) -> Result<(), EceError> {
    if ua_public.len() != 65 || PublicKey::from_sec1_bytes(ua_public).is_err() {
        return Err(EceError::BadPublicKey);
    }
    if auth.len() != 16 {
        return Err(EceError::BadAuth);
    }
    Ok(())
}

/// Seals `plaintext` for a browser with a fresh sender key and salt.
pub fn seal(ua_public: &[u8], auth: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, EceError> {
    let sender = crate::vapid::random_secret();
    let mut salt = [0u8; 16];
    crate::vapid::fill_random(&mut salt);
    seal_with(ua_public, auth, plaintext, &sender, &salt)
}

/// [`seal`] with the sender key and salt given (the RFC's example fixes both).
pub fn seal_with(
    ua_public: &[u8],
    auth: &[u8],
    plaintext: &[u8],
    as_private: &SecretKey,
    salt: &[u8; 16],
) -> Result<Vec<u8>, EceError> {
    check_keys(ua_public, auth)?;
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(EceError::TooLong);
    }
    let ua = PublicKey::from_sec1_bytes(ua_public).map_err(|_| EceError::BadPublicKey)?;
    let as_public = as_private.public_key().to_encoded_point(false);
    let as_public = as_public.as_bytes();
    let shared = p256::ecdh::diffie_hellman(as_private.to_nonzero_scalar(), ua.as_affine());

    let mut key_info = Vec::with_capacity(14 + 65 + 65);
    key_info.extend_from_slice(b"WebPush: info\0");
    key_info.extend_from_slice(ua_public);
    key_info.extend_from_slice(as_public);
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(auth), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .map_err(|_| EceError::BadAuth)?;

    let hk = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    // Lengths far below HKDF's limit of 255 blocks: these cannot fail.
    let _ = hk.expand(b"Content-Encoding: aes128gcm\0", &mut cek);
    let _ = hk.expand(b"Content-Encoding: nonce\0", &mut nonce);

    let mut record = Vec::with_capacity(plaintext.len() + 1);
    record.extend_from_slice(plaintext);
    record.push(2); // the last record's delimiter, no padding
    let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|_| EceError::BadAuth)?;
    let sealed = cipher
        .encrypt(Nonce::from_slice(&nonce), record.as_slice())
        .map_err(|_| EceError::TooLong)?;

    let mut body = Vec::with_capacity(16 + 4 + 1 + 65 + sealed.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(65);
    body.extend_from_slice(as_public);
    body.extend_from_slice(&sealed);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn d(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).expect("test vector is base64url")
    }

    /// RFC 8291 Appendix A, byte for byte.
    #[test]
    fn rfc8291_appendix_a() {
        let plaintext = d("V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24");
        assert_eq!(plaintext, b"When I grow up, I want to be a watermelon");
        let as_private = SecretKey::from_slice(&d("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
            .expect("the RFC's key");
        assert_eq!(
            as_private.public_key().to_encoded_point(false).as_bytes(),
            d(
                "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
            )
        );
        let ua_public = d(
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        );
        let auth = d("BTBZMqHH6r4Tts7J_aSIgg");
        let salt: [u8; 16] = d("DGv6ra1nlYgDCS1FRnbzlw").try_into().expect("16 bytes");
        let body = seal_with(&ua_public, &auth, &plaintext, &as_private, &salt).expect("sealed");
        assert_eq!(
            URL_SAFE_NO_PAD.encode(&body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    #[test]
    fn bad_keys_are_refused() {
        let key = crate::vapid::random_secret();
        let public = key.public_key().to_encoded_point(false);
        assert_eq!(seal(&[4; 65], &[0; 16], b"x"), Err(EceError::BadPublicKey));
        assert_eq!(
            seal(public.as_bytes(), &[0; 15], b"x"),
            Err(EceError::BadAuth)
        );
        assert_eq!(
            seal(public.as_bytes(), &[0; 16], &vec![0; MAX_PLAINTEXT + 1]),
            Err(EceError::TooLong)
        );
        assert!(seal(public.as_bytes(), &[0; 16], &vec![0; MAX_PLAINTEXT]).is_ok());
    }
}
