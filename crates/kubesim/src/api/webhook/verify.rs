//! How the API server checks a webhook's certificate: Go's `crypto/x509` `Certificate.Verify`
//! against the `caBundle`, by way of rustls' WebPKI verifier.
//!
//! The two differ in one case that webhook frameworks rely on (kopf, for one, serves a
//! single self-signed certificate that is also its `caBundle`, and that certificate is
//! marked as a CA). Go puts a leaf that is itself one of the trusted roots in a chain of
//! its own and never looks at its CA flag (`verify.go`: "if the leaf is a root, the chain
//! is just the leaf"); WebPKI refuses any CA certificate as an end entity. So a
//! certificate byte-identical to a `caBundle` root is accepted when WebPKI's only
//! objection is that it is a CA; its validity period (checked by WebPKI before the CA
//! flag) and its names are still checked, and so is the handshake's signature.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, SignatureScheme};

/// A server-certificate verifier with Go's treatment of a leaf that is a trusted root.
#[derive(Debug)]
pub(super) struct GoVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    roots: Vec<CertificateDer<'static>>,
}

impl GoVerifier {
    /// A verifier trusting `roots` (not empty: WebPKI needs at least one anchor).
    pub(super) fn new(
        roots: Vec<CertificateDer<'static>>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Self, String> {
        let mut store = rustls::RootCertStore::empty();
        for root in &roots {
            store.add(root.clone()).map_err(|e| e.to_string())?;
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { webpki, roots })
    }
}

/// Whether WebPKI refused a certificate only for being a CA.
fn used_as_end_entity(e: &Error) -> bool {
    matches!(e, Error::InvalidCertificate(CertificateError::Other(other)) if is_ca_used_as_end_entity(other))
}

/// Whether this is WebPKI's `CaUsedAsEndEntity`.
pub(super) fn is_ca_used_as_end_entity(OtherError(inner): &OtherError) -> bool {
    inner.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity)
}

impl ServerCertVerifier for GoVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(e)
                if used_as_end_entity(&e) && self.roots.iter().any(|r| r.as_ref() == end_entity.as_ref()) =>
            {
                let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&cert, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
