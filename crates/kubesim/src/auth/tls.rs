//! TLS for the API server: a self-issued CA and serving certificate (like a fresh
//! cluster's), and a listener that hands axum finished TLS connections and closes each
//! with a TLS `close_notify` when the server is done with it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::ClientCertVerifier;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating the certificates failed.
    #[error("cannot generate the serving certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the key or certificate.
    #[error("cannot configure TLS: {0}")]
    Config(#[from] rustls::Error),
    /// A PEM block could not be read.
    #[error("cannot read PEM: {0}")]
    Pem(String),
    /// The CA could not be made a verifier of client certificates.
    #[error("cannot verify client certificates with the CA")]
    ClientVerifier(#[source] rustls::server::VerifierBuilderError),
    /// A client certificate names more than one group: the certificate library writes one
    /// organization (O) at most.
    #[error("a client certificate can carry one group (O), not {0}")]
    TooManyGroups(usize),
}

/// A CA and a serving certificate signed by it.
#[derive(Clone)]
pub struct ServingCert {
    /// The CA certificate (PEM) clients trust: `certificate-authority-data`.
    pub ca_pem: String,
    /// The serving certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM).
    pub key_pem: String,
    /// The CA's key, which signs client certificates.
    issuer: Arc<Issuer<'static, KeyPair>>,
}

/// A client certificate signed by kubesim's CA and its key, as a kubeconfig's
/// `client-certificate-data` and `client-key-data` carry them.
#[derive(Clone)]
pub struct ClientCert {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM).
    pub key_pem: String,
}

impl std::fmt::Debug for ClientCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCert").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ServingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingCert").finish_non_exhaustive()
    }
}

impl ServingCert {
    /// Issue a CA and a certificate for `hosts` (DNS names or IP addresses).
    pub fn issue(hosts: &[String]) -> Result<Self, TlsError> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "kubesim-ca");
        ca.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca, ca_key);
        let mut leaf = CertificateParams::new(hosts.to_vec())?;
        leaf.distinguished_name.push(DnType::CommonName, "kube-apiserver");
        let key = KeyPair::generate()?;
        let cert = leaf.signed_by(&key, &issuer)?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            issuer: Arc::new(issuer),
        })
    }

    /// A client certificate for `user` in `group` (its CN and O, as kube-apiserver's x509
    /// authenticator reads them), signed by this CA for client authentication and valid
    /// as long as the CA.
    pub fn client_cert(&self, user: &str, groups: &[&str]) -> Result<ClientCert, TlsError> {
        if groups.len() > 1 {
            return Err(TlsError::TooManyGroups(groups.len()));
        }
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        if let Some(group) = groups.first() {
            params.distinguished_name.push(DnType::OrganizationName, *group);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(ClientCert { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }

    /// A verifier of client certificates signed by this CA.
    pub(crate) fn client_verifier(&self) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(ca.map_err(|e| TlsError::Pem(e.to_string()))?)?;
        }
        rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .map_err(TlsError::ClientVerifier)
    }

    /// A rustls acceptor serving this certificate over HTTP/1.1.
    pub fn acceptor(&self) -> Result<TlsAcceptor, TlsError> {
        self.acceptor_with(Arc::new(rustls::server::NoClientAuth))
    }

    /// A rustls acceptor serving this certificate over HTTP/1.1 that asks clients for a
    /// certificate as `client_auth` says.
    pub(crate) fn acceptor_with(
        &self,
        client_auth: Arc<dyn ClientCertVerifier>,
    ) -> Result<TlsAcceptor, TlsError> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_client_cert_verifier(client_auth)
                .with_single_cert(certs, key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// A listener whose connections have finished their TLS handshake. Handshakes run in
/// their own tasks, so a slow client never holds up the others.
pub struct TlsListener {
    rx: mpsc::Receiver<(ClosingTls, SocketAddr)>,
    addr: SocketAddr,
}

impl TlsListener {
    /// Start accepting on `listener`.
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Small watch events must not wait for Nagle's algorithm.
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let conn_tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = conn_tx.send((ClosingTls(Some(tls)), peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
                if tx.is_closed() {
                    break;
                }
            }
        });
        Ok(Self { rx, addr })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = ClosingTls;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            // The accept task only ends when this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

/// A server-side TLS connection that ends with a TLS `close_notify` and a FIN however the
/// HTTP server lets go of it. hyper drops a connection without shutting it down when the
/// client goes away in the middle of a response (a watch, typically); Go's server still
/// answers with its own `close_notify`, and some clients (Python's asyncio before 3.12.8)
/// keep the socket open until they get one.
#[derive(Debug)]
pub struct ClosingTls(Option<TlsStream<tokio::net::TcpStream>>);

impl ClosingTls {
    /// The certificates the client presented in the handshake, leaf first (none unless
    /// the acceptor asked for them).
    pub fn peer_certificates(&self) -> Option<Vec<CertificateDer<'static>>> {
        self.0.as_ref().and_then(|s| s.get_ref().1.peer_certificates()).map(<[_]>::to_vec)
    }

    fn stream(&mut self) -> std::io::Result<&mut TlsStream<tokio::net::TcpStream>> {
        self.0.as_mut().ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotConnected))
    }
}

impl tokio::io::AsyncRead for ClosingTls {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }
}

impl tokio::io::AsyncWrite for ClosingTls {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.stream() {
            Ok(s) => std::pin::Pin::new(s).poll_write(cx, buf),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(s) => std::pin::Pin::new(s).poll_flush(cx),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }
}

impl Drop for ClosingTls {
    fn drop(&mut self) {
        let (Some(mut stream), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        runtime.spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            // A peer that stopped reading must not hold the task: a second at most.
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.shutdown()).await;
        });
    }
}
