//! IPv4 CIDR blocks inside 127.0.0.0/8: a node's pod range, and the cluster's range the node
//! ranges are carved from.
//!
//! Kubernetes counterpart: `net.ParseCIDR` as the kubelet reads `podCIDR`, and the node IPAM
//! controller's `cidrset` (`pkg/controller/nodeipam/ipam/cidrset/cidr_set.go`), which splits
//! `--cluster-cidr` into blocks of `--node-cidr-mask-size` bits and gives each node one. minik
//! keeps the arithmetic (block `i` of the cluster range, its usable hosts) and drops the rest: no
//! IPv6, no dual stack, and a block is a pure function of the node's index, not a bitmap of
//! allocations, since minik's nodes are numbered.
//!
//! Everything here is pure; [`crate::network`] allocates pod addresses inside a [`Cidr`].

use std::fmt;
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// The prefix lengths a node's pod range may have: a /16 (65,534 pods) down to a /28 (14).
pub const NODE_PREFIXES: RangeInclusive<u8> = 16..=28;

/// A CIDR that is not an IPv4 block inside 127.0.0.0/8 of an accepted size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR {text:?}: {why}")]
pub struct CidrError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

/// An IPv4 block `network/len` with no host bits set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    network: u32,
    len: u8,
}

impl Cidr {
    /// The block of `address/len`; `None` if `len` > 32 or host bits are set.
    pub fn new(address: Ipv4Addr, len: u8) -> Option<Cidr> {
        let network = u32::from(address);
        (len <= 32 && network & !mask(len) == 0).then_some(Cidr { network, len })
    }

    /// Parses `text` as a block inside 127.0.0.0/8 whose prefix length is in `lens`.
    pub fn loopback(text: &str, lens: RangeInclusive<u8>) -> Result<Cidr, CidrError> {
        let error = |why: String| CidrError {
            text: text.to_string(),
            why,
        };
        let cidr: Cidr = text.parse()?;
        if cidr.len < 8 || cidr.first_octet() != 127 {
            return Err(error(
                "minik's pod addresses live inside 127.0.0.0/8".into(),
            ));
        }
        if !lens.contains(&cidr.len) {
            let (low, high) = (lens.start(), lens.end());
            return Err(error(format!("the prefix must be /{low} to /{high}")));
        }
        Ok(cidr)
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// The network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network)
    }

    fn first_octet(&self) -> u8 {
        self.network().octets()[0]
    }

    /// How many addresses the block holds, the network and broadcast addresses included.
    pub fn size(&self) -> u64 {
        1u64 << (32 - self.len)
    }

    /// The usable host addresses (network and broadcast left out), as the host-local IPAM
    /// plugin hands out: 254 for a /24, 510 for a /23.
    pub fn hosts(&self) -> u32 {
        self.size().saturating_sub(2) as u32
    }

    /// The `n`-th usable host (1-based: host 1 of 127.244.1.0/24 is 127.244.1.1); `None`
    /// outside `1..=hosts()`.
    pub fn host(&self, n: u32) -> Option<Ipv4Addr> {
        (1..=self.hosts())
            .contains(&n)
            .then(|| Ipv4Addr::from(self.network + n))
    }

    /// The host number of `ip` in this block (the inverse of [`Cidr::host`]).
    pub fn host_number(&self, ip: Ipv4Addr) -> Option<u32> {
        let n = u32::from(ip).checked_sub(self.network)?;
        (1..=self.hosts()).contains(&n).then_some(n)
    }

    /// How many blocks of prefix `len` this one splits into (0 if `len` is shorter than ours).
    pub fn subnets(&self, len: u8) -> u64 {
        match len.checked_sub(self.len) {
            Some(bits) if len <= 32 => 1u64 << bits,
            _ => 0,
        }
    }

    /// Block `index` of prefix `len` inside this one, as the node IPAM's cidrset numbers them
    /// (`indexToCIDRBlock`: the index shifted into the bits after our prefix).
    pub fn subnet(&self, len: u8, index: u64) -> Option<Cidr> {
        if index >= self.subnets(len) {
            return None;
        }
        let offset = (index << (32 - len)) as u32;
        Some(Cidr {
            network: self.network + offset,
            len,
        })
    }

    /// Whether the two blocks share an address.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        let len = self.len.min(other.len);
        self.network & mask(len) == other.network & mask(len)
    }
}

/// The netmask of a prefix length, as a number.
fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        len => u32::MAX << (32 - len.min(32)),
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Cidr, CidrError> {
        let error = |why: &str| CidrError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let (address, len) = text
            .split_once('/')
            .ok_or_else(|| error("expected ADDRESS/PREFIX, like 127.244.0.0/16"))?;
        let address: Ipv4Addr = address.parse().map_err(|_| error("not an IPv4 address"))?;
        let len: u8 = len
            .parse()
            .ok()
            .filter(|len| *len <= 32)
            .ok_or_else(|| error("the prefix must be a number from 0 to 32"))?;
        Cidr::new(address, len).ok_or_else(|| error("host bits are set after the prefix"))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network(), self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> Cidr {
        text.parse().unwrap()
    }

    #[test]
    fn parsing_refuses_host_bits_and_bad_prefixes() {
        assert_eq!(cidr("127.244.2.0/23").to_string(), "127.244.2.0/23");
        for bad in [
            "127.244.3.0/23",
            "127.244.0.0/33",
            "127.244.0.0",
            "x/24",
            "1.2.3/8",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_blocks_only_within_the_sizes_asked() {
        assert!(Cidr::loopback("127.244.1.0/24", NODE_PREFIXES).is_ok());
        assert!(Cidr::loopback("127.244.0.0/16", NODE_PREFIXES).is_ok());
        assert!(Cidr::loopback("127.244.1.16/28", NODE_PREFIXES).is_ok());
        for bad in [
            "10.244.1.0/24",
            "127.244.1.0/29",
            "127.0.0.0/8",
            "126.0.0.0/7",
        ] {
            assert!(Cidr::loopback(bad, NODE_PREFIXES).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts_leave_out_the_network_and_broadcast_addresses() {
        let block = cidr("127.244.2.0/23");
        assert_eq!(block.hosts(), 510);
        assert_eq!(block.host(1), Some(Ipv4Addr::new(127, 244, 2, 1)));
        assert_eq!(block.host(256), Some(Ipv4Addr::new(127, 244, 3, 0)));
        assert_eq!(block.host(510), Some(Ipv4Addr::new(127, 244, 3, 254)));
        assert_eq!(block.host(511), None);
        assert_eq!(block.host(0), None);
        assert_eq!(block.host_number(Ipv4Addr::new(127, 244, 3, 0)), Some(256));
        assert_eq!(block.host_number(Ipv4Addr::new(127, 244, 4, 0)), None);
        assert_eq!(cidr("127.244.1.0/24").hosts(), 254);
        assert_eq!(cidr("127.244.1.16/28").hosts(), 14);
    }

    #[test]
    fn blocks_are_carved_by_index_as_cidrset_does() {
        let cluster = cidr("127.244.0.0/16");
        assert_eq!(cluster.subnets(24), 256);
        assert_eq!(cluster.subnet(24, 1), Some(cidr("127.244.1.0/24")));
        assert_eq!(cluster.subnet(23, 1), Some(cidr("127.244.2.0/23")));
        assert_eq!(cluster.subnet(23, 127), Some(cidr("127.244.254.0/23")));
        assert_eq!(cluster.subnet(23, 128), None);
        assert_eq!(cluster.subnet(28, 17), Some(cidr("127.244.1.16/28")));
        assert_eq!(cluster.subnets(8), 0);
    }

    #[test]
    fn overlap_is_a_shared_prefix() {
        let cluster = cidr("127.244.0.0/16");
        assert!(cluster.overlaps(&cidr("127.244.9.0/24")));
        assert!(cidr("127.244.9.0/24").overlaps(&cluster));
        assert!(!cluster.overlaps(&cidr("127.96.0.0/16")));
    }
}
