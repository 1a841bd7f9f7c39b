//! TLS for the gateway (SPEC §10): the rustls acceptor made from `wss.cert_path` and
//! `wss.key_path`, with every unusable file named in the error.

use std::sync::Arc;

use tokio_rustls::TlsAcceptor;

/// The acceptor for a PEM certificate chain and private key.
pub(crate) fn tls_acceptor(cert_path: &str, key_path: &str) -> Result<TlsAcceptor, String> {
    use rustls::pki_types::pem::{self, PemObject};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    // Opening or reading a file names it; a malformed PEM names the file and the problem.
    let fail = |path: &str, e: pem::Error| match e {
        pem::Error::Io(e) => format!("wss: cannot read {path}: {e}"),
        e => format!("wss: {path}: {e}"),
    };
    let certs = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| fail(cert_path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(cert_path, e))?;
    if certs.is_empty() {
        return Err(format!("wss: {cert_path}: no certificate found"));
    }
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| match e {
        pem::Error::NoItemsFound => format!("wss: {key_path}: no private key found"),
        e => fail(key_path, e),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("wss: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("wss: {cert_path}: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::tls_acceptor;

    fn err(cert: &str, key: &str) -> String {
        match tls_acceptor(cert, key) {
            Ok(_) => panic!("accepted {cert} / {key}"),
            Err(e) => e,
        }
    }

    #[test]
    fn unusable_pem_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem at all\n").unwrap();
        let broken = dir.path().join("broken.pem");
        std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nAAAA\n").unwrap();
        let (empty, broken) = (empty.to_str().unwrap(), broken.to_str().unwrap());
        let missing = dir.path().join("missing.pem");
        let missing = missing.to_str().unwrap();
        assert!(
            err(missing, empty).starts_with(&format!("wss: cannot read {missing}: ")),
            "{}",
            err(missing, empty)
        );
        assert_eq!(
            err(empty, empty),
            format!("wss: {empty}: no certificate found")
        );
        assert!(err(broken, empty).starts_with(&format!("wss: {broken}: ")));
        // A certificate-shaped section only, no key: the key file is named.
        let cert = dir.path().join("cert.pem");
        std::fs::write(
            &cert,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let cert = cert.to_str().unwrap();
        assert_eq!(
            err(cert, empty),
            format!("wss: {empty}: no private key found")
        );
        assert!(err(cert, missing).starts_with(&format!("wss: cannot read {missing}: ")));
    }
}
