//! Client certificates, as kube-apiserver takes them: the TLS handshake asks for a
//! certificate but accepts any (Go's `tls.RequestClientCert`), and the x509 authenticator
//! (`staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go`) verifies the
//! chain against the client CA with the client-auth key usage and reads the user from the
//! leaf: `CommonNameUserConversion`, the subject's CN the user name (none: not this
//! authenticator's request) and its O entries the groups. A certificate that does not
//! verify fails the request with 401, not the handshake.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::auth::authz::User;

/// A rustls client-certificate policy that asks for a certificate, lets clients without
/// one in, and leaves the chain to [`user`]: only the handshake's signature (proof the
/// client holds the key) is checked here, by the CA's verifier.
#[derive(Debug)]
pub(crate) struct RequestClientCert(pub(crate) Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The user a verified chain (leaf first) names: `Ok(None)` when the leaf has no common
/// name, `Err` when the chain does not verify against `ca` for client authentication.
pub(super) fn user(
    ca: &dyn ClientCertVerifier,
    chain: &[CertificateDer<'static>],
) -> Result<Option<User>, String> {
    let Some((leaf, intermediates)) = chain.split_first() else { return Ok(None) };
    ca.verify_client_cert(leaf, intermediates, UnixTime::now())
        .map_err(|e| format!("verifying certificate: {e}"))?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|e| format!("parsing certificate: {e}"))?;
    let subject = cert.subject();
    let text = |a: &x509_parser::x509::AttributeTypeAndValue<'_>| a.as_str().ok().map(str::to_owned);
    let Some(name) = subject.iter_common_name().next().and_then(text).filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    let groups: Vec<String> = subject.iter_organization().filter_map(text).collect();
    Ok(Some(User { name, groups }))
}
