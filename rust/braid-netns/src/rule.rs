//! Routing policy rules (`ip rule`): `struct fib_rule_hdr`, its attributes, and the
//! `RTM_NEWRULE`/`RTM_DELRULE`/`RTM_GETRULE` requests braid sends. Encoding and decoding are
//! pure and unit-tested; [`dump_rules`] is the one call that talks to the kernel.

use std::net::IpAddr;

use crate::error::NetnsError;
use crate::header::{
    family_of, ip_bytes, ip_from_bytes, RouteHeader, AF_INET, AF_INET6, RTM_DELRULE, RTM_GETRULE,
    RTM_NEWRULE,
};
use crate::message::{
    attr_u32, find_attr, parse_attributes, MessageBuilder, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP,
    NLM_F_EXCL, NLM_F_REQUEST,
};
use crate::socket::NetlinkSocket;

pub const FRA_DST: u16 = 1;
pub const FRA_SRC: u16 = 2;
pub const FRA_PRIORITY: u16 = 6;
pub const FRA_TABLE: u16 = 15;
/// `FR_ACT_TO_TBL`: look the packet up in the rule's table.
pub const FR_ACT_TO_TBL: u8 = 1;
/// The `table` byte of a header whose table is given by `FRA_TABLE` (`RT_TABLE_UNSPEC`).
const TABLE_IN_ATTRIBUTE: u8 = 0;

/// `struct fib_rule_hdr`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuleHeader {
    pub family: u8,
    pub dst_len: u8,
    pub src_len: u8,
    pub tos: u8,
    pub table: u8,
    pub action: u8,
    pub flags: u32,
}

impl RuleHeader {
    pub const LEN: usize = 12;

    /// `fib_rule_hdr` has the layout of `rtmsg`, its reserved bytes where `rtmsg` has the
    /// protocol and scope and its action where `rtmsg` has the type: one codec serves both.
    pub fn encode(&self) -> [u8; Self::LEN] {
        RouteHeader {
            family: self.family,
            dst_len: self.dst_len,
            src_len: self.src_len,
            tos: self.tos,
            table: self.table,
            kind: self.action,
            flags: self.flags,
            ..RouteHeader::default()
        }
        .encode()
    }

    pub fn decode(p: &[u8]) -> Result<Self, NetnsError> {
        if p.len() < Self::LEN {
            return Err(NetnsError::Malformed(format!(
                "fib_rule_hdr of {} bytes",
                p.len()
            )));
        }
        let h = RouteHeader::decode(p)?;
        Ok(Self {
            family: h.family,
            dst_len: h.dst_len,
            src_len: h.src_len,
            tos: h.tos,
            table: h.table,
            action: h.kind,
            flags: h.flags,
        })
    }
}

/// One rule as the kernel reports it (only what braid reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub family: u8,
    /// The source prefix the rule selects (`from`), when it has one.
    pub src: Option<(IpAddr, u8)>,
    /// True when the rule also selects on a destination (`to`).
    pub has_dst: bool,
    pub table: u32,
    pub priority: Option<u32>,
    pub action: u8,
    /// The kernel's payload, echoed back verbatim to delete exactly this rule.
    pub(crate) raw: Vec<u8>,
}

/// Decodes one `RTM_NEWRULE` payload; `None` for families other than IPv4 and IPv6.
pub fn decode_rule(payload: &[u8]) -> Result<Option<Rule>, NetnsError> {
    let h = RuleHeader::decode(payload)?;
    if h.family != AF_INET && h.family != AF_INET6 {
        return Ok(None);
    }
    let attrs = parse_attributes(payload, RuleHeader::LEN)?;
    let src = match find_attr(&attrs, FRA_SRC) {
        Some(b) => Some((
            ip_from_bytes(h.family, b).ok_or_else(|| {
                NetnsError::Malformed(format!("rule source of {} bytes", b.len()))
            })?,
            h.src_len,
        )),
        None => None,
    };
    Ok(Some(Rule {
        family: h.family,
        src,
        has_dst: find_attr(&attrs, FRA_DST).is_some() || h.dst_len > 0,
        table: find_attr(&attrs, FRA_TABLE)
            .and_then(attr_u32)
            .unwrap_or(u32::from(h.table)),
        priority: find_attr(&attrs, FRA_PRIORITY).and_then(attr_u32),
        action: h.action,
        raw: payload.to_vec(),
    }))
}

/// The request adding `from <source>/<len> lookup <table>` at `priority`; it fails with
/// `EEXIST` when the same rule is already there.
pub fn add_request(source: IpAddr, src_len: u8, table: u32, priority: u32) -> MessageBuilder {
    let header = RuleHeader {
        family: family_of(source),
        src_len,
        table: TABLE_IN_ATTRIBUTE,
        action: FR_ACT_TO_TBL,
        ..RuleHeader::default()
    };
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    let mut b = MessageBuilder::new(RTM_NEWRULE, flags);
    b.push(&header.encode())
        .attr(FRA_SRC, &ip_bytes(source))
        .attr_u32(FRA_TABLE, table)
        .attr_u32(FRA_PRIORITY, priority);
    b
}

/// The request deleting exactly `rule`: the kernel's own description of it, echoed back.
pub fn delete_request(rule: &Rule) -> MessageBuilder {
    let mut b = MessageBuilder::new(RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK);
    b.push(&rule.raw);
    b
}

/// Every rule of both families in the socket's namespace, IPv4 first.
pub(crate) fn dump_rules(sock: &mut NetlinkSocket) -> Result<Vec<Rule>, NetnsError> {
    let mut rules = Vec::new();
    for family in [AF_INET, AF_INET6] {
        let request = || {
            let mut b = MessageBuilder::new(RTM_GETRULE, NLM_F_REQUEST | NLM_F_DUMP);
            b.push(
                &RuleHeader {
                    family,
                    ..RuleHeader::default()
                }
                .encode(),
            );
            b
        };
        for reply in sock
            .dump("listing rules", request)?
            .iter()
            .filter(|r| r.kind == RTM_NEWRULE)
        {
            rules.extend(decode_rule(&reply.payload)?);
        }
    }
    Ok(rules)
}

/// Deletes `rule`; one already gone (removed concurrently) counts as deleted.
pub(crate) fn delete(sock: &mut NetlinkSocket, rule: &Rule) -> Result<(), NetnsError> {
    match sock.execute("deleting a rule", delete_request(rule)) {
        Err(e) if matches!(e.errno(), Some(libc::ENOENT | libc::ESRCH)) => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::parse_messages;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn header_round_trips() {
        let h = RuleHeader {
            family: AF_INET6,
            src_len: 128,
            action: FR_ACT_TO_TBL,
            flags: 7,
            ..RuleHeader::default()
        };
        let bytes = h.encode();
        assert_eq!(bytes[..8], [10, 0, 128, 0, 0, 0, 0, 1]);
        assert_eq!(RuleHeader::decode(&bytes).unwrap(), h);
        assert!(RuleHeader::decode(&bytes[..11]).is_err());
    }

    #[test]
    fn add_request_is_an_exclusive_source_rule() {
        let bytes = add_request(ip("2001:db8::5"), 128, 10_003, 1000).finish(4);
        let msg = parse_messages(&bytes).unwrap()[0];
        assert_eq!(msg.kind, RTM_NEWRULE);
        assert_eq!(
            msg.flags,
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
        );
        let rule = decode_rule(msg.payload).unwrap().unwrap();
        assert_eq!(rule.family, AF_INET6);
        assert_eq!(rule.src, Some((ip("2001:db8::5"), 128)));
        assert_eq!((rule.table, rule.priority), (10_003, Some(1000)));
        assert_eq!(rule.action, FR_ACT_TO_TBL);
        assert!(!rule.has_dst);
    }

    #[test]
    fn rules_without_source_or_table_attribute_decode() {
        let header = RuleHeader {
            family: AF_INET,
            table: 254,
            action: FR_ACT_TO_TBL,
            ..RuleHeader::default()
        };
        let mut b = MessageBuilder::new(RTM_NEWRULE, 0);
        b.push(&header.encode()).attr_u32(FRA_PRIORITY, 32766);
        let rule = decode_rule(&b.finish(0)[16..]).unwrap().unwrap();
        assert_eq!((rule.src, rule.table), (None, 254));
        assert_eq!(rule.priority, Some(32766));
    }

    #[test]
    fn delete_request_echoes_the_rule_and_bad_input_is_an_error() {
        let added = add_request(ip("192.0.2.7"), 32, 10_002, 1000).finish(1);
        let rule = decode_rule(parse_messages(&added).unwrap()[0].payload)
            .unwrap()
            .unwrap();
        let bytes = delete_request(&rule).finish(2);
        let msg = parse_messages(&bytes).unwrap()[0];
        assert_eq!(
            (msg.kind, msg.flags),
            (RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK)
        );
        assert_eq!(msg.payload, rule.raw.as_slice());
        let mut other = rule.raw.clone();
        other[0] = 7;
        assert_eq!(decode_rule(&other).unwrap(), None);
        let header = RuleHeader {
            family: AF_INET,
            src_len: 32,
            ..RuleHeader::default()
        };
        let mut b = MessageBuilder::new(RTM_NEWRULE, 0);
        b.push(&header.encode()).attr(FRA_SRC, &[10, 0]);
        assert!(decode_rule(&b.finish(0)[16..]).is_err());
    }
}
