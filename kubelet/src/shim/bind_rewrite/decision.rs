//! The pure half of bind rewriting: which `bind(2)` and `connect(2)` calls of a pod's processes
//! the supervisor changes, and to what. No I/O here; `supervisor.rs` reads the arguments from the
//! process and acts on the answer.
//!
//! Kubernetes counterpart: none in Go — upstream a pod has its own network namespace, so
//! `0.0.0.0:8080` there means "every address of the pod" (its eth0 and its own loopback). minik's
//! pods share the host's namespace, so the same meaning is approximated by rewriting addresses:
//!
//! - `bind` to `0.0.0.0` or `127.0.0.1` → the pod IP, same port (a pod's wildcard or localhost
//!   listener is its own, not the host's);
//! - `bind` to `::` or `::1` on a dual-stack IPv6 socket → `::ffff:POD_IP` (the socket then takes
//!   IPv4 connections to the pod IP, as Python's `http.server` expects); on an IPv6-only socket
//!   `::` is refused with `EADDRNOTAVAIL` (minik has no IPv6 pod address) and `::1` is left alone;
//! - `connect` to `127.0.0.1:P` → `POD_IP:P`, but only when something of the pod listens on
//!   `POD_IP:P` (so containers of a pod reach each other on localhost, as upstream), else it is
//!   left alone: a pod still reaches the host's own 127.0.0.1 services (the apiserver), which
//!   upstream it could not.
//!
//! Everything else (other addresses, other families, unparsable arguments) is left to the kernel.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use nix::errno::Errno;

/// `AF_INET` and `AF_INET6` as they appear in `sa_family`.
const AF_INET: u16 = libc::AF_INET as u16;
const AF_INET6: u16 = libc::AF_INET6 as u16;

/// `sizeof(struct sockaddr_in)`, and the shortest `sockaddr_in6` the kernel takes (RFC 2133's,
/// without `sin6_scope_id`): a shorter argument is the kernel's to refuse.
const SOCKADDR_IN_LEN: usize = 16;
const SOCKADDR_IN6_MIN_LEN: usize = 24;

/// What the supervisor does with one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Let the kernel run the call as the process made it.
    Continue,
    /// Make the call on the process's socket with this address instead, and return its result.
    Redirect(SocketAddr),
    /// Fail the call with this error.
    Refuse(Errno),
}

/// Parses a `struct sockaddr` as read from the process (`sockaddr_in` or `sockaddr_in6`, in the
/// machine's layout: family in native order, port and address in network order). `None` for any
/// other family or a buffer too short for its family (the kernel will judge those itself).
pub fn parse_sockaddr(bytes: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]);
    let port = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
    match family {
        AF_INET if bytes.len() >= SOCKADDR_IN_LEN => {
            let ip: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::V4(SocketAddrV4::new(ip.into(), port)))
        }
        AF_INET6 if bytes.len() >= SOCKADDR_IN6_MIN_LEN => {
            let flowinfo = u32::from_be_bytes(bytes.get(4..8)?.try_into().ok()?);
            let ip: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            // `sin6_scope_id` is missing from the old 24-byte RFC 2133 layout: it is 0 then.
            let scope = bytes
                .get(24..28)
                .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip.into(),
                port,
                flowinfo,
                scope,
            )))
        }
        _ => None,
    }
}

/// The decision for `bind(addr)`. `v6only` is the socket's `IPV6_V6ONLY` (ignored for IPv4).
pub fn rewrite_bind(addr: SocketAddr, pod_ip: Ipv4Addr, v6only: bool) -> Action {
    match addr {
        SocketAddr::V4(v4) if is_wildcard_or_localhost(*v4.ip()) => {
            Action::Redirect(SocketAddr::new(pod_ip.into(), v4.port()))
        }
        SocketAddr::V4(_) => Action::Continue,
        SocketAddr::V6(v6) => {
            let ip = *v6.ip();
            let any_or_local = ip.is_unspecified() || ip == Ipv6Addr::LOCALHOST;
            let mapped_any_or_local = ip.to_ipv4_mapped().is_some_and(is_wildcard_or_localhost);
            if !any_or_local && !mapped_any_or_local {
                return Action::Continue;
            }
            if v6only {
                // An IPv6-only socket cannot take the IPv4 pod address (see the module doc).
                return if ip.is_unspecified() {
                    Action::Refuse(Errno::EADDRNOTAVAIL)
                } else {
                    Action::Continue
                };
            }
            Action::Redirect(SocketAddr::V6(SocketAddrV6::new(
                pod_ip.to_ipv6_mapped(),
                v6.port(),
                0,
                0,
            )))
        }
    }
}

/// The address a `connect(addr)` would go to inside the pod, if it is the pod's own localhost:
/// `127.0.0.1:P` → `POD_IP:P` (and the same in v4-mapped IPv6 form). The caller redirects only if
/// the pod listens there.
pub fn localhost_target(addr: SocketAddr, pod_ip: Ipv4Addr) -> Option<SocketAddr> {
    match addr {
        SocketAddr::V4(v4) if *v4.ip() == Ipv4Addr::LOCALHOST => {
            Some(SocketAddr::new(pod_ip.into(), v4.port()))
        }
        SocketAddr::V6(v6) if v6.ip().to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST) => Some(
            SocketAddr::V6(SocketAddrV6::new(pod_ip.to_ipv6_mapped(), v6.port(), 0, 0)),
        ),
        _ => None,
    }
}

fn is_wildcard_or_localhost(ip: Ipv4Addr) -> bool {
    ip.is_unspecified() || ip == Ipv4Addr::LOCALHOST
}

#[cfg(test)]
#[path = "decision_tests.rs"]
mod tests;
