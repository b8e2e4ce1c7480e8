//! TLS as drbgd's clients speak it (`drbgd verify --jwks`, the PostgreSQL store): rustls with
//! the aws-lc-rs provider, as the server's TLS, the server's certificate checked against the
//! roots of a PEM file or else the Mozilla roots of `webpki-roots`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio_rustls::rustls;

/// A client configuration trusting the CAs of the PEM file `ca` (named `what` in errors), or the
/// Mozilla roots.
///
/// # Errors
/// The file cannot be read, or holds no certificate.
pub fn client_config(ca: Option<&Path>, what: &str) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            let context = || format!("{what} {}", path.display());
            for cert in CertificateDer::pem_file_iter(path).with_context(context)? {
                roots.add(cert.with_context(context)?).with_context(context)?;
            }
            anyhow::ensure!(!roots.is_empty(), "{what} {} holds no certificate", path.display());
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
