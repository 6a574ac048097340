//! The kubelet server's TLS, x509 authentication and webhook authorization.
//!
//! Kubernetes counterpart: `pkg/kubelet/server/auth.go` (`NewKubeletAuth`,
//! `GetRequestAttributes`) and `server.go`'s `InstallAuthFilter`, configured as kubeadm does
//! (`--anonymous-auth=false`, `--authorization-mode=Webhook`, `--client-ca-file`): the caller's
//! client certificate names the user (CN) and groups (O); every request is then checked by a
//! `SubjectAccessReview` posted to the apiserver for verb + `nodes/<subresource>` on this node.
//! No certificate is 401 `Unauthorized`; a review that says no is 403 with upstream's
//! `Forbidden (user=…, verb=…, resource=nodes, subresource(s)=[…])`.
//!
//! What minik simplifies: no bearer tokens (TokenReview), no cache of review answers (upstream
//! keeps allowed answers 5 minutes, denied 30 seconds); HTTP/1.1 only.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use super::ServerState;

/// The files of `--tls-cert-file`, `--tls-private-key-file` and `--client-ca-file`.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The kubelet's serving certificate (PEM).
    pub cert_file: PathBuf,
    /// Its private key (PEM).
    pub key_file: PathBuf,
    /// The CA callers' client certificates must chain to.
    pub client_ca_file: PathBuf,
}

/// Who a connection's verified client certificate names (`None`: no certificate).
#[derive(Clone, Debug, Default)]
pub struct PeerUser(pub Option<User>);

/// A user and their groups, from a certificate's CN and O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// `kube-apiserver-kubelet-client`, `system:node:node-1`, …
    pub name: String,
    /// One per O.
    pub groups: Vec<String>,
}

/// Webhook authorization: the apiserver client the reviews go through, and this node's name.
#[derive(Clone, Debug)]
pub struct Webhook {
    /// The kubelet's own client (its node identity may create SubjectAccessReviews).
    pub client: minik_client::Client,
    /// The node the requests are about (`nodes/proxy` of `node-1`).
    pub node_name: String,
}

/// The verb and `nodes` subresource a request needs, as upstream's `GetRequestAttributes`.
pub fn request_attributes(method: &Method, path: &str) -> (&'static str, &'static str) {
    let verb = match *method {
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "get",
    };
    let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
    let subresource = if under("/stats") {
        "stats"
    } else if under("/metrics") {
        "metrics"
    } else if under("/logs") {
        "log"
    } else {
        // `/containerLogs`, `/healthz`, `/exec` … (docs/security.md#k3).
        "proxy"
    };
    (verb, subresource)
}

/// The middleware: 401 without a certificate, 403 unless a SubjectAccessReview allows it.
pub async fn authorize(State(state): State<ServerState>, request: Request, next: Next) -> Response {
    let Some(webhook) = state.authorization.as_ref() else {
        return next.run(request).await;
    };
    let user = request
        .extensions()
        .get::<PeerUser>()
        .and_then(|peer| peer.0.clone());
    let Some(user) = user else {
        return (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response();
    };
    let (verb, subresource) = request_attributes(request.method(), request.uri().path());
    let attributes = format!(
        "user={}, verb={verb}, resource=nodes, subresource(s)=[{subresource}]",
        user.name
    );
    match review(webhook, &user, verb, subresource).await {
        Ok(true) => next.run(request).await,
        Ok(false) => {
            debug!(%attributes, "forbidden");
            (StatusCode::FORBIDDEN, format!("Forbidden ({attributes})\n")).into_response()
        }
        Err(error) => {
            warn!(%attributes, %error, "authorization failed");
            let message = format!("Authorization error ({attributes})\n");
            (StatusCode::INTERNAL_SERVER_ERROR, message).into_response()
        }
    }
}

/// Posts a SubjectAccessReview for `user` and returns its `status.allowed`.
async fn review(
    webhook: &Webhook,
    user: &User,
    verb: &str,
    subresource: &str,
) -> minik_client::Result<bool> {
    let body = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user.name,
            "groups": user.groups,
            "resourceAttributes": {
                "verb": verb, "resource": "nodes", "subresource": subresource,
                "name": webhook.node_name,
            },
        },
    });
    let answer = webhook
        .client
        .request_json(
            reqwest::Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            Some(&body),
        )
        .await?;
    Ok(answer["status"]["allowed"].as_bool() == Some(true))
}

/// The user a DER certificate names: CN, and one group per O.
pub fn user_from_certificate(der: &[u8]) -> Option<User> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    Some(User { name, groups })
}

/// The acceptor for `files`: a certificate is asked for, and must chain to the client CA when
/// given; a caller without one still connects (and gets 401).
pub fn acceptor(files: &TlsFiles) -> io::Result<TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let certs = CertificateDer::pem_file_iter(&files.cert_file)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| invalid(&files.cert_file, e))?;
    let key =
        PrivateKeyDer::from_pem_file(&files.key_file).map_err(|e| invalid(&files.key_file, e))?;
    let mut roots = rustls::RootCertStore::empty();
    let ca = &files.client_ca_file;
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| invalid(ca, e))? {
        roots
            .add(cert.map_err(|e| invalid(ca, e))?)
            .map_err(|e| invalid(ca, e))?;
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| invalid(ca, e))?;
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

/// Serves `app` over TLS until `shutdown`: each connection's requests carry its [`PeerUser`].
pub async fn serve_tls(
    listener: TcpListener,
    app: Router,
    acceptor: TlsAcceptor,
    shutdown: CancellationToken,
) {
    let connections = TaskTracker::new();
    loop {
        let stream = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (acceptor, app, shutdown) = (acceptor.clone(), app.clone(), shutdown.clone());
        connections.spawn(async move {
            let handshake = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream));
            let Ok(Ok(stream)) = handshake.await else {
                return;
            };
            let user = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .and_then(|leaf| user_from_certificate(leaf.as_ref()));
            let app = app.layer(axum::Extension(PeerUser(user)));
            let service = hyper_util::service::TowerToHyperService::new(app);
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                result = connection => if let Err(error) = result {
                    debug!(%error, "kubelet connection ended with an error");
                },
                _ = shutdown.cancelled() => {}
            }
        });
    }
    connections.close();
    connections.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paths map to upstream's subresources; methods to verbs.
    #[test]
    fn paths_and_methods_become_review_attributes() {
        let get = |path| request_attributes(&Method::GET, path);
        assert_eq!(get("/containerLogs/default/web/main"), ("get", "proxy"));
        assert_eq!(get("/logs/messages"), ("get", "log"));
        assert_eq!(get("/stats/summary"), ("get", "stats"));
        assert_eq!(get("/metrics"), ("get", "metrics"));
        assert_eq!(get("/healthz"), ("get", "proxy"));
        assert_eq!(get("/logsx"), ("get", "proxy"));
        assert_eq!(
            request_attributes(&Method::POST, "/exec/default/web/main"),
            ("create", "proxy")
        );
    }
}
