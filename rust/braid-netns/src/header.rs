//! rtnetlink family structures (`rtmsg`, `ifinfomsg`, `ifaddrmsg`), their attribute numbers,
//! and address bytes. Pure encoding and decoding.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::NetnsError;

pub const RTM_GETLINK: u16 = 18;
pub const RTM_NEWLINK: u16 = 16;
pub const RTM_NEWADDR: u16 = 20;
pub const RTM_GETADDR: u16 = 22;
pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_DELROUTE: u16 = 25;
pub const RTM_GETROUTE: u16 = 26;
pub const RTM_NEWRULE: u16 = 32;
pub const RTM_DELRULE: u16 = 33;
pub const RTM_GETRULE: u16 = 34;

pub const AF_INET: u8 = 2;
pub const AF_INET6: u8 = 10;

pub const RTA_DST: u16 = 1;
pub const RTA_OIF: u16 = 4;
pub const RTA_GATEWAY: u16 = 5;
pub const RTA_PRIORITY: u16 = 6;
pub const RTA_PREFSRC: u16 = 7;
pub const RTA_TABLE: u16 = 15;
pub const RTA_VIA: u16 = 18;

pub const IFLA_ADDRESS: u16 = 1;
pub const IFLA_IFNAME: u16 = 3;
pub const IFLA_MTU: u16 = 4;

pub const IFA_ADDRESS: u16 = 1;
pub const IFA_LOCAL: u16 = 2;

pub const RT_TABLE_MAIN: u32 = 254;
pub const RTPROT_BOOT: u8 = 3;
pub const RT_SCOPE_UNIVERSE: u8 = 0;
pub const RT_SCOPE_LINK: u8 = 253;
pub const RTN_UNICAST: u8 = 1;

/// `struct rtmsg`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteHeader {
    pub family: u8,
    pub dst_len: u8,
    pub src_len: u8,
    pub tos: u8,
    pub table: u8,
    pub protocol: u8,
    pub scope: u8,
    pub kind: u8,
    pub flags: u32,
}

impl RouteHeader {
    pub const LEN: usize = 12;

    pub fn encode(&self) -> [u8; Self::LEN] {
        let f = self.flags.to_ne_bytes();
        [
            self.family,
            self.dst_len,
            self.src_len,
            self.tos,
            self.table,
            self.protocol,
            self.scope,
            self.kind,
            f[0],
            f[1],
            f[2],
            f[3],
        ]
    }

    pub fn decode(p: &[u8]) -> Result<Self, NetnsError> {
        let b = p.get(..Self::LEN).ok_or_else(|| short("rtmsg", p.len()))?;
        Ok(Self {
            family: b[0],
            dst_len: b[1],
            src_len: b[2],
            tos: b[3],
            table: b[4],
            protocol: b[5],
            scope: b[6],
            kind: b[7],
            flags: u32::from_ne_bytes([b[8], b[9], b[10], b[11]]),
        })
    }
}

/// `struct ifinfomsg` (only what braid reads or sends).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkHeader {
    pub family: u8,
    pub index: i32,
}

impl LinkHeader {
    pub const LEN: usize = 16;

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0; Self::LEN];
        out[0] = self.family;
        out[4..8].copy_from_slice(&self.index.to_ne_bytes());
        out
    }

    pub fn decode(p: &[u8]) -> Result<Self, NetnsError> {
        let b = p
            .get(..Self::LEN)
            .ok_or_else(|| short("ifinfomsg", p.len()))?;
        Ok(Self {
            family: b[0],
            index: i32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

/// `struct ifaddrmsg`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddrHeader {
    pub family: u8,
    pub prefix_len: u8,
    pub index: u32,
}

impl AddrHeader {
    pub const LEN: usize = 8;

    pub fn encode(&self) -> [u8; Self::LEN] {
        let i = self.index.to_ne_bytes();
        [self.family, self.prefix_len, 0, 0, i[0], i[1], i[2], i[3]]
    }

    pub fn decode(p: &[u8]) -> Result<Self, NetnsError> {
        let b = p
            .get(..Self::LEN)
            .ok_or_else(|| short("ifaddrmsg", p.len()))?;
        Ok(Self {
            family: b[0],
            prefix_len: b[1],
            index: u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

fn short(what: &str, len: usize) -> NetnsError {
    NetnsError::Malformed(format!("{what} of {len} bytes"))
}

/// The address family number (`AF_INET`/`AF_INET6`) of an address.
pub fn family_of(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        AF_INET
    } else {
        AF_INET6
    }
}

/// An address from its network-order bytes, when their count fits `family`.
pub fn ip_from_bytes(family: u8, b: &[u8]) -> Option<IpAddr> {
    match family {
        AF_INET => <[u8; 4]>::try_from(b)
            .ok()
            .map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        AF_INET6 => <[u8; 16]>::try_from(b)
            .ok()
            .map(|a| IpAddr::V6(Ipv6Addr::from(a))),
        _ => None,
    }
}

/// The network-order bytes of an address.
pub fn ip_bytes(addr: IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// An `RTA_VIA` value (`struct rtvia`: a `u16` family, then the address).
pub fn via_address(b: &[u8]) -> Option<IpAddr> {
    let family = u16::from_ne_bytes([*b.first()?, *b.get(1)?]);
    ip_from_bytes(u8::try_from(family).ok()?, b.get(2..)?)
}

/// True when `addr` lies inside `prefix/len` (both of one family).
pub fn prefix_contains(prefix: IpAddr, len: u8, addr: IpAddr) -> bool {
    let (p, a) = (ip_bytes(prefix), ip_bytes(addr));
    if p.len() != a.len() || usize::from(len) > p.len() * 8 {
        return false;
    }
    let (whole, rest) = (usize::from(len / 8), len % 8);
    if p[..whole] != a[..whole] {
        return false;
    }
    rest == 0 || (p[whole] ^ a[whole]) & (0xff << (8 - rest)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_header_round_trips() {
        let h = RouteHeader {
            family: AF_INET6,
            dst_len: 64,
            table: 254,
            protocol: RTPROT_BOOT,
            kind: RTN_UNICAST,
            flags: 0x0102_0304,
            ..RouteHeader::default()
        };
        let bytes = h.encode();
        assert_eq!(bytes[..8], [10, 64, 0, 0, 254, 3, 0, 1]);
        assert_eq!(RouteHeader::decode(&bytes).unwrap(), h);
        assert!(RouteHeader::decode(&bytes[..11]).is_err());
    }

    #[test]
    fn link_and_address_headers_round_trip() {
        let l = LinkHeader {
            family: 0,
            index: 42,
        };
        assert_eq!(LinkHeader::decode(&l.encode()).unwrap(), l);
        let a = AddrHeader {
            family: AF_INET,
            prefix_len: 24,
            index: 7,
        };
        assert_eq!(AddrHeader::decode(&a.encode()).unwrap(), a);
        assert!(AddrHeader::decode(&[2, 24]).is_err());
    }

    #[test]
    fn addresses_decode_by_family() {
        let v4: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(ip_from_bytes(AF_INET, &ip_bytes(v4)), Some(v4));
        assert_eq!(ip_from_bytes(AF_INET6, &ip_bytes(v4)), None);
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        let mut via = u16::from(AF_INET6).to_ne_bytes().to_vec();
        via.extend(ip_bytes(v6));
        assert_eq!(via_address(&via), Some(v6));
        assert_eq!(family_of(v6), AF_INET6);
    }

    #[test]
    fn prefixes_contain_what_they_should() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(prefix_contains(ip("10.1.2.0"), 24, ip("10.1.2.200")));
        assert!(!prefix_contains(ip("10.1.2.0"), 24, ip("10.1.3.1")));
        assert!(prefix_contains(ip("10.1.2.0"), 23, ip("10.1.3.1")));
        assert!(prefix_contains(ip("0.0.0.0"), 0, ip("8.8.8.8")));
        assert!(prefix_contains(
            ip("2001:db8:1::5"),
            64,
            ip("2001:db8:1::1")
        ));
        assert!(!prefix_contains(
            ip("2001:db8:1::5"),
            64,
            ip("2001:db8:2::1")
        ));
        assert!(!prefix_contains(ip("10.0.0.0"), 8, ip("::1")));
        assert!(!prefix_contains(ip("10.0.0.0"), 33, ip("10.0.0.1")));
    }
}
