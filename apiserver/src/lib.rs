//! minik-apiserver: the Kubernetes API server of minik — REST and watch over a durable store.
//!
//! Kubernetes counterpart: `kube-apiserver` (`k8s.io/apiserver` for the generic machinery,
//! `pkg/registry` for the per-kind rules) in front of etcd. Every other minik component talks only
//! to this server, over the same HTTP API kubectl uses, so the paths, verbs, status codes, watch
//! lines and JSON are Kubernetes' own (`docs/real-clients.md`).
//!
//! How a request flows:
//!
//! 1. [`server`] accepts the connection (hyper, with header- and body-read timeouts, at most
//!    `--max-connections` at once) and hands the request
//!    to the axum [`router`]. A body over 3 MiB is refused with 413 before any handler runs, and
//!    [`hygiene`] refuses browser `Origin`s, foreign `Host`s and `text/plain` writes.
//! 2. [`request`] parses the path into a kind, namespace, name and subresource, and reads the
//!    query and body; [`handlers`] dispatches on the verb: get, list, create, update, patch,
//!    delete, or a [`watch`] stream.
//! 3. [`registry`] applies the kind's strategy: system metadata, defaults, validation, pod
//!    binding, graceful deletion, service cluster IPs; [`store`] carries out the deletes and the
//!    namespace lifecycle several handlers share.
//! 4. `storage` writes the object under the next global revision (its `resourceVersion`),
//!    flushes it to disk, then publishes the event that feeds every watch. The module is private:
//!    other crates pick a [`StorageBackend`] and can never name the `Storage` trait.
//! 5. The answer is the object as JSON, or a [`table`] of rows when kubectl asks for one.
//!
//! Groups registered by an `apiregistration.k8s.io/v1` APIService naming a service
//! (`metrics.k8s.io`) are proxied to that server by [`aggregator`], after authorization;
//! [`autoscaling_v1`] serves v1 HorizontalPodAutoscalers by converting to the stored v2, and
//! [`events_v1`] serves events.k8s.io/v1 Events by converting to the stored core/v1 ones.
//!
//! Around that: [`kubernetes_service`] (the `kubernetes` Service and its Endpoints, kept by the
//! server), [`discovery`] (`/version`, `/api`, `/apis`, `/api/v1`), [`openapi`] (the v2 and v3
//! documents with every kind's schema, for `kubectl explain` and validation), [`field_validation`] (`fieldValidation=Strict|Warn|Ignore`
//! and `Warning:` headers), [`patch`] (strategic merge patch and server-side apply with
//! `managedFields`), [`protobuf`] (the bodies kubectl's typed `create` commands send) and [`logs`]
//! (the pod log proxy to the kubelet).
//! [`admission`] calls the admission webhooks that ValidatingWebhookConfigurations and
//! MutatingWebhookConfigurations register, on every create, update and delete they match.
//!
//! Started with `--tls-cert-file` and `--tls-private-key-file` it serves HTTPS ([`tls`]) and every
//! request passes [`auth`] first: a client certificate (`--client-ca-file`) or a bearer token
//! (`--token-auth-file`, or a ServiceAccount JWT verified with `--service-account-key-file`) names
//! the user. Without those flags it serves plain http with no users.
//!
//! minik simplifies: no admission plugin chain (the namespace lifecycle and defaulting are built in; webhooks are called from the write handlers), protobuf only for the request bodies kubectl sends that
//! way (answers are JSON), one API version per kind, lists served from current state whatever
//! `resourceVersion` they ask for, strategic-merge list keys from a hand-written table, and
//! server-side apply tracking only appliers (no `Update` managers, so no conflicts with the
//! kubelet or controllers).
//!
//! Read next: `handlers/mod.rs` (routing), `registry/deletion.rs` (graceful delete), `watch.rs`.

pub mod admission;
pub mod aggregator;
pub mod apiextensions;
pub mod auth;
pub mod autoscaling_v1;
mod config;
pub mod discovery;
pub mod discovery_aggregated;
pub mod endpoint_leases;
pub mod error;
pub mod events_v1;
pub mod field_validation;
pub mod handlers;
pub mod hygiene;
pub mod ignored_fields;
pub mod kubernetes_service;
pub mod logs;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod registry;
pub mod request;
pub mod server;
mod storage;
pub mod store;
pub mod streaming;
pub mod table;
pub mod tls;
pub mod watch;
mod watch_body;
pub mod watch_encode;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, post};
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::limit::RequestBodyLimitLayer;

pub use config::{Args, Config, EndpointReconciler};
pub use error::{Error, Result};
pub use storage::spec::StorageSpec;
use storage::Storage;

/// Request bodies above this are refused with 413 (`MaxRequestBodyBytes`,
/// docs/kubernetes-rules.md#a5).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// What every request handler shares.
pub struct Shared {
    /// The store: objects, revisions, the event log.
    pub(crate) storage: Arc<dyn Storage>,
    /// Fired when the server stops; ends every watch stream.
    pub(crate) shutdown: CancellationToken,
    /// Interval between watch bookmarks.
    pub(crate) bookmark_interval: Duration,
    /// Held while a Service's cluster IP is chosen and stored, so two creates never pick the same.
    pub(crate) ip_allocation: tokio::sync::Mutex<()>,
    /// For the pod log proxy to the kubelets.
    pub(crate) http: reqwest::Client,
    /// The kubelets are reached over https (with `http`'s client certificate).
    pub(crate) kubelet_tls: bool,
    /// Who may do what; off for a plain-http server.
    pub(crate) security: auth::Security,
    /// How long a request body may take to arrive.
    pub(crate) body_read_timeout: Duration,
    /// The custom kinds established CRDs add (`apiextensions/`).
    pub(crate) custom: apiextensions::Kinds,
    /// TLS towards the kubelets for the exec/attach upgrade proxy (`None`: plain http).
    pub(crate) kubelet_connector: Option<tokio_rustls::TlsConnector>,
}

/// The state handlers receive.
pub type AppState = Arc<Shared>;

/// minik binds only 127.0.0.0/8 (docs/architecture.md#network), not even IPv6's `::1`.
fn is_loopback_v4(address: SocketAddr) -> bool {
    matches!(address.ip(), std::net::IpAddr::V4(ip) if ip.is_loopback())
}

/// Opens the store in `config.data_dir`, binds `config.listen` and serves until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    if !is_loopback_v4(config.listen) {
        return Err(Error::NotLoopback(config.listen));
    }
    std::fs::create_dir_all(&config.data_dir)?;
    let (not_ready, unreachable) = config.default_toleration_seconds;
    registry::pods::set_default_toleration_seconds(not_ready, unreachable);
    // The database is readable by its owner only (docs/security.md#local-control-plane).
    std::fs::set_permissions(
        &config.data_dir,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )?;
    let backend = StorageBackend::open(&config, shutdown.clone()).await?;
    let listener = TcpListener::bind(config.listen).await?;
    tracing::info!(data_dir = %config.data_dir.display(), storage = %config.storage, event_window = config.event_window, "opened storage");
    let options = ServeOptions {
        bookmark_interval: config.bookmark_interval,
        tls: config.tls,
        token_auth_file: config.token_auth_file,
        kubelet_client: config.kubelet_client,
        service_account: config.service_account,
        max_connections: config.max_connections,
        endpoint_reconciler: config.endpoint_reconciler,
        ..ServeOptions::default()
    };
    serve_with(listener, backend, options, shutdown).await
}

/// The store a server keeps its objects in, opened by the caller and handed to [`serve`].
///
/// Kubernetes counterpart: `k8s.io/apiserver/pkg/storage/storagebackend` (`Config`, `factory.Create`),
/// which picks etcd3 behind `storage.Interface`. The `Storage` trait itself is private to this
/// crate, so no other component can reach the store except through the API (README
/// "Architecture invariants": only the apiserver touches storage). This fails to compile:
///
/// ```compile_fail
/// use minik_apiserver::storage::Storage;
/// ```
#[derive(Clone)]
pub struct StorageBackend(Arc<dyn Storage>);

impl StorageBackend {
    /// A store in memory, lost when the server stops: for tests and hollow clusters.
    pub fn memory(event_window: usize) -> Self {
        StorageBackend(Arc::new(storage::memory::MemoryStorage::new(event_window)))
    }

    /// The store `config.storage` names (sled under `config.data_dir`); an etcd store follows
    /// etcd until `shutdown`.
    pub async fn open(config: &Config, shutdown: CancellationToken) -> Result<Self> {
        let window = config.event_window;
        Ok(match &config.storage {
            StorageSpec::Sled => Self::sled(&config.data_dir.join("sled"), window)?,
            StorageSpec::Memory => Self::memory(window),
            StorageSpec::Etcd { endpoint, prefix } => {
                let store =
                    storage::etcd::EtcdStorage::connect(endpoint, prefix, window, shutdown).await?;
                StorageBackend(Arc::new(store))
            }
        })
    }

    /// The durable sled store in `dir`, keeping `event_window` events for watches to resume from.
    pub fn sled(dir: &Path, event_window: usize) -> Result<Self> {
        let store = storage::sled::SledStorage::open(dir, event_window)?;
        Ok(StorageBackend(Arc::new(store)))
    }
}

/// Tunables of a running server (the defaults are upstream's).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Interval between watch bookmarks (60 s).
    pub bookmark_interval: Duration,
    /// How long a client may take to send its request headers (30 s, hyper's default).
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request body (60 s, upstream's request deadline).
    pub body_read_timeout: Duration,
    /// Serve HTTPS and authenticate every request (`None`: plain http, no users).
    pub tls: Option<tls::TlsFiles>,
    /// The most connections open at once; more wait in the listen backlog (slowloris bound).
    pub max_connections: usize,
    /// The static bearer tokens (only with `tls`).
    pub token_auth_file: Option<PathBuf>,
    /// The log proxy's https identity towards the kubelets (`None`: plain http).
    pub kubelet_client: Option<logs::KubeletClientFiles>,
    /// The ServiceAccount token keys (only with `tls`).
    pub service_account: Option<auth::tokens::KeyFiles>,
    /// How the `kubernetes` Endpoints are kept.
    pub endpoint_reconciler: EndpointReconciler,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bookmark_interval: Duration::from_secs(60),
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            tls: None,
            token_auth_file: None,
            kubelet_client: None,
            service_account: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            endpoint_reconciler: EndpointReconciler::MasterCount,
        }
    }
}

/// The default cap on open connections: room for thousands of watches and slow clients. Where the
/// file limit is lower, accept fails with EMFILE first, which the accept loop survives.
pub const DEFAULT_MAX_CONNECTIONS: usize = 8192;

/// Serves the API on a bound listener until `shutdown` (tests bind `127.0.0.1:0`).
pub async fn serve(
    listener: TcpListener,
    backend: StorageBackend,
    shutdown: CancellationToken,
) -> Result<()> {
    serve_with(listener, backend, ServeOptions::default(), shutdown).await
}

/// Like [`serve`], with explicit [`ServeOptions`].
pub async fn serve_with(
    listener: TcpListener,
    backend: StorageBackend,
    options: ServeOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    let StorageBackend(storage) = backend;
    let local = listener.local_addr()?;
    if !is_loopback_v4(local) {
        return Err(Error::NotLoopback(local));
    }
    let (acceptor, security) = security(&options)?;
    store::namespaces::bootstrap_namespaces(storage.as_ref()).await?;
    registry::storage_kinds::bootstrap_storage_class(storage.as_ref()).await?;
    if security.enabled() {
        auth::bootstrap::ensure(storage.as_ref()).await?;
        tokio::spawn(
            security
                .policy
                .clone()
                .watch_writes(storage.clone(), shutdown.clone()),
        );
    }
    let http = logs::kubelet_http_client(options.kubelet_client.as_ref())?;
    let state = Arc::new(Shared {
        storage,
        shutdown: shutdown.clone(),
        bookmark_interval: options.bookmark_interval,
        ip_allocation: tokio::sync::Mutex::new(()),
        http,
        kubelet_tls: options.kubelet_client.is_some(),
        security,
        body_read_timeout: options.body_read_timeout,
        custom: apiextensions::Kinds::default(),
        kubelet_connector: match &options.kubelet_client {
            Some(files) => Some(streaming::kubelet_tls_connector(files)?),
            None => None,
        },
    });
    tokio::spawn(apiextensions::controller::run(state.clone()));
    match options.endpoint_reconciler {
        EndpointReconciler::MasterCount => {
            tokio::spawn(kubernetes_service::run(
                state.clone(),
                local,
                shutdown.clone(),
            ));
        }
        EndpointReconciler::Lease => {
            tokio::spawn(endpoint_leases::run(state.clone(), local, shutdown.clone()));
        }
        EndpointReconciler::None => {}
    }
    server::serve_connections(
        listener,
        router(state),
        acceptor,
        options.max_connections,
        options.header_read_timeout,
        shutdown,
    )
    .await?;
    Ok(())
}

/// The TLS acceptor and the authentication `options` ask for. A token file needs TLS: bearer
/// tokens never travel in clear text.
fn security(options: &ServeOptions) -> Result<(Option<tokio_rustls::TlsAcceptor>, auth::Security)> {
    let Some(files) = &options.tls else {
        if options.token_auth_file.is_some() || options.service_account.is_some() {
            return Err(Error::Io(std::io::Error::other(
                "--token-auth-file and --service-account-signing-key-file need --tls-cert-file",
            )));
        }
        return Ok((None, auth::Security::default()));
    };
    let tokens = match &options.token_auth_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)?;
            auth::authn::parse_token_file(&text)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?
        }
        None => Default::default(),
    };
    let keys = match &options.service_account {
        Some(files) => Some(Arc::new(
            auth::tokens::Keys::load(files).map_err(std::io::Error::other)?,
        )),
        None => None,
    };
    tracing::info!(
        client_ca = files.client_ca_file.is_some(),
        tokens = tokens.len(),
        service_account_tokens = keys.is_some(),
        "serving https with authentication"
    );
    let mut authenticator = auth::authn::Authenticator::new(tokens);
    if let Some(keys) = &keys {
        authenticator = authenticator.with_service_accounts(keys.clone());
    }
    let mut security = auth::Security::with_authenticator(authenticator);
    security.tokens = keys;
    Ok((Some(tls::acceptor(files)?), security))
}

/// The HTTP routes: health, version and discovery, then every resource path.
pub fn router(state: AppState) -> Router {
    let authentication = axum::middleware::from_fn_with_state(state.clone(), auth::filter);
    let aggregation = axum::middleware::from_fn_with_state(state.clone(), aggregator::filter);
    let conversion =
        axum::middleware::from_fn_with_state(state.clone(), apiextensions::convert::filter);
    let routes = Router::new()
        .route("/healthz", get(ok))
        .route("/readyz", get(ok))
        .route("/livez", get(ok))
        .route("/version", get(discovery::version))
        .route("/api", get(discovery::api_versions))
        .route("/apis", get(discovery::api_groups))
        .route("/api/v1", get(discovery::core_v1))
        .route("/apis/{group}", get(apiextensions::discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_version))
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(auth::reviews::self_subject_access_review),
        )
        .route(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            post(auth::reviews::subject_access_review),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            post(auth::reviews::self_subject_rules_review),
        )
        .route(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            post(auth::reviews::self_subject_review),
        )
        .route("/openapi/v2", get(openapi::v2))
        .route("/openapi/v3", get(openapi::index))
        .route("/openapi/v3/{*path}", get(openapi::document))
        .route(
            "/api/v1/namespaces/{namespace}/pods/{name}/exec",
            any(streaming::exec),
        )
        .route(
            "/api/v1/namespaces/{namespace}/pods/{name}/attach",
            any(streaming::attach),
        )
        .route(
            "/api/v1/namespaces/{namespace}/pods/{name}/portforward",
            any(streaming::portforward),
        )
        .route("/api/v1/{*rest}", any(handlers::core_resource))
        .route(
            "/apis/{group}/{version}/{*rest}",
            any(handlers::group_resource),
        )
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            server::read_body_in_time,
        ))
        .with_state(state)
        .layer(DefaultBodyLimit::disable())
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        // After authentication and authorization: aggregated groups go to their own server.
        .layer(aggregation)
        // Custom resources leave in the version asked for, with their defaults.
        .layer(conversion);
    // v1 HPAs are rewritten to v2 before routing, so the router is wrapped, not layered.
    Router::new()
        .fallback_service(routes)
        .layer(axum::middleware::from_fn(autoscaling_v1::filter))
        .layer(axum::middleware::from_fn(events_v1::filter))
        .layer(authentication)
        // Before authentication, as upstream's CORS filter: browsers and foreign hosts go first.
        .layer(axum::middleware::from_fn(hygiene::filter))
        // Outermost, so it also rewrites the limit layer's own plain-text 413.
        .layer(axum::middleware::map_response(
            server::plain_errors_as_status,
        ))
}

async fn ok() -> &'static str {
    "ok"
}

async fn not_found() -> error::ApiError {
    minik_api::status::failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .into()
}
