//! Interfaces of a namespace: names, indexes, hardware addresses and MTUs.

use std::fmt::Write as _;

use crate::enter::socket_in_namespace;
use crate::error::NetnsError;
use crate::header::{LinkHeader, IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, RTM_GETLINK, RTM_NEWLINK};
use crate::message::{
    attr_string, attr_u32, find_attr, parse_attributes, MessageBuilder, NLM_F_DUMP, NLM_F_REQUEST,
};
use crate::socket::NetlinkSocket;

const IFLA_EXT_MASK: u16 = 29;
/// Leave the (large) statistics out of link dumps.
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;

/// One interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub name: String,
    /// Hardware address as lower-case colon hex; empty when the link has none.
    pub mac: String,
    pub mtu: u32,
}

/// Lower-case colon hex of a hardware address (`02:00:5e:10:00:01`).
pub fn format_mac(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Decodes one `RTM_NEWLINK` payload.
pub fn decode_link(payload: &[u8]) -> Result<Link, NetnsError> {
    let header = LinkHeader::decode(payload)?;
    let attrs = parse_attributes(payload, LinkHeader::LEN)?;
    let index = u32::try_from(header.index)
        .map_err(|_| NetnsError::Malformed(format!("interface index {}", header.index)))?;
    Ok(Link {
        index,
        name: find_attr(&attrs, IFLA_IFNAME)
            .map(attr_string)
            .unwrap_or_default(),
        mac: find_attr(&attrs, IFLA_ADDRESS)
            .map(format_mac)
            .unwrap_or_default(),
        mtu: find_attr(&attrs, IFLA_MTU).and_then(attr_u32).unwrap_or(0),
    })
}

/// Every interface of the socket's namespace.
pub(crate) fn dump_links(sock: &mut NetlinkSocket) -> Result<Vec<Link>, NetnsError> {
    let request = || {
        let mut b = MessageBuilder::new(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP);
        b.push(&LinkHeader::default().encode())
            .attr_u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
        b
    };
    sock.dump("listing interfaces", request)?
        .iter()
        .filter(|r| r.kind == RTM_NEWLINK)
        .map(|r| decode_link(&r.payload))
        .collect()
}

/// The interface named `ifname` (its primary name, not an alternative name).
pub(crate) fn find_link(
    sock: &mut NetlinkSocket,
    ifname: &str,
) -> Result<Option<Link>, NetnsError> {
    Ok(dump_links(sock)?.into_iter().find(|l| l.name == ifname))
}

/// The names of the interfaces in the namespace at `netns`, in index order.
pub fn list_links(netns: &str) -> Result<Vec<String>, NetnsError> {
    let mut links = dump_links(&mut socket_in_namespace(netns)?)?;
    links.sort_by_key(|l| l.index);
    Ok(links.into_iter().map(|l| l.name).collect())
}

/// The interface named `ifname` in the namespace at `netns`, or `None` when there is none.
pub fn link_info(netns: &str, ifname: &str) -> Result<Option<Link>, NetnsError> {
    find_link(&mut socket_in_namespace(netns)?, ifname)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link_payload(index: i32, name: &str, mac: &[u8], mtu: u32) -> Vec<u8> {
        let mut b = MessageBuilder::new(RTM_NEWLINK, 0);
        b.push(&LinkHeader { family: 0, index }.encode())
            .attr(IFLA_IFNAME, format!("{name}\0").as_bytes())
            .attr(IFLA_ADDRESS, mac)
            .attr_u32(IFLA_MTU, mtu);
        b.finish(0)[16..].to_vec()
    }

    #[test]
    fn links_decode_name_mac_and_mtu() {
        let p = link_payload(7, "net1", &[0x02, 0xAB, 0, 0x10, 0xff, 1], 9000);
        let link = decode_link(&p).unwrap();
        assert_eq!(
            link,
            Link {
                index: 7,
                name: "net1".into(),
                mac: "02:ab:00:10:ff:01".into(),
                mtu: 9000
            }
        );
    }

    #[test]
    fn links_without_address_have_an_empty_mac() {
        let mut b = MessageBuilder::new(RTM_NEWLINK, 0);
        b.push(
            &LinkHeader {
                family: 0,
                index: 3,
            }
            .encode(),
        )
        .attr(IFLA_IFNAME, b"tun0\0");
        let link = decode_link(&b.finish(0)[16..]).unwrap();
        assert_eq!((link.mac.as_str(), link.mtu), ("", 0));
        assert!(decode_link(&link_payload(-1, "x", &[], 1)).is_err());
    }

    #[test]
    fn mac_formatting() {
        assert_eq!(format_mac(&[]), "");
        assert_eq!(format_mac(&[0; 6]), "00:00:00:00:00:00");
    }
}
