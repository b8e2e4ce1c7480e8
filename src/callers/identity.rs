//! The identity of a verified client certificate (mTLS): the names a caller entry can list.
//! Read once per connection, after rustls has verified the chain against the configured CA
//! bundle; an unverified certificate never gets here (the handshake fails).

use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// The names of a verified client certificate, in the form caller entries use:
/// URI SANs as written (`spiffe://…`), `dns:<DNS SAN>`, `cn:<subject CN>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity(Vec<String>);

impl ClientIdentity {
    /// The names in the end-entity certificate `der`; `None` if it cannot be parsed (rustls
    /// verified it, so that does not happen for a certificate that got this far).
    pub fn from_der(der: &[u8]) -> Option<Self> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let (mut uris, mut dns) = (Vec::new(), Vec::new());
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    // Only URIs with an authority (`spiffe://…`), never one that could read
                    // as a `dns:` or `cn:` entry (a URI SAN `dns:web` is not a DNS name).
                    GeneralName::URI(uri) if is_uri_entry(uri) => uris.push((*uri).to_string()),
                    GeneralName::DNSName(name) => dns.push(format!("dns:{name}")),
                    _ => {}
                }
            }
        }
        let cns =
            cert.subject().iter_common_name().filter_map(|cn| cn.as_str().ok().map(|cn| format!("cn:{cn}")));
        // Most specific first: the first name that a caller lists decides. A name no caller
        // entry could be (an empty CN or DNS name) is left out.
        let names = uris.into_iter().chain(dns).chain(cns.collect::<Vec<_>>());
        Some(ClientIdentity(names.filter(|n| valid_entry(n)).collect()))
    }

    /// The names, most specific first: URI SANs, then DNS SANs, then the subject CN.
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// A test identity.
    pub fn from_names(names: Vec<String>) -> Self {
        ClientIdentity(names)
    }
}

/// Whether `entry` is a well-formed identity for a caller table: `dns:` or `cn:` with a
/// value, or a URI with a scheme and an authority (`spiffe://…`).
pub fn valid_entry(entry: &str) -> bool {
    if let Some(v) = entry.strip_prefix("dns:").or_else(|| entry.strip_prefix("cn:")) {
        return !v.is_empty();
    }
    is_uri_entry(entry)
}

/// Whether `uri` is `scheme://rest` with a scheme other than `dns` and `cn` (whose entries
/// name DNS SANs and subject CNs), so URI SAN names and the other kinds never collide.
fn is_uri_entry(uri: &str) -> bool {
    uri.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !scheme.eq_ignore_ascii_case("dns")
            && !scheme.eq_ignore_ascii_case("cn")
            && !rest.is_empty()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `client_identity` fuzz target: a certificate whose subject CN is empty
    /// gave the name `cn:`, which no caller entry can be.
    #[test]
    fn an_empty_common_name_is_no_name() {
        let identity =
            ClientIdentity::from_der(include_bytes!("../../tests/data/cert_empty_cn.der")).unwrap();
        assert!(identity.names().iter().all(|n| valid_entry(n)), "{:?}", identity.names());
        assert!(!identity.names().iter().any(|n| n == "cn:"));
    }

    #[test]
    fn reads_uri_dns_and_cn() {
        let mut params = rcgen::CertificateParams::new(vec!["web.internal".to_string()]).unwrap();
        params.subject_alt_names.push(rcgen::SanType::URI(
            rcgen::string::Ia5String::try_from("spiffe://example.org/ns/prod/sa/web").unwrap(),
        ));
        params.distinguished_name.push(rcgen::DnType::CommonName, "web-client");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let id = ClientIdentity::from_der(cert.der()).unwrap();
        assert_eq!(id.names(), ["spiffe://example.org/ns/prod/sa/web", "dns:web.internal", "cn:web-client"]);
        assert!(ClientIdentity::from_der(b"not a certificate").is_none());
    }

    #[test]
    fn uri_sans_cannot_pose_as_dns_or_cn_names() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        for uri in ["dns:batch.internal", "cn:batch", "DNS://batch.internal", "spiffe://example.org/web"] {
            params
                .subject_alt_names
                .push(rcgen::SanType::URI(rcgen::string::Ia5String::try_from(uri).unwrap()));
        }
        params.distinguished_name.push(rcgen::DnType::CommonName, "web-client");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let id = ClientIdentity::from_der(cert.der()).unwrap();
        assert_eq!(id.names(), ["spiffe://example.org/web", "cn:web-client"]);
    }

    #[test]
    fn entries_are_checked() {
        assert!(valid_entry("spiffe://example.org/web"));
        assert!(valid_entry("dns:web.internal"));
        assert!(valid_entry("cn:web"));
        assert!(!valid_entry("cn:"));
        assert!(!valid_entry("web"));
        assert!(!valid_entry("://x"));
    }
}
