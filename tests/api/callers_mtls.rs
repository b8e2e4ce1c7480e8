//! Client certificates (mTLS) that name callers: which identity of a certificate names which
//! caller, and what a certificate and a key naming different callers get.

use std::sync::Arc;

use crate::helpers::spawn_with;

/// A CA, and a way to issue leaves signed by it.
pub(crate) struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    der: rustls_pki_types::CertificateDer<'static>,
    pub(crate) pem: String,
}

impl Ca {
    pub(crate) fn new(name: &str) -> Self {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, format!("{name} CA"));
        let cert = params.self_signed(&key).unwrap();
        Ca { der: cert.der().clone(), pem: cert.pem(), issuer: rcgen::Issuer::new(params, key) }
    }

    /// A leaf with these DNS names, URI SANs and CN: (certificate DER, key DER, certificate PEM, key PEM).
    pub(crate) fn leaf(
        &self,
        dns: &[&str],
        uris: &[&str],
        cn: &str,
    ) -> (rustls_pki_types::CertificateDer<'static>, rustls_pki_types::PrivateKeyDer<'static>, String, String)
    {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(dns.iter().map(|d| d.to_string()).collect::<Vec<_>>()).unwrap();
        for uri in uris {
            params
                .subject_alt_names
                .push(rcgen::SanType::URI(rcgen::string::Ia5String::try_from(*uri).unwrap()));
        }
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key_der = rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        (cert.der().clone(), key_der, cert.pem(), key.serialize_pem())
    }
}

/// GET `path` over TLS trusting `ca`, presenting `client` if given; the response head and
/// body, or the error of the handshake or the read.
async fn mtls_get(
    addr: &str,
    ca: &rustls_pki_types::CertificateDer<'static>,
    client: Option<(rustls_pki_types::CertificateDer<'static>, rustls_pki_types::PrivateKeyDer<'static>)>,
    path: &str,
) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::aws_lc_rs};
    let mut roots = RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let builder = ClientConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        Some((cert, key)) => builder.with_client_auth_cert(vec![cert], key).unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await?;
    tls.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    tls.read_to_string(&mut response).await?;
    Ok(response)
}

#[tokio::test]
async fn client_certificates_name_callers() {
    let ca = Ca::new("trusted");
    let other = Ca::new("untrusted");
    let dir = std::env::temp_dir().join(format!("drbgd-mtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (_, _, server_pem, server_key_pem) = ca.leaf(&["localhost"], &[], "drbgd");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let mut settings = crate::helpers::test_settings();
    settings.tls.enabled = true;
    settings.tls.cert_file = write("server.pem", &server_pem);
    settings.tls.key_file = write("server.key", &server_key_pem);
    settings.tls.client_auth = drbgd::config::ClientAuth::Required;
    settings.tls.client_ca_file = write("ca.pem", &ca.pem);
    settings.auth.enabled = true;
    let mut svc = drbgd::config::callers::CallerSettings {
        identities: vec!["spiffe://example.org/ns/prod/sa/svc".into()],
        ..Default::default()
    };
    svc.policy.routes = Some(vec![drbgd::callers::Route::Token]);
    settings.callers.insert("svc".into(), svc);
    let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();

    // Trusted and listed: the caller `svc`, with its policy.
    let (cert, key, ..) = ca.leaf(&[], &["spiffe://example.org/ns/prod/sa/svc"], "svc-client");
    let r = mtls_get(&addr, &ca.der, Some((cert.clone(), key.clone_key())), "/usage").await.unwrap();
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(r.contains("\"caller\":\"svc\""), "{r}");
    let r = mtls_get(&addr, &ca.der, Some((cert, key)), "/int?min=1&max=6").await.unwrap();
    assert!(r.starts_with("HTTP/1.1 403") && r.contains("route_not_allowed"), "{r}");

    // Trusted but listed by no caller: 403 unknown_client.
    let (cert, key, ..) = ca.leaf(&[], &[], "stranger");
    let r = mtls_get(&addr, &ca.der, Some((cert, key)), "/token").await.unwrap();
    assert!(r.starts_with("HTTP/1.1 403") && r.contains("unknown_client"), "{r}");

    // The same identity from a CA the server does not trust, or no certificate: no handshake.
    let (cert, key, ..) = other.leaf(&[], &["spiffe://example.org/ns/prod/sa/svc"], "svc-client");
    let r = mtls_get(&addr, &ca.der, Some((cert, key)), "/token").await;
    assert!(r.is_err(), "an untrusted client certificate must fail the handshake: {r:?}");
    let r = mtls_get(&addr, &ca.der, None, "/token").await;
    assert!(r.is_err(), "client_auth = required: no certificate, no handshake: {r:?}");
    std::fs::remove_dir_all(&dir).ok();
}
