//! The API server's configuration: [`Config`] for embedding (the test harness, `minik up`'s
//! in-process mode) and [`Args`], the same settings as `minik apiserver` flags.
//!
//! Kubernetes counterpart: `cmd/kube-apiserver/app/options` (`ServerRunOptions`), reduced to the
//! flags minik has.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::{auth, logs, tls, StorageSpec, DEFAULT_MAX_CONNECTIONS};

/// How the API server runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen; must be a loopback address (default `127.0.0.1:6443`).
    pub listen: SocketAddr,
    /// The directory of the sled database.
    pub data_dir: PathBuf,
    /// How many recent events watches can resume from (older → 410 Expired).
    pub event_window: usize,
    /// Which store: sled in `data_dir` (default), memory, or etcd (`--storage`).
    pub storage: StorageSpec,
    /// How often a watch with `allowWatchBookmarks=true` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Serve HTTPS with these files (and authenticate every request); `None`: plain http.
    pub tls: Option<tls::TlsFiles>,
    /// Upstream's static token CSV (`token,user,uid[,"groups"]`).
    pub token_auth_file: Option<PathBuf>,
    /// How the log proxy authenticates to the kubelets (https); `None`: plain http.
    pub kubelet_client: Option<logs::KubeletClientFiles>,
    /// The ServiceAccount token keys (the TokenRequest API and JWT authentication).
    pub service_account: Option<auth::tokens::KeyFiles>,
    /// The most connections served at once.
    pub max_connections: usize,
    /// `tolerationSeconds` of the not-ready and unreachable tolerations new pods get (300, 300).
    pub default_toleration_seconds: (i64, i64),
    /// How the `kubernetes` Endpoints are kept (`--endpoint-reconciler-type`).
    pub endpoint_reconciler: EndpointReconciler,
}

/// How the `kubernetes` Service's Endpoints are kept, as upstream's `--endpoint-reconciler-type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EndpointReconciler {
    /// This server's own address only, put back whenever changed (one apiserver).
    #[default]
    MasterCount,
    /// Each apiserver a Lease; the Endpoints list the live ones (several on one etcd).
    Lease,
    /// Nobody keeps them.
    None,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 6443)),
            data_dir: PathBuf::from("minik-data"),
            event_window: 10_000,
            storage: StorageSpec::Sled,
            bookmark_interval: Duration::from_secs(60),
            tls: None,
            token_auth_file: None,
            kubelet_client: None,
            service_account: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            default_toleration_seconds: (300, 300),
            endpoint_reconciler: EndpointReconciler::MasterCount,
        }
    }
}

/// Command-line flags of `minik-apiserver` and `minik apiserver`.
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Address to listen on (loopback only).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Directory holding the database.
    #[arg(long, default_value = "minik-data")]
    pub data_dir: PathBuf,
    /// Number of recent events kept for watches to resume from.
    #[arg(long, default_value_t = 10_000)]
    pub event_window: usize,
    /// Where objects are stored: `sled` (durable, in --data-dir), `memory` (lost on stop) or
    /// `etcd://HOST:PORT[/PREFIX]` (an etcd v3 cluster; several apiservers may share it).
    #[arg(long, default_value = "sled")]
    pub storage: StorageSpec,
    /// Interval between watch bookmarks (humantime: `60s`, `500ms`).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub bookmark_interval: Duration,
    /// Serve HTTPS with this certificate (PEM); needs --tls-private-key-file.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The serving certificate's private key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Accept client certificates signed by this CA (CN = user, O = groups).
    #[arg(long, requires = "tls_cert_file")]
    pub client_ca_file: Option<PathBuf>,
    /// Accept the bearer tokens of this CSV file (`token,user,uid[,"g1,g2"]`).
    #[arg(long, requires = "tls_cert_file")]
    pub token_auth_file: Option<PathBuf>,
    /// The client certificate the log proxy presents to the kubelets (https).
    #[arg(long, requires_all = ["kubelet_client_key", "kubelet_certificate_authority"])]
    pub kubelet_client_certificate: Option<PathBuf>,
    /// Its private key.
    #[arg(long, requires = "kubelet_client_certificate")]
    pub kubelet_client_key: Option<PathBuf>,
    /// The CA the kubelets' serving certificates must chain to.
    #[arg(long, requires = "kubelet_client_certificate")]
    pub kubelet_certificate_authority: Option<PathBuf>,
    /// Sign ServiceAccount tokens with this PKCS#8 EC P-256 key (PEM); serves the TokenRequest API.
    #[arg(long, requires_all = ["tls_cert_file", "service_account_key_file"])]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// Verify ServiceAccount tokens with this public key (PEM).
    #[arg(long, requires = "service_account_signing_key_file")]
    pub service_account_key_file: Option<PathBuf>,
    /// The `iss` of ServiceAccount tokens.
    #[arg(long, default_value = auth::tokens::DEFAULT_ISSUER)]
    pub service_account_issuer: String,
    /// The audiences a token must name to authenticate here (default: the issuer).
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// The most connections served at once; more wait in the listen backlog.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// `tolerationSeconds` of the `node.kubernetes.io/not-ready:NoExecute` toleration every new
    /// pod gets unless it has its own (DefaultTolerationSeconds admission).
    #[arg(long, default_value_t = 300)]
    pub default_not_ready_toleration_seconds: i64,
    /// The same for `node.kubernetes.io/unreachable:NoExecute`.
    #[arg(long, default_value_t = 300)]
    pub default_unreachable_toleration_seconds: i64,
    /// How the `kubernetes` Endpoints are kept: `master-count` (this server alone), `lease` (each
    /// apiserver a Lease, the live ones listed: several apiservers on one etcd) or `none`.
    #[arg(long, value_enum, default_value = "master-count")]
    pub endpoint_reconciler_type: EndpointReconciler,
}

impl Args {
    /// The [`Config`] these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            listen: self.listen,
            data_dir: self.data_dir,
            event_window: self.event_window,
            storage: self.storage,
            bookmark_interval: self.bookmark_interval.max(Duration::from_millis(10)),
            tls: self
                .tls_cert_file
                .zip(self.tls_private_key_file)
                .map(|(cert_file, key_file)| tls::TlsFiles {
                    cert_file,
                    key_file,
                    client_ca_file: self.client_ca_file,
                }),
            token_auth_file: self.token_auth_file,
            kubelet_client: match (
                self.kubelet_client_certificate,
                self.kubelet_client_key,
                self.kubelet_certificate_authority,
            ) {
                (Some(cert_file), Some(key_file), Some(ca_file)) => {
                    Some(logs::KubeletClientFiles {
                        cert_file,
                        key_file,
                        ca_file,
                    })
                }
                _ => None,
            },
            service_account: self
                .service_account_signing_key_file
                .zip(self.service_account_key_file)
                .map(|(signing_key_file, key_file)| auth::tokens::KeyFiles {
                    signing_key_file,
                    key_file,
                    issuer: self.service_account_issuer,
                    api_audiences: self.api_audiences,
                }),
            max_connections: self.max_connections.max(1),
            default_toleration_seconds: (
                self.default_not_ready_toleration_seconds,
                self.default_unreachable_toleration_seconds,
            ),
            endpoint_reconciler: self.endpoint_reconciler_type,
        }
    }
}
