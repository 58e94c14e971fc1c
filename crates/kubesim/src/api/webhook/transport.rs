//! The transport of webhook calls: dialing the service or URL, TLS against the
//! configuration's `caBundle` (with Go's certificate rules, `verify.rs`), the POST, and
//! errors worded like Go's `net/http` and `crypto/tls` ones.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use rustls::CertificateError;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::{Target, verify};

/// Dials, handshakes TLS and POSTs; errors are worded like Go's `net/http` ones.
pub(super) async fn post(target: &Target, path: &str, body: String) -> Result<(u16, bool, Bytes), String> {
    let addr = target.dial.clone()?;
    let tcp = TcpStream::connect(addr).await.map_err(|e| match e.kind() {
        io::ErrorKind::ConnectionRefused => format!("dial tcp {addr}: connect: connection refused"),
        _ => format!("dial tcp {addr}: {e}"),
    })?;
    // Go's net.Dial sets TCP_NODELAY on every TCP connection (net/tcpsock.go,
    // newTCPConn), as the API server's webhook client does: a small TLS Finished must not
    // wait for the delayed ACK of the previous flight.
    let _ = tcp.set_nodelay(true);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut config = if target.roots.is_empty() {
        // No caBundle: nothing is trusted (kubesim has no system roots to fall back on).
        builder.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
    } else {
        let verifier = verify::GoVerifier::new(target.roots.clone(), provider)?;
        builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let sniff = Sniff { inner: tcp, head: Vec::new() };
    let tls = connector
        .connect(target.server_name.clone(), sniff)
        .into_fallible()
        .await
        .map_err(|(e, io)| tls_error(&e, &io.head))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .map_err(hyper_error)?;
    let request = http::Request::post(path)
        .header(http::header::HOST, &target.authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let exchange = async move {
        let response = sender.send_request(request).await?;
        let is_text =
            response.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(
                |ct| ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("text/plain"),
            );
        let code = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok::<_, hyper::Error>((code, is_text, body))
    };
    tokio::pin!(exchange);
    tokio::select! {
        biased;
        result = &mut exchange => result.map_err(hyper_error),
        closed = conn => {
            closed.map_err(hyper_error)?;
            exchange.await.map_err(hyper_error)
        }
    }
}

pub(super) fn hyper_error(e: hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_closed() { "EOF".into() } else { e.to_string() }
}

/// Words a failed TLS handshake like Go's `crypto/tls` and `crypto/x509`.
pub(super) fn tls_error(e: &io::Error, head: &[u8]) -> String {
    if head.starts_with(b"HTTP/") {
        return "http: server gave HTTP response to HTTPS client".into();
    }
    let rustls_error = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    let Some(rustls::Error::InvalidCertificate(cert)) = rustls_error else {
        return match (e.kind(), rustls_error) {
            (io::ErrorKind::UnexpectedEof, _) => "EOF".into(),
            (_, Some(other)) => format!("tls: {other}"),
            _ => e.to_string(),
        };
    };
    let x509 = match cert {
        CertificateError::UnknownIssuer | CertificateError::BadSignature => {
            "certificate signed by unknown authority".to_string()
        }
        CertificateError::ExpiredContext { time, not_after } => format!(
            "certificate has expired or is not yet valid: current time {} is after {}",
            rfc3339(time.as_secs()),
            rfc3339(not_after.as_secs())
        ),
        CertificateError::NotValidYetContext { time, not_before } => format!(
            "certificate has expired or is not yet valid: current time {} is before {}",
            rfc3339(time.as_secs()),
            rfc3339(not_before.as_secs())
        ),
        CertificateError::Expired | CertificateError::NotValidYet => {
            "certificate has expired or is not yet valid".to_string()
        }
        CertificateError::NotValidForNameContext { expected, presented } => {
            let host = expected.to_str();
            let is_ip = matches!(expected, ServerName::IpAddress(_));
            let prefix = if is_ip { "IpAddress(" } else { "DnsName(\"" };
            let names: Vec<&str> = presented
                .iter()
                .filter_map(|p| p.strip_prefix(prefix)?.strip_suffix(if is_ip { ")" } else { "\")" }))
                .collect();
            match (names.is_empty(), is_ip) {
                (true, true) => {
                    format!("cannot validate certificate for {host} because it doesn't contain any IP SANs")
                }
                (true, false) => {
                    format!("certificate is not valid for any names, but wanted to match {host}")
                }
                _ => format!("certificate is valid for {}, not {host}", names.join(", ")),
            }
        }
        CertificateError::Other(other) if verify::is_ca_used_as_end_entity(other) => {
            // Go verifies such a chain (it does not look at a leaf's CA flag); WebPKI, which
            // kubesim verifies with, does not, unless the leaf is itself in the caBundle.
            "a CA certificate is served as the webhook's certificate and is not itself in the caBundle \
             (kubesim, unlike the API server, accepts a CA certificate as a server certificate only then)"
                .to_string()
        }
        other => other.to_string(),
    };
    format!("tls: failed to verify certificate: x509: {x509}")
}

/// Parses a PEM `caBundle` into trust roots (client-go `rootCertPool` messages).
pub(super) fn root_store(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    if pem.is_empty() {
        return Ok(Vec::new());
    }
    let mut store = rustls::RootCertStore::empty();
    let mut roots = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem).flatten() {
        if store.add(cert.clone()).is_ok() {
            roots.push(cert);
        }
    }
    if roots.is_empty() {
        let why = if String::from_utf8_lossy(pem).contains("-----BEGIN") {
            "no valid certificate authority data seen"
        } else {
            "unable to parse bytes as PEM block"
        };
        return Err(format!("unable to load root certificates: {why}"));
    }
    Ok(roots)
}

/// Records the first bytes the server sends, to recognise a plain-HTTP answer to a ClientHello.
pub(super) struct Sniff {
    inner: TcpStream,
    head: Vec<u8>,
}

impl AsyncRead for Sniff {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        let fresh = &buf.filled()[before..];
        let take = fresh.len().min(5usize.saturating_sub(this.head.len()));
        this.head.extend_from_slice(&fresh[..take]);
        result
    }
}

impl AsyncWrite for Sniff {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Splits `host[:port]` (IPv6 in brackets).
pub(crate) fn split_host_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = match s.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']').ok_or_else(|| format!("invalid host {s:?}"))?;
            (host, after.strip_prefix(':'))
        }
        None => match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        },
    };
    let port = port.map(|p| p.parse::<u16>().map_err(|_| format!("invalid port {p:?}"))).transpose()?;
    Ok((host, port))
}

pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// Resolves a host to a loopback address; kubesim never dials anywhere else.
pub(crate) fn resolve_loopback(host: &str, port: u16) -> Result<SocketAddr, String> {
    let ip = match host.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) if host.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Err(_) => return Err(format!("dial tcp: lookup {host}: no such host")),
    };
    let addr = SocketAddr::new(ip, port);
    if ip.is_loopback() {
        Ok(addr)
    } else {
        Err(format!("dial tcp {addr}: connect: kubesim only dials loopback addresses"))
    }
}

/// Go `path.Join("/", p)`: collapses slashes, resolves `.`/`..`, drops a trailing slash.
pub(crate) fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Formats UNIX seconds as RFC 3339 in UTC (`2006-01-02T15:04:05Z`).
pub(crate) fn rfc3339(secs: u64) -> String {
    i64::try_from(secs).ok().and_then(|s| jiff::Timestamp::from_second(s).ok()).map_or_else(
        || format!("{secs}s after the Unix epoch"),
        |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    )
}
