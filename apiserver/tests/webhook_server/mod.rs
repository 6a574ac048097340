//! A real HTTPS admission webhook for the tests: a CA and a serving certificate made with rcgen
//! (valid for 127.0.0.1, `localhost` and `hook.default.svc`), an HTTP/1.1 server on
//! `127.0.0.1:0` that answers each AdmissionReview with what the test's closure decides, and a
//! record of every review received. [`WebhookServer::start_raw`] answers any review (CRD
//! conversion webhooks' ConversionReviews) with the closure's whole reply.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Given the review's `request`, the `response` to send (`uid` is filled in); `None` never
/// answers (until the server stops), to exercise timeouts.
pub type Answer = Arc<dyn Fn(&Value) -> Option<Value> + Send + Sync>;

/// Given the whole review, the whole reply.
pub type Reply = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// How the server answers.
#[derive(Clone)]
enum Handler {
    /// An AdmissionReview: the closure decides the `response`.
    Admission(Answer),
    /// Any review: the closure writes the reply.
    Raw(Reply),
}

pub struct WebhookServer {
    pub addr: SocketAddr,
    /// The CA that signed the serving certificate, for `caBundle`.
    pub ca_pem: String,
    /// Every review's `request`, in arrival order.
    pub calls: Arc<Mutex<Vec<Value>>>,
    shutdown: CancellationToken,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// An answer that allows with an optional JSON Patch and warnings.
pub fn allow(patch: Option<Value>, warnings: &[&str]) -> Value {
    use base64::Engine;
    let mut response = json!({"allowed": true, "warnings": warnings});
    if let Some(patch) = patch {
        response["patchType"] = json!("JSONPatch");
        response["patch"] =
            json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    }
    response
}

/// An answer that denies with a code and a message.
pub fn deny(code: u16, message: &str) -> Value {
    json!({"allowed": false, "status": {"code": code, "message": message}})
}

fn certificates() -> (String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let names = vec!["localhost".to_string(), "hook.default.svc".to_string()];
    let mut params = CertificateParams::new(names).expect("params");
    params
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let leaf = params.signed_by(&key, &issuer).expect("leaf");
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    (ca.pem(), vec![leaf.der().clone()], key_der)
}

impl WebhookServer {
    pub async fn start(answer: Answer) -> Self {
        Self::serve(Handler::Admission(answer)).await
    }

    /// A server whose replies are `reply`'s, for reviews other than AdmissionReviews; `calls`
    /// records each whole review.
    pub async fn start_raw(reply: Reply) -> Self {
        Self::serve(Handler::Raw(reply)).await
    }

    async fn serve(answer: Handler) -> Self {
        let (ca_pem, chain, key) = certificates();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let calls = Arc::new(Mutex::new(Vec::new()));
        let shutdown = CancellationToken::new();
        let server = WebhookServer {
            addr,
            ca_pem,
            calls: calls.clone(),
            shutdown: shutdown.clone(),
        };
        tokio::spawn(accept_loop(listener, acceptor, answer, calls, shutdown));
        server
    }

    /// `https://127.0.0.1:{port}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// The reviews received so far.
    pub fn received(&self) -> Vec<Value> {
        self.calls.lock().unwrap().clone()
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    answer: Handler,
    calls: Arc<Mutex<Vec<Value>>>,
    shutdown: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                // As Go's servers do: no Nagle delay on small answers.
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Err(_) => continue,
            },
        };
        let (acceptor, answer, calls, shutdown) = (
            acceptor.clone(),
            answer.clone(),
            calls.clone(),
            shutdown.clone(),
        );
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let stop = shutdown.clone();
            let service = hyper::service::service_fn(move |request| {
                respond(request, answer.clone(), calls.clone(), stop.clone())
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service);
            tokio::select! {
                _ = connection => {}
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

async fn respond(
    request: Request<Incoming>,
    answer: Handler,
    calls: Arc<Mutex<Vec<Value>>>,
    shutdown: CancellationToken,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let body = request.into_body().collect().await?.to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let answer = match answer {
        Handler::Raw(reply) => {
            calls.lock().unwrap().push(review.clone());
            return Ok(json_reply(reply(&review)));
        }
        Handler::Admission(answer) => answer,
    };
    let asked = review["request"].clone();
    calls.lock().unwrap().push(asked.clone());
    let Some(mut response) = answer(&asked) else {
        shutdown.cancelled().await;
        return Ok(Response::new(Full::new(Bytes::new())));
    };
    response["uid"] = asked["uid"].clone();
    let reply = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
    Ok(json_reply(reply))
}

fn json_reply(reply: Value) -> Response<Full<Bytes>> {
    let mut answer = Response::new(Full::new(Bytes::from(reply.to_string())));
    answer
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    answer
}
