//! Where the proxy's listeners bind: a socket bound at once, and the fallback ports on 127.0.0.1
//! tried when a Service's `clusterIP:port` cannot be bound.
//!
//! Kubernetes counterpart: the userspace proxier's `proxyPorts` allocator
//! (`pkg/proxy/userspace/port_allocator.go`, a random free port from `--proxy-port-range`). minik
//! picks the fallback from a hash of the service port's name instead, so a Service keeps its
//! fallback port across proxy restarts when that port is free. Pure apart from [`bind_now`].

use std::net::SocketAddr;
use std::ops::RangeInclusive;

use tokio::net::TcpListener;

use crate::service_port::ServicePortName;

/// How many ports of the fallback range are tried before asking the kernel for any free port.
pub const FALLBACK_TRIES: u16 = 32;

/// Binds a listening socket right away (std's `bind` is one syscall; it sets `SO_REUSEADDR` like
/// tokio's), then hands it to tokio.
pub fn bind_now(address: SocketAddr) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind(address)?;
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

/// The fallback ports to try for a service port: [`FALLBACK_TRIES`] consecutive ports of `range`
/// (wrapping), starting at a hash of the port's name, so a service keeps its fallback port across
/// proxy restarts when that port is free.
pub fn fallback_ports(
    name: &ServicePortName,
    range: &RangeInclusive<u16>,
) -> impl Iterator<Item = u16> {
    let start = *range.start() as u32;
    let size = (*range.end() as u32).saturating_sub(start) + 1;
    let offset = fnv1a(name.to_string().as_bytes()) % size;
    let tries = (FALLBACK_TRIES as u32).min(size);
    (0..tries).map(move |i| (start + (offset + i) % size) as u16)
}

/// FNV-1a, 32 bits: a tiny, stable hash (std's `DefaultHasher` may change between Rust releases).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::ObjectKey;

    fn name(service: &str, port: &str) -> ServicePortName {
        ServicePortName {
            service: ObjectKey::new("default", service),
            port: port.into(),
        }
    }

    #[test]
    fn fallback_ports_stay_in_the_range_and_are_stable() {
        let range = 30000..=32767;
        let ports: Vec<u16> = fallback_ports(&name("web", "http"), &range).collect();
        assert_eq!(ports.len(), FALLBACK_TRIES as usize);
        assert!(ports.iter().all(|port| range.contains(port)));
        let again: Vec<u16> = fallback_ports(&name("web", "http"), &range).collect();
        assert_eq!(ports, again);
        let other: Vec<u16> = fallback_ports(&name("api", "http"), &range).collect();
        assert_ne!(ports[0], other[0]);
    }

    #[test]
    fn fallback_ports_wrap_inside_a_small_range() {
        let ports: Vec<u16> = fallback_ports(&name("web", ""), &(40000..=40002)).collect();
        let mut sorted = ports.clone();
        sorted.sort();
        assert_eq!(sorted, [40000, 40001, 40002]);
    }
}
