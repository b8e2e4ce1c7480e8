//! Optional TLS for the API listener (rustls with the ring provider): certificate chain and
//! key from PEM files, ALPN offering HTTP/2 (for gRPC) and HTTP/1.1.

use std::sync::Arc;

use anyhow::Context;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring;

use crate::config::TlsSettings;

/// The acceptor for `settings`, or `None` when TLS is off.
///
/// # Errors
/// Unreadable or invalid PEM files, or a key that does not match the certificate.
pub fn acceptor(settings: &TlsSettings) -> anyhow::Result<Option<TlsAcceptor>> {
    if !settings.enabled {
        return Ok(None);
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&settings.cert_file)
        .with_context(|| format!("tls.cert_file {}", settings.cert_file))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("tls.cert_file {}: invalid PEM", settings.cert_file))?;
    anyhow::ensure!(!certs.is_empty(), "tls.cert_file {} holds no certificate", settings.cert_file);
    let key = PrivateKeyDer::from_pem_file(&settings.key_file)
        .with_context(|| format!("tls.key_file {}: no readable private key", settings.key_file))?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("TLS certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}
