//! The upgrade proxy: the client's upgrade request is sent on to the kubelet; when the kubelet
//! switches protocols, the client gets its `101` and the two connections are spliced.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go`
//! (`UpgradeAwareHandler.tryUpgrade`): dial the backend (TLS with the apiserver's kubelet client
//! certificate), write the request, read the response head; anything but 101 is passed back as an
//! error, 101 is copied to the client and bytes then flow both ways until either side closes.
//! A plain SPDY/3.1 upgrade takes the same path: its `X-Stream-Protocol-Version` offers (one
//! header per protocol) go to the kubelet, and the one it chose comes back.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderName, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use minik_api::status;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::error::{ApiError, ApiResult};
use crate::logs::KubeletClientFiles;
use crate::AppState;

/// The headers of an upgrade that travel to the kubelet and back (every value of each).
const UPGRADE_HEADERS: [HeaderName; 7] = [
    header::CONNECTION,
    header::UPGRADE,
    header::SEC_WEBSOCKET_KEY,
    header::SEC_WEBSOCKET_VERSION,
    header::SEC_WEBSOCKET_PROTOCOL,
    header::SEC_WEBSOCKET_ACCEPT,
    HeaderName::from_static("x-stream-protocol-version"),
];

/// The TLS client towards the kubelets: the apiserver's client certificate, trusting only the
/// kubelet CA (`--kubelet-certificate-authority`).
pub fn kubelet_tls_connector(files: &KubeletClientFiles) -> std::io::Result<TlsConnector> {
    let io = |e: &dyn std::fmt::Display| std::io::Error::other(e.to_string());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&files.ca_file).map_err(|e| io(&e))? {
        roots.add(cert.map_err(|e| io(&e))?).map_err(|e| io(&e))?;
    }
    let certs = CertificateDer::pem_file_iter(&files.cert_file)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| io(&e))?;
    let key = PrivateKeyDer::from_pem_file(&files.key_file).map_err(|e| io(&e))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| io(&e))?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| io(&e))?;
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Sends `request`'s upgrade to the kubelet on `port` as `path`, and answers with the kubelet's.
pub async fn proxy(
    state: &AppState,
    port: i32,
    path: &str,
    mut request: Request,
) -> ApiResult<Response> {
    let unreachable = |e: &dyn std::fmt::Display| {
        ApiError::from(status::failure(
            502,
            "InternalError",
            format!("failed to reach the kubelet: {e}"),
        ))
    };
    let tcp = TcpStream::connect(("127.0.0.1", port as u16))
        .await
        .map_err(|e| unreachable(&e))?;
    let mut upstream = axum::http::Request::builder()
        .method(Method::GET)
        .uri(path)
        .header(header::HOST, format!("127.0.0.1:{port}"));
    for name in &UPGRADE_HEADERS {
        for value in request.headers().get_all(name) {
            upstream = upstream.header(name, value);
        }
    }
    let upstream = upstream
        .body(Empty::<Bytes>::new())
        .map_err(|e| unreachable(&e))?;
    let mut answer = match &state.kubelet_connector {
        Some(connector) => {
            let name = ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| unreachable(&e))?;
            send(tls, upstream).await
        }
        None => send(tcp, upstream).await,
    }
    .map_err(|e| unreachable(&e))?;
    if answer.status() != StatusCode::SWITCHING_PROTOCOLS {
        return Err(kubelet_refusal(answer).await);
    }
    let from_client = hyper::upgrade::on(&mut request);
    let from_kubelet = hyper::upgrade::on(&mut answer);
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        let (Ok(client), Ok(kubelet)) = tokio::join!(from_client, from_kubelet) else {
            return;
        };
        let (mut client, mut kubelet) = (TokioIo::new(client), TokioIo::new(kubelet));
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut kubelet) => {}
            _ = shutdown.cancelled() => {}
        }
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    for name in &UPGRADE_HEADERS {
        for value in answer.headers().get_all(name) {
            response.headers_mut().append(name, value.clone());
        }
    }
    Ok(response)
}

/// One request on a fresh HTTP/1.1 connection that may be upgraded.
async fn send<S>(
    stream: S,
    request: axum::http::Request<Empty<Bytes>>,
) -> hyper::Result<axum::http::Response<hyper::body::Incoming>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection.with_upgrades());
    sender.send_request(request).await
}

/// The kubelet's refusal as a Status (its body is plain text).
async fn kubelet_refusal(answer: axum::http::Response<hyper::body::Incoming>) -> ApiError {
    let code = answer.status().as_u16();
    let text = match answer.into_body().collect().await {
        Ok(body) => String::from_utf8_lossy(&body.to_bytes()).trim().to_string(),
        Err(_) => String::new(),
    };
    let reason = match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        _ => "InternalError",
    };
    status::failure(code, reason, text).into()
}
