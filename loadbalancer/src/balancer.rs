//! The listeners: one per frontend, each forwarding connections round robin to its pool.
//!
//! Kubernetes counterpart: none in Kubernetes itself — this is the cloud's load balancer (an F5
//! or an ELB) that the service controller programs. Like the one in seed 003 it is programmed in
//! batches: [`Balancer::apply`] runs once per batch period, so a pod deleted just after a batch
//! keeps receiving new connections until the next one. A connection goes to one endpoint, with
//! no retry: if that pod has already exited, the client sees the failure.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::frontends::Frontend;

/// How long a dial to an endpoint may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(1);

/// A pool shared by a listener and its connections.
#[derive(Debug, Default)]
struct Pool {
    endpoints: RwLock<Vec<SocketAddr>>,
    next: AtomicUsize,
}

impl Pool {
    fn pick(&self) -> Option<SocketAddr> {
        let endpoints = self.endpoints.read().unwrap_or_else(|p| p.into_inner());
        let n = endpoints.len();
        (n > 0).then(|| endpoints[self.next.fetch_add(1, Ordering::Relaxed) % n])
    }
}

struct Listening {
    frontend: Frontend,
    pool: Arc<Pool>,
    stop: CancellationToken,
}

/// Every open listener.
pub struct Balancer {
    listening: BTreeMap<SocketAddr, Listening>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

impl Balancer {
    /// No listener yet; connection tasks go to `tasks`.
    pub fn new(tasks: TaskTracker, shutdown: CancellationToken) -> Self {
        Balancer {
            listening: BTreeMap::new(),
            tasks,
            shutdown,
        }
    }

    /// Makes the listeners match `desired`. Returns whether any pool or listener changed.
    pub async fn apply(&mut self, desired: BTreeMap<SocketAddr, Frontend>) -> bool {
        let mut changed = false;
        let gone: Vec<SocketAddr> = self
            .listening
            .keys()
            .filter(|a| !desired.contains_key(a))
            .copied()
            .collect();
        for address in gone {
            if let Some(old) = self.listening.remove(&address) {
                old.stop.cancel();
                info!(service = %old.frontend.service, %address, "stopped serving");
                changed = true;
            }
        }
        for (address, frontend) in desired {
            if let Some(open) = self.listening.get_mut(&address) {
                if open.frontend != frontend {
                    *open
                        .pool
                        .endpoints
                        .write()
                        .unwrap_or_else(|p| p.into_inner()) = frontend.endpoints.clone();
                    info!(service = %frontend.service, %address, endpoints = ?frontend.endpoints, "applied endpoints");
                    open.frontend = frontend;
                    changed = true;
                }
                continue;
            }
            match TcpListener::bind(address).await {
                Ok(listener) => {
                    let pool = Arc::new(Pool::default());
                    *pool.endpoints.write().unwrap_or_else(|p| p.into_inner()) =
                        frontend.endpoints.clone();
                    let stop = self.shutdown.child_token();
                    self.tasks.spawn(accept_loop(
                        listener,
                        pool.clone(),
                        self.tasks.clone(),
                        stop.clone(),
                    ));
                    info!(service = %frontend.service, %address, endpoints = ?frontend.endpoints, "serving");
                    self.listening.insert(
                        address,
                        Listening {
                            frontend,
                            pool,
                            stop,
                        },
                    );
                    changed = true;
                }
                Err(error) => warn!(service = %frontend.service, %address, %error, "cannot listen"),
            }
        }
        changed
    }

    /// The addresses served for `service` (`namespace/name`).
    pub fn addresses_of(&self, service: &minik_api::ObjectKey) -> Vec<SocketAddr> {
        self.listening
            .iter()
            .filter(|(_, l)| &l.frontend.service == service)
            .map(|(a, _)| *a)
            .collect()
    }
}

async fn accept_loop(
    listener: TcpListener,
    pool: Arc<Pool>,
    tasks: TaskTracker,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((client, _)) => {
                tasks.spawn(connect(client, pool.clone(), stop.clone()));
            }
            Err(error) => {
                warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// One connection: one endpoint, one dial; the bytes copied both ways until either side closes.
async fn connect(mut client: TcpStream, pool: Arc<Pool>, stop: CancellationToken) {
    let Some(endpoint) = pool.pick() else {
        debug!("no endpoint; closing the connection");
        return;
    };
    let dial = tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(endpoint)).await;
    let mut upstream = match dial {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            debug!(%endpoint, %error, "dial failed; closing the connection");
            return;
        }
        Err(_) => return,
    };
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
    }
}
