//! Unit tests of the bind/connect rewriting decisions (`decision.rs`): pure, no sockets.

use super::*;

const POD: Ipv4Addr = Ipv4Addr::new(127, 244, 1, 7);

fn sockaddr_in(ip: [u8; 4], port: u16) -> Vec<u8> {
    let mut b = (libc::AF_INET as u16).to_ne_bytes().to_vec();
    b.extend(port.to_be_bytes());
    b.extend(ip);
    b.extend([0u8; 8]);
    b
}

fn sockaddr_in6(ip: Ipv6Addr, port: u16, scope: u32) -> Vec<u8> {
    let mut b = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
    b.extend(port.to_be_bytes());
    b.extend(0u32.to_be_bytes());
    b.extend(ip.octets());
    b.extend(scope.to_ne_bytes());
    b
}

fn v4(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn parses_inet_and_inet6_and_ignores_the_rest() {
    assert_eq!(
        parse_sockaddr(&sockaddr_in([0, 0, 0, 0], 8080)),
        Some(v4("0.0.0.0:8080"))
    );
    let six = parse_sockaddr(&sockaddr_in6(Ipv6Addr::UNSPECIFIED, 80, 3)).unwrap();
    assert_eq!(six, "[::%3]:80".parse().unwrap());
    // The 24-byte RFC 2133 layout has no scope id.
    let short = sockaddr_in6(Ipv6Addr::LOCALHOST, 80, 9);
    assert_eq!(
        parse_sockaddr(&short[..24]),
        Some("[::1]:80".parse().unwrap())
    );
    let unix = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
    assert_eq!(parse_sockaddr(&unix), None);
    assert_eq!(parse_sockaddr(&sockaddr_in([1, 2, 3, 4], 1)[..6]), None);
    assert_eq!(parse_sockaddr(&[]), None);
}

#[test]
fn ipv4_wildcard_and_localhost_binds_go_to_the_pod_ip() {
    for addr in ["0.0.0.0:8080", "127.0.0.1:8080"] {
        assert_eq!(
            rewrite_bind(v4(addr), POD, false),
            Action::Redirect(v4("127.244.1.7:8080")),
            "{addr}"
        );
    }
    // Port 0 (the kernel picks one) keeps the pod's address too.
    assert_eq!(
        rewrite_bind(v4("0.0.0.0:0"), POD, false),
        Action::Redirect(v4("127.244.1.7:0"))
    );
}

#[test]
fn explicit_ipv4_addresses_are_left_alone() {
    for addr in ["127.244.1.7:8080", "127.0.0.2:80", "127.244.1.9:8080"] {
        assert_eq!(
            rewrite_bind(v4(addr), POD, false),
            Action::Continue,
            "{addr}"
        );
    }
}

#[test]
fn dual_stack_ipv6_wildcards_go_to_the_mapped_pod_ip() {
    let mapped: SocketAddr = "[::ffff:127.244.1.7]:8080".parse().unwrap();
    for addr in [
        "[::]:8080",
        "[::1]:8080",
        "[::ffff:0.0.0.0]:8080",
        "[::ffff:127.0.0.1]:8080",
    ] {
        assert_eq!(
            rewrite_bind(addr.parse().unwrap(), POD, false),
            Action::Redirect(mapped),
            "{addr}"
        );
    }
}

#[test]
fn ipv6_only_wildcards_are_refused_and_other_ipv6_addresses_left_alone() {
    assert_eq!(
        rewrite_bind("[::]:8080".parse().unwrap(), POD, true),
        Action::Refuse(Errno::EADDRNOTAVAIL)
    );
    assert_eq!(
        rewrite_bind("[::1]:8080".parse().unwrap(), POD, true),
        Action::Continue
    );
    assert_eq!(
        rewrite_bind("[fe80::1%2]:8080".parse().unwrap(), POD, false),
        Action::Continue
    );
}

#[test]
fn only_localhost_connects_have_a_pod_target() {
    assert_eq!(
        localhost_target(v4("127.0.0.1:8080"), POD),
        Some(v4("127.244.1.7:8080"))
    );
    assert_eq!(
        localhost_target("[::ffff:127.0.0.1]:53".parse().unwrap(), POD),
        Some("[::ffff:127.244.1.7]:53".parse().unwrap())
    );
    for other in ["127.96.0.10:80", "127.244.1.7:8080", "0.0.0.0:80"] {
        assert_eq!(localhost_target(v4(other), POD), None, "{other}");
    }
    assert_eq!(localhost_target("[::1]:80".parse().unwrap(), POD), None);
}
