//! `drbgd verify --jwks URL`: one GET of a JWK set, over HTTPS (rustls with the aws-lc-rs
//! provider, as the server's TLS; the Mozilla roots of `webpki-roots`, or `--ca FILE`'s) or,
//! to a loopback address only, plain HTTP: the keys fetched decide what verifies, so they
//! never come over a path anyone between could rewrite.
//!
//! An HTTP/1.0 GET written here rather than an HTTP client crate: the server links none
//! (reqwest is a test dependency), and one request answered with `Connection: close` and read
//! to its end needs none. The URL itself is parsed by the `url` crate (WHATWG), already in the
//! graph through redis.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use rustls_pki_types::ServerName;
use tokio_rustls::rustls;
use url::Position;

/// Most bytes of a response read: far more than any JWK set.
const MOST: u64 = 1 << 20;
/// Connect, read and write timeout.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The body of a 200 answer to a GET of `url` (`https://`, or `http://` to a loopback
/// address), server certificates checked against `ca`'s roots or the Mozilla roots.
///
/// # Errors
/// Another scheme, plain HTTP elsewhere than loopback, a connection or TLS failure, an answer
/// other than 200.
pub fn get(url: &str, ca: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    let target = Target::parse(url)?;
    let (tls, host, port) = (target.tls, &target.host, target.port);
    let addresses = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .with_context(|| format!("{url}: cannot resolve {host}"))?
        // Plain HTTP never leaves the machine: only loopback addresses are tried.
        .filter(|addr| tls || addr.ip().is_loopback())
        .collect::<Vec<_>>();
    ensure!(
        !addresses.is_empty(),
        "{url}: plain http:// only to a loopback address (the keys decide what verifies): use https://"
    );
    let stream = addresses
        .iter()
        .find_map(|addr| TcpStream::connect_timeout(addr, TIMEOUT).ok())
        .with_context(|| format!("{url}: cannot connect"))?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let request = format!(
        "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        target.request_target, target.authority
    );
    let response = if tls {
        let name = ServerName::try_from(host.clone()).with_context(|| format!("{url}: not a host name"))?;
        let connection =
            rustls::ClientConnection::new(Arc::new(crate::tls_client::client_config(ca, "--ca")?), name)?;
        let mut stream = rustls::StreamOwned::new(connection, stream);
        stream.write_all(request.as_bytes()).with_context(|| format!("{url}: TLS"))?;
        read_to_end(&mut stream)?
    } else {
        ensure!(stream.peer_addr()?.ip().is_loopback(), "{url}: connected elsewhere than loopback");
        let mut stream = stream;
        stream.write_all(request.as_bytes())?;
        read_to_end(&mut stream)?
    };
    body_of_200(url, &response)
}

/// What a GET of a URL needs, from the `url` crate's WHATWG parser: the scheme, the host
/// (brackets off an IPv6 one, as resolvers and TLS names take it), the port, the request
/// target (path and query, percent-encoded by the parser) and the `Host` header's value.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    tls: bool,
    host: String,
    port: u16,
    request_target: String,
    authority: String,
}

impl Target {
    /// `url` parsed: `https://`, or `http://` (loopback is checked on connecting).
    ///
    /// # Errors
    /// A control character or white space anywhere in the argument (the WHATWG parser would
    /// drop a tab or newline silently, so what is fetched would not be what was typed), a URL
    /// that does not parse (a bad port such as `[::1]garbage`), another scheme, user info, no
    /// host.
    fn parse(url: &str) -> anyhow::Result<Target> {
        if let Some(bad) = url.chars().find(|c| c.is_control() || c.is_whitespace()) {
            bail!("{:?}: a URL has no control characters or spaces (found {bad:?})", url);
        }
        let parsed = url::Url::parse(url).with_context(|| format!("{url}: not a URL"))?;
        let tls = match parsed.scheme() {
            "https" => true,
            "http" => false,
            _ => bail!("{url}: an https:// URL (or http:// to a loopback address), or a file"),
        };
        // (The URL is not repeated: its user info may hold a password.)
        ensure!(parsed.username().is_empty() && parsed.password().is_none(), "user info in a --jwks URL");
        let host = match parsed.host() {
            Some(url::Host::Domain(name)) if !name.is_empty() => name.to_owned(),
            Some(url::Host::Ipv4(v4)) => v4.to_string(),
            Some(url::Host::Ipv6(v6)) => v6.to_string(),
            _ => bail!("{url}: no host"),
        };
        let port = parsed.port_or_known_default().with_context(|| format!("{url}: no port"))?;
        // The parser's own slices: host and port as written (a default port left out), path
        // and query percent-encoded, without the fragment.
        let authority = parsed[Position::BeforeHost..Position::AfterPort].to_owned();
        let request_target = parsed[Position::BeforePath..Position::AfterQuery].to_owned();
        Ok(Target { tls, host, port, request_target, authority })
    }
}

/// Everything `stream` sends until it closes, at most [`MOST`] bytes. A TLS peer that closes
/// without close_notify ends the answer too (what it sent is read; a JWK set cut short does
/// not parse, or lacks keys, and then verifies less, never more).
fn read_to_end(stream: &mut impl Read) -> anyhow::Result<Vec<u8>> {
    // A whole answer within the timeout, not only each read (a server dripping a byte at a
    // time would hold the command for ever).
    let deadline = std::time::Instant::now() + TIMEOUT;
    let mut response = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        ensure!(std::time::Instant::now() < deadline, "no whole answer within {TIMEOUT:?}");
        match stream.read(&mut buf) {
            Ok(0) => return Ok(response),
            Ok(n) => {
                response.extend_from_slice(&buf[..n]);
                ensure!(response.len() as u64 <= MOST, "an answer of more than {MOST} bytes");
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {
                return Ok(response);
            }
            Err(e) => return Err(e).context("reading the answer"),
        }
    }
}

/// The body of an HTTP/1.x answer whose status is 200.
fn body_of_200(url: &str, response: &[u8]) -> anyhow::Result<Vec<u8>> {
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").context("no HTTP answer")?;
    let head = String::from_utf8_lossy(&response[..split]);
    let status = head.lines().next().unwrap_or_default();
    ensure!(status.split_whitespace().nth(1) == Some("200"), "{url}: {status}");
    ensure!(
        !head.to_ascii_lowercase().contains("transfer-encoding: chunked"),
        "{url}: a chunked answer to an HTTP/1.0 request"
    );
    Ok(response[split + 4..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> (bool, String, u16, String, String) {
        let t = Target::parse(url).unwrap();
        (t.tls, t.host, t.port, t.request_target, t.authority)
    }

    #[test]
    fn hosts_ports_and_paths() {
        let s = String::from;
        assert_eq!(target("https://keys.example"), (true, s("keys.example"), 443, s("/"), s("keys.example")));
        assert_eq!(
            target("http://127.0.0.1:8080/keys?x=1#frag"),
            (false, s("127.0.0.1"), 8080, s("/keys?x=1"), s("127.0.0.1:8080"))
        );
        assert_eq!(target("http://[::1]:9/keys"), (false, s("::1"), 9, s("/keys"), s("[::1]:9")));
        assert_eq!(target("https://[::1]/"), (true, s("::1"), 443, s("/"), s("[::1]")));
        // The default port is not written into Host; the path is percent-encoded.
        assert_eq!(
            target("https://K.example:443/a%20b/é?q=ü"),
            (true, s("k.example"), 443, s("/a%20b/%C3%A9?q=%C3%BC"), s("k.example"))
        );
        assert!(Target::parse("http://h:x/").is_err());
    }

    /// What a request line or header could be injected with, or a host read wrongly, is refused
    /// with a clear error before any connection.
    #[test]
    fn control_characters_spaces_and_bad_authorities_are_refused() {
        for url in [
            "http://127.0.0.1:8080/keys\r\nX-Injected: 1",
            "http://127.0.0.1:8080/keys\nGET /other",
            "http://127.0.0.1/ke\tys",
            "http://127.0.0.1/a b",
            " http://127.0.0.1/keys",
            "http://127.0.0.1/keys\u{7f}",
        ] {
            let e = Target::parse(url).unwrap_err();
            assert!(e.to_string().contains("no control characters or spaces"), "{url:?}: {e:#}");
            assert!(get(url, None).is_err());
        }
        for url in ["http://[::1]garbage/keys", "http://[::1/keys", "http://127.0.0.1:99999/"] {
            assert!(Target::parse(url).is_err(), "{url}");
        }
    }

    #[test]
    fn plain_http_elsewhere_than_loopback_and_other_schemes_are_refused() {
        assert!(get("ftp://x/keys", None).is_err());
        assert!(get("http://user@127.0.0.1/keys", None).is_err());
        // 192.0.2.0/24 is TEST-NET-1: refused before any connection is tried.
        let e = get("http://192.0.2.1:9/keys", None).unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e:#}");
    }

    #[test]
    fn only_a_200_body_is_taken() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"keys\":[]}";
        assert_eq!(body_of_200("u", ok).unwrap(), b"{\"keys\":[]}");
        assert!(body_of_200("u", b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
        assert!(body_of_200("u", b"garbage").is_err());
    }
}
