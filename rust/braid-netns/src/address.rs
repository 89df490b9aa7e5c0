//! Interface addresses, and which interface's connected prefix holds a gateway.

use std::net::IpAddr;

use crate::error::NetnsError;
use crate::header::{
    ip_from_bytes, prefix_contains, AddrHeader, IFA_ADDRESS, IFA_LOCAL, RTM_GETADDR, RTM_NEWADDR,
};
use crate::message::{find_attr, parse_attributes, MessageBuilder, NLM_F_DUMP, NLM_F_REQUEST};
use crate::socket::NetlinkSocket;

/// One address: its interface and the prefix it makes connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    pub index: u32,
    /// The prefix address: the peer of a point-to-point address, otherwise the local one.
    pub prefix: IpAddr,
    pub prefix_len: u8,
}

/// Decodes one `RTM_NEWADDR` payload; `None` for other families or addresses without a value.
pub fn decode_address(payload: &[u8]) -> Result<Option<Address>, NetnsError> {
    let h = AddrHeader::decode(payload)?;
    let attrs = parse_attributes(payload, AddrHeader::LEN)?;
    let value = find_attr(&attrs, IFA_ADDRESS).or_else(|| find_attr(&attrs, IFA_LOCAL));
    Ok(value
        .and_then(|b| ip_from_bytes(h.family, b))
        .map(|prefix| Address {
            index: h.index,
            prefix,
            prefix_len: h.prefix_len,
        }))
}

/// Every address of one family in the socket's namespace.
pub(crate) fn dump_addresses(
    sock: &mut NetlinkSocket,
    family: u8,
) -> Result<Vec<Address>, NetnsError> {
    let request = || {
        let mut b = MessageBuilder::new(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP);
        b.push(
            &AddrHeader {
                family,
                ..AddrHeader::default()
            }
            .encode(),
        );
        b
    };
    let mut out = Vec::new();
    for reply in sock
        .dump("listing addresses", request)?
        .iter()
        .filter(|r| r.kind == RTM_NEWADDR)
    {
        out.extend(decode_address(&reply.payload)?);
    }
    Ok(out)
}

/// What the connected prefixes say about a gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Exactly one interface holds the longest prefix containing the gateway.
    Interface(u32),
    /// No prefix contains it.
    Nowhere,
    /// Several interfaces hold equally long prefixes containing it.
    Several(Vec<u32>),
}

/// The interface whose connected prefix contains `gateway` (longest prefix wins).
pub fn reach(addresses: &[Address], gateway: IpAddr) -> Reach {
    let matching = addresses
        .iter()
        .filter(|a| prefix_contains(a.prefix, a.prefix_len, gateway));
    let Some(best) = matching.clone().map(|a| a.prefix_len).max() else {
        return Reach::Nowhere;
    };
    let mut indexes: Vec<u32> = matching
        .filter(|a| a.prefix_len == best)
        .map(|a| a.index)
        .collect();
    indexes.sort_unstable();
    indexes.dedup();
    match indexes.as_slice() {
        [one] => Reach::Interface(*one),
        _ => Reach::Several(indexes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{ip_bytes, AF_INET, AF_INET6};

    fn addr(index: u32, prefix: &str, len: u8) -> Address {
        Address {
            index,
            prefix: prefix.parse().unwrap(),
            prefix_len: len,
        }
    }

    #[test]
    fn longest_connected_prefix_wins() {
        let addrs = [
            addr(1, "127.0.0.1", 8),
            addr(2, "10.0.0.5", 16),
            addr(3, "10.0.1.5", 24),
        ];
        assert_eq!(
            reach(&addrs, "10.0.1.1".parse().unwrap()),
            Reach::Interface(3)
        );
        assert_eq!(
            reach(&addrs, "10.0.2.1".parse().unwrap()),
            Reach::Interface(2)
        );
        assert_eq!(reach(&addrs, "192.0.2.1".parse().unwrap()), Reach::Nowhere);
    }

    #[test]
    fn equal_prefixes_on_two_interfaces_are_ambiguous() {
        let addrs = [
            addr(4, "fe80::1", 64),
            addr(5, "fe80::2", 64),
            addr(5, "fe80::3", 64),
        ];
        assert_eq!(
            reach(&addrs, "fe80::9".parse().unwrap()),
            Reach::Several(vec![4, 5])
        );
        let same_link = [addr(5, "fe80::2", 64), addr(5, "fe80::3", 64)];
        assert_eq!(
            reach(&same_link, "fe80::9".parse().unwrap()),
            Reach::Interface(5)
        );
    }

    #[test]
    fn addresses_decode_prefix_from_address_or_local() {
        let mut b = MessageBuilder::new(RTM_NEWADDR, 0);
        let h = AddrHeader {
            family: AF_INET,
            prefix_len: 24,
            index: 9,
        };
        b.push(&h.encode())
            .attr(IFA_LOCAL, &ip_bytes("10.9.9.1".parse().unwrap()));
        let a = decode_address(&b.finish(0)[16..]).unwrap().unwrap();
        assert_eq!(a, addr(9, "10.9.9.1", 24));

        let mut b = MessageBuilder::new(RTM_NEWADDR, 0);
        let h = AddrHeader {
            family: AF_INET6,
            prefix_len: 64,
            index: 2,
        };
        b.push(&h.encode())
            .attr(IFA_ADDRESS, &ip_bytes("2001:db8::1".parse().unwrap()));
        assert_eq!(
            decode_address(&b.finish(0)[16..]).unwrap(),
            Some(addr(2, "2001:db8::1", 64))
        );

        let mut b = MessageBuilder::new(RTM_NEWADDR, 0);
        b.push(
            &AddrHeader {
                family: AF_INET,
                prefix_len: 8,
                index: 1,
            }
            .encode(),
        );
        assert_eq!(decode_address(&b.finish(0)[16..]).unwrap(), None);
    }
}
