//! TLS for the test API server, with certificates committed in `certs/` (valid until 2126).
//!
//! The CA signs the server certificate (for `localhost`, `127.0.0.1`, `::1`) and the `admin`
//! client certificate; `other-ca.pem` signs nothing the server trusts, for failure tests.
//! `certs/make.sh` shows how they were made.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

/// PEM of the CA that signs the server and admin client certificates.
pub const CA_PEM: &str = include_str!("certs/ca.pem");
/// PEM of a CA unrelated to the server (a client trusting only it must fail).
pub const OTHER_CA_PEM: &str = include_str!("certs/other-ca.pem");
/// The server certificate.
pub const SERVER_CERT_PEM: &str = include_str!("certs/server.pem");
/// The server key (PKCS#8).
pub const SERVER_KEY_PEM: &str = include_str!("certs/server-key.pem");
/// A client certificate the server accepts (CN `kube-admin`, O `system:masters`).
pub const ADMIN_CERT_PEM: &str = include_str!("certs/admin.pem");
/// The key of [`ADMIN_CERT_PEM`] (SEC1 EC).
pub const ADMIN_KEY_PEM: &str = include_str!("certs/admin-key.pem");
/// A client certificate signed by the unrelated CA (the server must refuse it).
pub const STRANGER_CERT_PEM: &str = include_str!("certs/stranger.pem");
/// The key of [`STRANGER_CERT_PEM`].
pub const STRANGER_KEY_PEM: &str = include_str!("certs/stranger-key.pem");

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .expect("committed test certificates parse")
}

/// The server's rustls config: the server certificate, and optional client certificates
/// signed by the test CA (clients without one may still use a token).
pub(crate) fn server_config(verify_clients: bool) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY_PEM.as_bytes())
        .expect("committed test key parses");
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let builder = if verify_clients {
        let mut roots = RootCertStore::empty();
        for c in certs(CA_PEM) {
            roots.add(c).expect("test CA is a valid trust anchor");
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .expect("client verifier builds");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    Arc::new(
        builder
            .with_single_cert(certs(SERVER_CERT_PEM), key)
            .expect("test certificate and key match"),
    )
}
