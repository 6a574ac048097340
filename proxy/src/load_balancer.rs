//! Round robin over a service port's ready endpoints, with optional `ClientIP` session affinity.
//!
//! Kubernetes counterpart: `pkg/proxy/userspace/roundrobin.go` (kube-proxy's userspace mode,
//! last shipped in v1.25). Its rules, which minik keeps:
//!
//! - the state of a service port is `{endpoints, index, affinity}`;
//! - when the endpoint set changes, the list is **shuffled** and `index` goes back to 0, so that many
//!   proxies do not all start on the same backend;
//! - `next` returns `endpoints[index]` and advances `index`; an empty list is an error
//!   (`ErrMissingEndpoints` upstream, `None` here);
//! - with `sessionAffinity: ClientIP` a client IP keeps its endpoint while it was used less than the
//!   timeout ago (10800 s by default); entries pointing at removed endpoints are purged; after a
//!   failed dial the caller asks again with `reset_affinity`, which ignores the sticky entry.
//!
//! The decision itself ([`RoundRobin`]) is a plain struct with no I/O and no clock of its own (the
//! caller passes `now`), so it is unit tested below. [`LoadBalancer`] wraps it for the data path.
//!
//! Read next: `tcp.rs`, which asks the balancer for an endpoint on every accepted connection.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::Rng;

/// Kubernetes' default for `sessionAffinityConfig.clientIP.timeoutSeconds`
/// (`DefaultClientIPServiceAffinitySeconds`, three hours).
pub const DEFAULT_AFFINITY_TIMEOUT: Duration = Duration::from_secs(10_800);

/// A Service's `spec.sessionAffinity`, with its timeout when it is `ClientIP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Affinity {
    /// `None`: every connection goes to the next endpoint in the rotation.
    None,
    /// `ClientIP`: connections from one client IP stick to one endpoint for `timeout` after last use.
    ClientIp {
        /// How long an unused sticky entry lives.
        timeout: Duration,
    },
}

/// One sticky entry: the endpoint a client IP was sent to, and when.
#[derive(Clone, Copy, Debug)]
struct Sticky {
    endpoint: SocketAddr,
    last_used: Instant,
}

/// The round-robin state of one service port (upstream `balancerState`).
#[derive(Debug)]
pub struct RoundRobin {
    endpoints: Vec<SocketAddr>,
    index: usize,
    affinity: Affinity,
    sticky: HashMap<IpAddr, Sticky>,
}

impl RoundRobin {
    /// An empty balancer: `next` returns `None` until endpoints arrive.
    pub fn new(affinity: Affinity) -> Self {
        RoundRobin {
            endpoints: Vec::new(),
            index: 0,
            affinity,
            sticky: HashMap::new(),
        }
    }

    /// The endpoints in their current (shuffled) order.
    pub fn endpoints(&self) -> &[SocketAddr] {
        &self.endpoints
    }

    /// Changes the affinity policy (the Service was edited); sticky entries are dropped.
    pub fn set_affinity(&mut self, affinity: Affinity) {
        if self.affinity != affinity {
            self.affinity = affinity;
            self.sticky.clear();
        }
    }

    /// Replaces the endpoint set. Returns `false`, and keeps order and index, when the set did not
    /// change (a relist delivers the same Endpoints again); otherwise shuffles the new list, resets
    /// the index and purges sticky entries that point at removed endpoints.
    pub fn update(&mut self, new_endpoints: &[SocketAddr], rng: &mut impl Rng) -> bool {
        if same_set(&self.endpoints, new_endpoints) {
            return false;
        }
        let mut endpoints = new_endpoints.to_vec();
        endpoints.sort();
        endpoints.dedup();
        endpoints.shuffle(rng);
        self.sticky
            .retain(|_, sticky| endpoints.contains(&sticky.endpoint));
        self.endpoints = endpoints;
        self.index = 0;
        true
    }

    /// Picks the endpoint for a new connection from `client` (upstream `NextEndpoint`).
    ///
    /// `reset_affinity` is set when the previous pick could not be dialed: the sticky entry is then
    /// ignored and replaced by the next endpoint in the rotation.
    pub fn next(
        &mut self,
        client: Option<IpAddr>,
        reset_affinity: bool,
        now: Instant,
    ) -> Option<SocketAddr> {
        if self.endpoints.is_empty() {
            return None;
        }
        let sticky_client = match self.affinity {
            Affinity::ClientIp { timeout } => client.map(|ip| (ip, timeout)),
            Affinity::None => None,
        };
        if let (Some((ip, timeout)), false) = (sticky_client, reset_affinity) {
            if let Some(sticky) = self.sticky.get_mut(&ip) {
                if now.saturating_duration_since(sticky.last_used) < timeout {
                    sticky.last_used = now;
                    return Some(sticky.endpoint);
                }
            }
        }
        let endpoint = self.endpoints[self.index % self.endpoints.len()];
        self.index = (self.index + 1) % self.endpoints.len();
        if let Some((ip, _)) = sticky_client {
            self.sticky.insert(
                ip,
                Sticky {
                    endpoint,
                    last_used: now,
                },
            );
        }
        Some(endpoint)
    }
}

/// Whether two endpoint lists hold the same addresses, ignoring order and duplicates.
fn same_set(current: &[SocketAddr], new: &[SocketAddr]) -> bool {
    let mut a = current.to_vec();
    let mut b = new.to_vec();
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    a == b
}

/// The balancer of one service port as the data path uses it: a [`RoundRobin`] behind a mutex.
///
/// A `std::sync::Mutex`, not tokio's: the lock is held for a few hundred nanoseconds, once per
/// accepted connection (never per byte), and never across an `.await` (the same reasoning as
/// mini-redis's `db.rs`).
#[derive(Debug)]
pub struct LoadBalancer {
    state: Mutex<RoundRobin>,
}

impl LoadBalancer {
    /// A balancer with no endpoints yet.
    pub fn new(affinity: Affinity) -> Self {
        LoadBalancer {
            state: Mutex::new(RoundRobin::new(affinity)),
        }
    }

    /// See [`RoundRobin::next`]; `now` is read here.
    pub fn next(&self, client: Option<IpAddr>, reset_affinity: bool) -> Option<SocketAddr> {
        self.lock().next(client, reset_affinity, Instant::now())
    }

    /// See [`RoundRobin::update`]; shuffles with the thread's random generator.
    pub fn update(&self, endpoints: &[SocketAddr]) -> bool {
        self.lock().update(endpoints, &mut rand::rng())
    }

    /// See [`RoundRobin::set_affinity`].
    pub fn set_affinity(&self, affinity: Affinity) {
        self.lock().set_affinity(affinity);
    }

    /// How many endpoints the balancer currently has (the most dial attempts worth making).
    pub fn len(&self) -> usize {
        self.lock().endpoints.len()
    }

    /// Whether there is no endpoint at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RoundRobin> {
        // A panic while holding this lock could only come from a bug in `RoundRobin`; the state
        // is still consistent (every method leaves it valid), so a poisoned lock is taken over.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|text| text.parse().expect("test address"))
            .collect()
    }

    fn backends() -> Vec<SocketAddr> {
        addrs(&["127.244.1.1:80", "127.244.1.2:80", "127.244.1.3:80"])
    }

    #[test]
    fn empty_balancer_has_no_endpoint() {
        let mut rr = RoundRobin::new(Affinity::None);
        assert_eq!(rr.next(None, false, Instant::now()), None);
    }

    #[test]
    fn round_robin_visits_every_endpoint_once_per_cycle() {
        let mut rr = RoundRobin::new(Affinity::None);
        rr.update(&backends(), &mut StdRng::seed_from_u64(1));
        let now = Instant::now();
        let mut first_cycle: Vec<_> = (0..3).map(|_| rr.next(None, false, now).unwrap()).collect();
        let second_cycle: Vec<_> = (0..3).map(|_| rr.next(None, false, now).unwrap()).collect();
        assert_eq!(
            first_cycle, second_cycle,
            "the rotation repeats in the same order"
        );
        first_cycle.sort();
        assert_eq!(first_cycle, backends());
    }

    #[test]
    fn update_shuffles_and_resets_the_index() {
        let many: Vec<SocketAddr> = (1..=20)
            .map(|i| SocketAddr::from(([127, 244, 1, i], 80)))
            .collect();
        let mut rr = RoundRobin::new(Affinity::None);
        assert!(rr.update(&many, &mut StdRng::seed_from_u64(7)));
        assert_ne!(
            rr.endpoints(),
            &many[..],
            "20 addresses stay in order only by 1/20! chance"
        );
        rr.next(None, false, Instant::now());
        let mut fewer = many.clone();
        fewer.pop();
        assert!(rr.update(&fewer, &mut StdRng::seed_from_u64(8)));
        assert_eq!(
            rr.next(None, false, Instant::now()),
            Some(rr.endpoints()[0])
        );
    }

    #[test]
    fn update_with_the_same_set_keeps_the_rotation() {
        let mut rr = RoundRobin::new(Affinity::None);
        rr.update(&backends(), &mut StdRng::seed_from_u64(1));
        let order = rr.endpoints().to_vec();
        let now = Instant::now();
        let first = rr.next(None, false, now);
        let mut reversed = backends();
        reversed.reverse();
        assert!(!rr.update(&reversed, &mut StdRng::seed_from_u64(99)));
        assert_eq!(rr.endpoints(), &order[..]);
        assert_ne!(rr.next(None, false, now), first, "the index was not reset");
    }

    #[test]
    fn client_ip_affinity_sticks_until_the_timeout() {
        let timeout = Duration::from_secs(10);
        let mut rr = RoundRobin::new(Affinity::ClientIp { timeout });
        rr.update(&backends(), &mut StdRng::seed_from_u64(3));
        let client: IpAddr = "127.0.0.5".parse().unwrap();
        let start = Instant::now();
        let first = rr.next(Some(client), false, start).unwrap();
        for second in 1..5 {
            let now = start + Duration::from_secs(second);
            assert_eq!(rr.next(Some(client), false, now), Some(first));
        }
        // Another client takes the next endpoint in the rotation.
        let other = rr
            .next(Some("127.0.0.6".parse().unwrap()), false, start)
            .unwrap();
        assert_ne!(other, first);
        // Idle longer than the timeout: the entry has expired and the rotation moves on.
        let later = start + Duration::from_secs(4) + timeout;
        assert_ne!(rr.next(Some(client), false, later), Some(first));
    }

    #[test]
    fn reset_affinity_moves_a_sticky_client_to_another_endpoint() {
        let mut rr = RoundRobin::new(Affinity::ClientIp {
            timeout: DEFAULT_AFFINITY_TIMEOUT,
        });
        rr.update(&backends(), &mut StdRng::seed_from_u64(3));
        let client: IpAddr = "127.0.0.5".parse().unwrap();
        let now = Instant::now();
        let first = rr.next(Some(client), false, now).unwrap();
        let retry = rr.next(Some(client), true, now).unwrap();
        assert_ne!(retry, first);
        assert_eq!(
            rr.next(Some(client), false, now),
            Some(retry),
            "the new pick is sticky"
        );
    }

    #[test]
    fn removed_endpoints_lose_their_sticky_clients() {
        let mut rr = RoundRobin::new(Affinity::ClientIp {
            timeout: DEFAULT_AFFINITY_TIMEOUT,
        });
        rr.update(&backends(), &mut StdRng::seed_from_u64(3));
        let client: IpAddr = "127.0.0.5".parse().unwrap();
        let now = Instant::now();
        let first = rr.next(Some(client), false, now).unwrap();
        let remaining: Vec<_> = backends().into_iter().filter(|a| *a != first).collect();
        rr.update(&remaining, &mut StdRng::seed_from_u64(4));
        let next = rr.next(Some(client), false, now).unwrap();
        assert!(remaining.contains(&next));
    }

    #[test]
    fn without_affinity_the_client_ip_is_ignored() {
        let mut rr = RoundRobin::new(Affinity::None);
        rr.update(&backends(), &mut StdRng::seed_from_u64(3));
        let client: IpAddr = "127.0.0.5".parse().unwrap();
        let now = Instant::now();
        let a = rr.next(Some(client), false, now);
        let b = rr.next(Some(client), false, now);
        assert_ne!(a, b);
    }
}
