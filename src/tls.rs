//! Optional TLS for the API listener (rustls with the aws-lc-rs provider): certificate chain and
//! key from PEM files, ALPN offering HTTP/2 (for gRPC) and HTTP/1.1. The acceptor is
//! reloadable: [`ReloadableAcceptor::reload`] builds a new one from the files and swaps it in;
//! connections already open keep the one they were accepted with.
//!
//! With `tls.client_auth` on, client certificates are verified against `tls.client_ca_file`
//! (rustls' `WebPkiClientVerifier`): a certificate that does not chain to it fails the
//! handshake; `required` also fails a handshake without one. The verified certificate's names
//! ([`crate::callers::ClientIdentity`]) then identify the caller.

use std::sync::{Arc, RwLock};

use anyhow::Context;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};

use crate::config::{ClientAuth, TlsSettings};

/// The current acceptor, replaced whole on reload.
pub struct ReloadableAcceptor {
    settings: TlsSettings,
    current: RwLock<TlsAcceptor>,
    /// Fingerprint of the files taken before the first read (see [`crate::reload`]).
    loaded: [u8; 32],
}

impl std::fmt::Debug for ReloadableAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadableAcceptor")
            .field("cert_file", &self.settings.cert_file)
            .finish_non_exhaustive()
    }
}

impl ReloadableAcceptor {
    /// The acceptor for `settings`, or `None` when TLS is off.
    ///
    /// # Errors
    /// See [`acceptor`].
    pub fn from_settings(settings: &TlsSettings) -> anyhow::Result<Option<Arc<Self>>> {
        if !settings.enabled {
            return Ok(None);
        }
        let loaded = crate::reload::fingerprint(&files(settings));
        let acceptor = acceptor(settings)?;
        Ok(Some(Arc::new(ReloadableAcceptor {
            settings: settings.clone(),
            current: RwLock::new(acceptor),
            loaded,
        })))
    }

    /// The acceptor for the next connection.
    pub fn current(&self) -> TlsAcceptor {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Re-reads the certificate and key; on success new connections use them.
    ///
    /// # Errors
    /// See [`acceptor`]; the previous certificate then stays in use.
    pub fn reload(&self) -> anyhow::Result<()> {
        let acceptor = acceptor(&self.settings)?;
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = acceptor;
        Ok(())
    }

    /// What to watch: the certificate and key files.
    pub fn watched(self: &Arc<Self>) -> crate::reload::Watched {
        let this = self.clone();
        crate::reload::Watched {
            what: "tls",
            files: {
                let files = files(&self.settings);
                Arc::new(move || files.clone())
            },
            loaded: self.loaded,
            reload: Arc::new(move || this.reload()),
        }
    }
}

fn files(settings: &TlsSettings) -> Vec<std::path::PathBuf> {
    let mut files = vec![settings.cert_file.clone().into(), settings.key_file.clone().into()];
    if settings.client_auth != ClientAuth::Off {
        files.push(settings.client_ca_file.clone().into());
    }
    files
}

/// A TLS acceptor built from `settings`' PEM files.
///
/// # Errors
/// Unreadable or invalid PEM files, or a key that does not match the certificate.
pub fn acceptor(settings: &TlsSettings) -> anyhow::Result<TlsAcceptor> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&settings.cert_file)
        .with_context(|| format!("tls.cert_file {}", settings.cert_file))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("tls.cert_file {}: invalid PEM", settings.cert_file))?;
    anyhow::ensure!(!certs.is_empty(), "tls.cert_file {} holds no certificate", settings.cert_file);
    let key = PrivateKeyDer::from_pem_file(&settings.key_file)
        .with_context(|| format!("tls.key_file {}: no readable private key", settings.key_file))?;
    let provider = Arc::new(aws_lc_rs::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match settings.client_auth {
        ClientAuth::Off => builder.with_no_client_auth(),
        mode => builder.with_client_cert_verifier(client_verifier(settings, mode, provider)?),
    };
    let mut config = builder.with_single_cert(certs, key).context("TLS certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The verifier of client certificates: chains to the CA bundle, or no certificate at all
/// when `optional`.
fn client_verifier(
    settings: &TlsSettings,
    mode: ClientAuth,
    provider: Arc<tokio_rustls::rustls::crypto::CryptoProvider>,
) -> anyhow::Result<Arc<dyn tokio_rustls::rustls::server::danger::ClientCertVerifier>> {
    let file = &settings.client_ca_file;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(file).with_context(|| format!("tls.client_ca_file {file}"))? {
        let cert = cert.with_context(|| format!("tls.client_ca_file {file}: invalid PEM"))?;
        roots.add(cert).with_context(|| format!("tls.client_ca_file {file}: not a CA certificate"))?;
    }
    anyhow::ensure!(!roots.is_empty(), "tls.client_ca_file {file} holds no certificate");
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if mode == ClientAuth::Optional { builder.allow_unauthenticated() } else { builder };
    builder
        .build()
        .with_context(|| format!("tls.client_ca_file {file}: cannot verify client certificates with it"))
}
