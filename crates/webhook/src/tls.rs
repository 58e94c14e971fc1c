//! Certificates for the server: either files (a cert-manager style mounted Secret, read
//! again when they change) or a CA and serving certificate issued at startup ([`SelfIssued`]),
//! whose CA the operator then patches into its webhook configurations ([`crate::cabundle`]).
//!
//! [`CertStore`] holds the current certificate and answers rustls' certificate lookups, so
//! a reload takes effect on the next handshake without restarting the server. Accepting
//! connections and bounding them is the listener's and the connection's business, not this
//! module's.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest as _, Sha256};
use tokio_rustls::TlsAcceptor;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file holds no usable PEM certificate or key.
    #[error("{what} is not a PEM {expected}: {message}")]
    Pem {
        /// Which input (a path or "the certificate").
        what: String,
        /// What was expected in it.
        expected: &'static str,
        /// The parser's complaint.
        message: String,
    },
    /// rustls does not support the key (ring signs RSA, ECDSA P-256/P-384 and Ed25519).
    #[error("the private key cannot sign: {0}")]
    Key(rustls::Error),
    /// Issuing the self-signed CA or serving certificate failed.
    #[error("cannot issue a certificate")]
    Issue(#[from] rcgen::Error),
    /// rustls refused the server configuration.
    #[error("cannot configure TLS")]
    Config(#[from] rustls::Error),
}

/// A CA and a serving certificate signed by it, issued in memory at startup.
#[derive(Clone)]
pub struct SelfIssued {
    /// The CA certificate (PEM): the `caBundle` of the webhook configurations.
    pub ca_pem: String,
    /// The serving certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM).
    pub key_pem: String,
}

impl std::fmt::Debug for SelfIssued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfIssued").field("ca_pem", &self.ca_pem).finish_non_exhaustive()
    }
}

impl SelfIssued {
    /// Issue a CA and a certificate valid for `hosts` (DNS names or IP addresses), e.g.
    /// `my-operator-webhook.my-operator-system.svc` and `127.0.0.1`.
    pub fn issue(hosts: &[String]) -> Result<Self, TlsError> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.distinguished_name.push(DnType::CommonName, "ctop webhook CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca, ca_key);
        let mut leaf = CertificateParams::new(hosts.to_vec())?;
        leaf.distinguished_name
            .push(DnType::CommonName, hosts.first().map_or("ctop-webhook", String::as_str));
        let key = KeyPair::generate()?;
        let cert = leaf.signed_by(&key, &issuer)?;
        Ok(Self { ca_pem: ca_cert.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }
}

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum TlsSource {
    /// PEM files, checked every `reload_every` and swapped in when their content changes.
    Files {
        /// The certificate chain (`tls.crt`).
        cert: PathBuf,
        /// The private key (`tls.key`).
        key: PathBuf,
        /// How often the files are read again.
        reload_every: Duration,
    },
    /// Issued at startup.
    SelfIssued(SelfIssued),
}

/// The current serving certificate, swappable while the server runs.
#[derive(Debug, Clone)]
pub struct CertStore {
    current: Arc<RwLock<Arc<CertifiedKey>>>,
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|c| c.clone())
    }
}

pub(crate) fn certified_key(cert_pem: &[u8], key_pem: &[u8], what: &str) -> Result<CertifiedKey, TlsError> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert_pem).collect::<Result<_, _>>().map_err(|e| TlsError::Pem {
            what: what.to_owned(),
            expected: "certificate",
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            what: what.to_owned(),
            expected: "certificate",
            message: "no CERTIFICATE block".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Pem {
        what: what.to_owned(),
        expected: "private key",
        message: e.to_string(),
    })?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key).map_err(TlsError::Key)?;
    Ok(CertifiedKey::new(certs, signer))
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_owned(), source })
}

impl CertStore {
    /// Load the certificate of `source`. For files, also start a task (on the current
    /// tokio runtime) that reloads them when their content changes; a file that fails to
    /// load keeps the previous certificate and logs why.
    pub fn new(source: &TlsSource) -> Result<Self, TlsError> {
        match source {
            TlsSource::SelfIssued(s) => {
                let key =
                    certified_key(s.cert_pem.as_bytes(), s.key_pem.as_bytes(), "the issued certificate")?;
                Ok(Self { current: Arc::new(RwLock::new(Arc::new(key))) })
            }
            TlsSource::Files { cert, key, reload_every } => {
                let (cert_bytes, key_bytes) = (read(cert)?, read(key)?);
                let loaded = certified_key(&cert_bytes, &key_bytes, &cert.display().to_string())?;
                let store = Self { current: Arc::new(RwLock::new(Arc::new(loaded))) };
                let fingerprint = digest(&cert_bytes, &key_bytes);
                store.watch(cert.clone(), key.clone(), *reload_every, fingerprint);
                Ok(store)
            }
        }
    }

    fn watch(&self, cert: PathBuf, key: PathBuf, every: Duration, mut fingerprint: [u8; 32]) {
        let weak = Arc::downgrade(&self.current);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every.max(Duration::from_millis(100)));
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(current) = weak.upgrade() else { return };
                let (Ok(c), Ok(k)) = (read(&cert), read(&key)) else {
                    tracing::warn!(cert = %cert.display(), key = %key.display(), "cannot read the certificate files; keeping the loaded certificate");
                    continue;
                };
                let now = digest(&c, &k);
                if now == fingerprint {
                    continue;
                }
                match certified_key(&c, &k, &cert.display().to_string()) {
                    Ok(loaded) => {
                        if let Ok(mut slot) = current.write() {
                            *slot = Arc::new(loaded);
                        }
                        fingerprint = now;
                        tracing::info!(cert = %cert.display(), "webhook certificate reloaded");
                    }
                    // A Secret update writes the two files one after the other: a mismatch is
                    // retried on the next tick.
                    Err(e) => {
                        tracing::warn!(error = %ctop_core::Chain(&e), "new certificate files do not load yet; keeping the loaded certificate")
                    }
                }
            }
        });
    }

    /// A rustls acceptor serving the store's current certificate over HTTP/1.1.
    pub fn acceptor(&self) -> Result<TlsAcceptor, TlsError> {
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_cert_resolver(Arc::new(self.clone()));
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

fn digest(cert: &[u8], key: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(cert);
    h.update([0]);
    h.update(key);
    h.finalize().into()
}
