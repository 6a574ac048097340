//! Serving HTTPS: the rustls configuration and the per-connection handshake.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/server/secure_serving.go` and
//! `options/serving.go` (`--tls-cert-file`, `--tls-private-key-file`) with
//! `options/authentication.go`'s `--client-ca-file`: Go's `tls.Config` with
//! `ClientAuth: RequestClientCert` plus verification against the client CA. A client may connect
//! without a certificate (it may carry a bearer token, or be anonymous); a certificate that is
//! presented must chain to the client CA, or the handshake fails (docs/security.md#x1, #x3).
//!
//! After the handshake the verified leaf's subject becomes the connection's [`PeerUser`], which
//! every request on the connection carries in its extensions for `auth::filter` to read.
//!
//! What minik simplifies: HTTP/1.1 only (ALPN `http/1.1`), no certificate reload, no SNI
//! certificates, one crypto provider (aws-lc-rs, as the rest of the build).
//!
//! Read next: `auth/mod.rs`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::auth::{authn, UserInfo};

/// The files of `--tls-cert-file`, `--tls-private-key-file` and `--client-ca-file`.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The serving certificate (PEM; a chain may follow the leaf).
    pub cert_file: PathBuf,
    /// Its private key (PEM).
    pub key_file: PathBuf,
    /// The CA client certificates must chain to; without it, certificates are not asked for.
    pub client_ca_file: Option<PathBuf>,
}

/// The user a connection's verified client certificate names (`None`: no certificate).
#[derive(Clone, Debug, Default)]
pub struct PeerUser(pub Option<UserInfo>);

/// Builds the acceptor for `files`.
pub fn acceptor(files: &TlsFiles) -> io::Result<TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let certs = CertificateDer::pem_file_iter(&files.cert_file)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| invalid(&files.cert_file, e))?;
    let key =
        PrivateKeyDer::from_pem_file(&files.key_file).map_err(|e| invalid(&files.key_file, e))?;
    let verifier = match &files.client_ca_file {
        Some(ca_file) => {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca_file).map_err(|e| invalid(ca_file, e))? {
                roots
                    .add(cert.map_err(|e| invalid(ca_file, e))?)
                    .map_err(|e| invalid(ca_file, e))?;
            }
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .allow_unauthenticated()
                .build()
                .map_err(|e| invalid(ca_file, e))?
        }
        None => WebPkiClientVerifier::no_client_auth(),
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| invalid(&files.cert_file, e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn invalid(path: &Path, error: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: {error}", path.display()),
    )
}

/// Runs the handshake (bounded by `timeout`, like the header read that follows it) and reads the
/// client certificate's user. `None` when the handshake fails or times out.
pub async fn handshake(
    acceptor: &TlsAcceptor,
    mut stream: TcpStream,
    timeout: Duration,
) -> Option<(TlsStream<TcpStream>, PeerUser)> {
    // One deadline for the peek and the handshake: a silent client waits `timeout`, not twice it.
    let deadline = tokio::time::Instant::now() + timeout;
    if answered_plain_http(&mut stream, deadline).await {
        return None;
    }
    let stream = match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "tls handshake failed");
            return None;
        }
        Err(_) => return None,
    };
    let user = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| authn::user_from_certificate(leaf.as_ref()));
    Some((stream, PeerUser(user)))
}

/// What Go's server answers a client that speaks plain HTTP to its TLS port (`net/http`'s
/// `serve`: a `tls.RecordHeaderError` whose bytes look like HTTP gets this 400, then the close).
const PLAIN_HTTP_ANSWER: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// Peeks at the first bytes: a plain HTTP request (`curl http://…:6443`) is answered with
/// upstream's 400 instead of a silent close. Returns whether it was.
async fn answered_plain_http(stream: &mut TcpStream, deadline: tokio::time::Instant) -> bool {
    use tokio::io::AsyncWriteExt;
    let mut first = [0u8; 5];
    let peeked = tokio::time::timeout_at(deadline, stream.peek(&mut first)).await;
    let Ok(Ok(n)) = peeked else { return false };
    if !looks_like_http(&first[..n]) {
        return false;
    }
    tracing::debug!("plain HTTP on the TLS port: answered 400");
    let _ = stream.write_all(PLAIN_HTTP_ANSWER).await;
    let _ = stream.shutdown().await;
    true
}

/// Go's `looksLikeHTTP`: the five bytes where a TLS record header would be start an HTTP method.
/// (A TLS record starts with 0x16, never a letter.)
fn looks_like_http(first: &[u8]) -> bool {
    const METHODS: [&[u8]; 5] = [b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO"];
    first.len() == 5 && METHODS.contains(&first)
}
