//! Pod IP allocation: minik's fake CNI gives each pod its own loopback address.
//!
//! Kubernetes counterpart: the CNI plugin the runtime calls when it creates a pod sandbox, and
//! in particular the `host-local` IPAM plugin (`containernetworking/plugins:plugins/ipam/host-local`),
//! which hands out addresses from the node's `podCIDR` and records each allocation in a file per
//! IP under `/var/lib/cni/networks/`, remembering the last one given so addresses are not reused
//! at once.
//!
//! minik simplifies: there are no network namespaces or veth pairs. Node `node-N` owns a block of
//! 127.0.0.0/8, `127.244.N.0/24` by default (a /16 to a /28: `minik up --node-cidr-mask-size`,
//! carved by `cluster/src/nodeipam.rs`); Linux routes the whole of 127.0.0.0/8 to the loopback device, so a process can
//! bind `127.244.N.7:8080` while another binds `127.244.N.8:8080`. (macOS only has 127.0.0.1 by
//! default: each address needs `sudo ifconfig lo0 alias 127.244.N.M`.) The allocations live in one
//! JSON file rewritten atomically (write, then rename) on every change, so a kubelet restarted after
//! `kill -9` never hands out an address that a running pod still holds.
//!
//! The address is picked at random among the free ones (as upstream's ClusterIP allocator does),
//! so two clusters on one machine rarely pick the same address, and the one released last is not
//! handed out again at once while another is free.
//!
//! The decision (which address next) is the pure [`Allocations`]; [`IpAllocator`] adds the file.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use tracing::info;

use crate::cidr::{Cidr, CidrError, NODE_PREFIXES};

/// Errors of the pod network.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CIDR is not a /16 to /28 inside 127.0.0.0/8.
    #[error("pod CIDR: {0} (minik needs a /16 to /28 inside 127.0.0.0/8, like 127.244.1.0/24)")]
    InvalidCidr(CidrError),
    /// Every address of the range is taken.
    #[error("no free pod IP left in {0}")]
    Exhausted(String),
    /// The state file belongs to another range (the node's podCIDR changed).
    #[error("state file is for pod CIDR {found}, not {expected}")]
    CidrMismatch { found: String, expected: String },
    /// Reading or writing the state file failed.
    #[error("pod IP state {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The state file is not valid JSON.
    #[error("pod IP state {path} is corrupt: {source}")]
    Corrupt {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Result with the network [`Error`] as default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The pure allocation table: which pod holds which address of the node's range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Allocations {
    /// The range, e.g. `127.244.1.0/24`.
    pub cidr: String,
    /// The range parsed (not saved: read again from `cidr`).
    #[serde(skip, default = "placeholder_range")]
    range: Cidr,
    /// The address released last: not handed out again while another one is free.
    #[serde(default)]
    last_released_ip: Option<Ipv4Addr>,
    /// pod uid → address.
    pub by_pod: BTreeMap<String, Ipv4Addr>,
}

/// What a deserialized table holds until [`IpAllocator::open`] sets its parsed range.
fn placeholder_range() -> Cidr {
    Cidr::new(Ipv4Addr::new(127, 0, 0, 0), 32).expect("a /32 has no host bits")
}

impl Allocations {
    /// An empty table for `cidr`: a /16 to a /28 inside 127.0.0.0/8 (`cidr.rs`).
    pub fn new(cidr: &str) -> Result<Self> {
        let range = Cidr::loopback(cidr, NODE_PREFIXES).map_err(Error::InvalidCidr)?;
        Ok(Allocations {
            cidr: range.to_string(),
            range,
            last_released_ip: None,
            by_pod: BTreeMap::new(),
        })
    }

    /// The address of `pod_uid`: the one it already holds, else a random free host of the
    /// range (network and broadcast addresses excluded, as host-local's range does).
    pub fn allocate(&mut self, pod_uid: &str, rng: &mut impl rand::Rng) -> Result<Ipv4Addr> {
        if let Some(ip) = self.by_pod.get(pod_uid) {
            return Ok(*ip);
        }
        let taken: std::collections::HashSet<u32> = self
            .by_pod
            .values()
            .filter_map(|ip| self.range.host_number(*ip))
            .collect();
        let last = self
            .last_released_ip
            .and_then(|ip| self.range.host_number(ip));
        let free: Vec<u32> = (1..=self.range.hosts())
            .filter(|host| !taken.contains(host))
            .collect();
        let fresh: Vec<u32> = free
            .iter()
            .copied()
            .filter(|host| Some(*host) != last)
            .collect();
        let candidates = if fresh.is_empty() { free } else { fresh };
        if candidates.is_empty() {
            return Err(Error::Exhausted(self.cidr.clone()));
        }
        let host = candidates[rng.random_range(0..candidates.len())];
        let ip = self.range.host(host).expect("a free host is in the range");
        self.by_pod.insert(pod_uid.to_string(), ip);
        Ok(ip)
    }

    /// Frees the address of `pod_uid`; returns it if there was one.
    pub fn release(&mut self, pod_uid: &str) -> Option<Ipv4Addr> {
        let ip = self.by_pod.remove(pod_uid)?;
        self.last_released_ip = Some(ip);
        Some(ip)
    }
}

/// The node's allocator: [`Allocations`] persisted in a state file. Share it behind an `Arc`.
pub struct IpAllocator {
    path: PathBuf,
    table: Mutex<Allocations>,
}

impl IpAllocator {
    /// Opens the state file (created on first use) for the node's `cidr`.
    pub fn open(state_file: &Path, cidr: &str) -> Result<Self> {
        let io = |source| Error::Io {
            path: state_file.to_path_buf(),
            source,
        };
        let fresh = Allocations::new(cidr)?;
        let table = match std::fs::read(state_file) {
            Ok(bytes) => {
                let table: Allocations =
                    serde_json::from_slice(&bytes).map_err(|source| Error::Corrupt {
                        path: state_file.to_path_buf(),
                        source,
                    })?;
                if table.cidr != fresh.cidr {
                    return Err(Error::CidrMismatch {
                        found: table.cidr,
                        expected: fresh.cidr,
                    });
                }
                Allocations {
                    by_pod: table.by_pod,
                    last_released_ip: table.last_released_ip,
                    ..fresh
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = state_file.parent() {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                fresh
            }
            Err(err) => return Err(io(err)),
        };
        Ok(IpAllocator {
            path: state_file.to_path_buf(),
            table: Mutex::new(table),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Allocations> {
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The pod's IP, allocated on first call and saved before it is returned (idempotent per uid).
    pub fn allocate(&self, pod_uid: &str) -> Result<Ipv4Addr> {
        let mut table = self.lock();
        if let Some(ip) = table.by_pod.get(pod_uid) {
            return Ok(*ip);
        }
        let mut next = table.clone();
        let ip = next.allocate(pod_uid, &mut rand::rng())?;
        self.save(&next)?;
        *table = next;
        info!(pod_uid, ip = %ip, "allocated pod ip");
        Ok(ip)
    }

    /// Frees the pod's IP (no-op if it has none).
    pub fn release(&self, pod_uid: &str) -> Result<()> {
        let mut table = self.lock();
        let mut next = table.clone();
        if let Some(ip) = next.release(pod_uid) {
            self.save(&next)?;
            *table = next;
            info!(pod_uid, ip = %ip, "released pod ip");
        }
        Ok(())
    }

    /// The pod's IP if it has one.
    pub fn get(&self, pod_uid: &str) -> Option<Ipv4Addr> {
        self.lock().by_pod.get(pod_uid).copied()
    }

    /// Every allocation (pod uid → IP), for the kubelet's cleanup of pods that went away while
    /// it was down.
    pub fn allocations(&self) -> BTreeMap<String, Ipv4Addr> {
        self.lock().by_pod.clone()
    }

    fn save(&self, table: &Allocations) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(table).map_err(|source| Error::Corrupt {
            path: self.path.clone(),
            source,
        })?;
        crate::shim::write_atomic(&self.path, &bytes).map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_must_be_a_loopback_slash_16_to_28() {
        for good in [
            "127.244.3.0/24",
            "127.244.0.0/16",
            "127.244.2.0/23",
            "127.244.3.16/28",
        ] {
            assert!(Allocations::new(good).is_ok(), "{good}");
        }
        for bad in [
            "203.0.113.0/24",
            "127.244.0.0/15",
            "127.244.3.0/29",
            "127.244.3.5/24",
            "127.244.3.0",
            "nonsense/24",
        ] {
            assert!(
                matches!(Allocations::new(bad), Err(Error::InvalidCidr(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_slash_23_holds_510_pods_across_its_two_third_octets() {
        let mut table = Allocations::new("127.244.2.0/23").unwrap();
        let mut rng = seeded(3);
        for i in 0..510 {
            table.allocate(&format!("pod-{i}"), &mut rng).unwrap();
        }
        let distinct: std::collections::HashSet<_> = table.by_pod.values().copied().collect();
        assert_eq!(distinct.len(), 510);
        assert!(distinct.contains(&Ipv4Addr::new(127, 244, 2, 255)));
        assert!(distinct.contains(&Ipv4Addr::new(127, 244, 3, 0)));
        assert!(
            !distinct.contains(&Ipv4Addr::new(127, 244, 2, 0)),
            "network"
        );
        assert!(
            !distinct.contains(&Ipv4Addr::new(127, 244, 3, 255)),
            "broadcast"
        );
        assert!(matches!(
            table.allocate("one-too-many", &mut rng),
            Err(Error::Exhausted(_))
        ));
    }

    fn seeded(seed: u64) -> rand::rngs::StdRng {
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed)
    }

    #[test]
    fn allocation_is_idempotent_unique_and_runs_out_after_254() {
        let mut table = Allocations::new("127.244.1.0/24").unwrap();
        let mut rng = seeded(7);
        let a = table.allocate("a", &mut rng).unwrap();
        assert_eq!(table.allocate("a", &mut rng).unwrap(), a);
        for i in 0..253 {
            table.allocate(&format!("pod-{i}"), &mut rng).unwrap();
        }
        let distinct: std::collections::HashSet<_> = table.by_pod.values().collect();
        assert_eq!(distinct.len(), 254);
        assert!(distinct
            .iter()
            .all(|ip| ip.octets()[..3] == [127, 244, 1] && (1..=254).contains(&ip.octets()[3])));
        assert!(matches!(
            table.allocate("one-too-many", &mut rng),
            Err(Error::Exhausted(_))
        ));
        let freed = table.release("pod-9").unwrap();
        assert_eq!(
            table.allocate("late", &mut rng).unwrap(),
            freed,
            "the only free address is reused"
        );
    }

    #[test]
    fn addresses_are_picked_at_random() {
        let firsts: std::collections::HashSet<Ipv4Addr> = (0..20)
            .map(|seed| {
                Allocations::new("127.244.1.0/24")
                    .unwrap()
                    .allocate("a", &mut seeded(seed))
                    .unwrap()
            })
            .collect();
        assert!(firsts.len() > 5, "{firsts:?}");
    }

    #[test]
    fn a_released_address_is_not_reused_at_once() {
        for seed in 0..50 {
            let mut rng = seeded(seed);
            let mut table = Allocations::new("127.244.1.0/24").unwrap();
            for i in 0..252 {
                table.allocate(&format!("pod-{i}"), &mut rng).unwrap();
            }
            let released = table.release("pod-0").unwrap();
            assert_ne!(
                table.allocate("next", &mut rng).unwrap(),
                released,
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_reopened_allocator_keeps_live_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net/ips.json");
        let first = IpAllocator::open(&path, "127.244.2.0/24").unwrap();
        let a = first.allocate("a").unwrap();
        let b = first.allocate("b").unwrap();
        first.release("a").unwrap();
        drop(first); // as if the kubelet had been killed here

        let second = IpAllocator::open(&path, "127.244.2.0/24").unwrap();
        assert_eq!(second.get("b"), Some(b));
        assert_eq!(second.allocate("b").unwrap(), b);
        let c = second.allocate("c").unwrap();
        assert_ne!(c, b);
        assert_ne!(c, a, "the address released last is not handed out first");
        assert!(matches!(
            IpAllocator::open(&path, "127.244.9.0/24"),
            Err(Error::CidrMismatch { .. })
        ));
    }
}
