//! Test harness for the secure apiserver: a PKI from `minik_cluster::pki`, a server on
//! `127.0.0.1:0` serving HTTPS with client-certificate, token and ServiceAccount-token
//! authentication, and clients for
//! each identity (minik-client built from a kubeconfig, or raw reqwest for the wire details).

#![allow(dead_code)]

use std::time::Duration;

use minik_apiserver::auth::tokens::{KeyFiles, DEFAULT_ISSUER};
use minik_apiserver::tls::TlsFiles;
use minik_apiserver::{ServeOptions, StorageBackend};
use minik_client::{Client, ClientConfig};
use minik_cluster::pki::{Identity, Pki};
use serde_json::Value;
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Every wait in these tests is bounded by this.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The static token file: one user in group `dev`, one without groups.
pub const TOKENS: &str = "alice-token,alice,uid-alice,\"dev\"\nbob-token,bob,uid-bob\n";

pub struct SecureServer {
    pub url: String,
    pub pki: Pki,
    pub dir: TempDir,
    shutdown: CancellationToken,
}

impl Drop for SecureServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl SecureServer {
    /// A server with TLS, the cluster CA as client CA, and [`TOKENS`].
    pub async fn start() -> Self {
        let dir = TempDir::new().expect("tempdir");
        let pki = Pki::ensure(dir.path(), &["node-1".into(), "node-2".into()]).expect("pki");
        let tokens = dir.path().join("tokens.csv");
        std::fs::write(&tokens, TOKENS).unwrap();
        let (cert_file, key_file) = pki.files("apiserver");
        let (signing_key_file, sa_key_file) = pki.service_account_key_files();
        let options = ServeOptions {
            tls: Some(TlsFiles {
                cert_file,
                key_file,
                client_ca_file: Some(pki.ca_file()),
            }),
            token_auth_file: Some(tokens),
            service_account: Some(KeyFiles {
                signing_key_file,
                key_file: sa_key_file,
                issuer: DEFAULT_ISSUER.into(),
                api_audiences: Vec::new(),
            }),
            ..ServeOptions::default()
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("https://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let backend = StorageBackend::memory(10_000);
        tokio::spawn(minik_apiserver::serve_with(
            listener,
            backend,
            options,
            shutdown.clone(),
        ));
        SecureServer {
            url,
            pki,
            dir,
            shutdown,
        }
    }

    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.pki.ca_file()).unwrap()
    }

    /// A minik client for `identity`, through a kubeconfig file as a component would.
    pub fn client(&self, identity: &Identity) -> Client {
        let path = self
            .dir
            .path()
            .join(format!("{}.kubeconfig", identity.name));
        self.pki
            .write_kubeconfig(identity, &self.url, &path)
            .expect("kubeconfig");
        Client::from_kubeconfig(&path).expect("client")
    }

    /// A minik client presenting a bearer token (and no certificate).
    pub fn token_client(&self, token: &str) -> Client {
        Client::from_config(&ClientConfig {
            server: self.url.clone(),
            ca_pem: Some(self.ca_pem()),
            token: Some(token.into()),
            ..ClientConfig::default()
        })
        .expect("client")
    }

    /// Raw reqwest trusting the cluster CA, without any credential.
    pub fn anonymous_http(&self) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(&self.ca_pem()).unwrap();
        reqwest::Client::builder()
            .tls_certs_only([ca])
            .no_proxy()
            .build()
            .unwrap()
    }

    /// Sends `request`, answering the code and the body (JSON if it parses).
    pub async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = tokio::time::timeout(TIMEOUT, request.send())
            .await
            .expect("in time")
            .expect("request");
        let code = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            code,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

/// The HTTP code of a minik-client result (200 for success).
pub fn code<T>(result: &minik_client::Result<T>) -> i32 {
    match result {
        Ok(_) => 200,
        Err(e) => e.status().and_then(|s| s.code).unwrap_or(-1),
    }
}
