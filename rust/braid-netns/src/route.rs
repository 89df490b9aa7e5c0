//! Routes of the main table: decoding, dumping, and their JSON form.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::enter::socket_in_namespace;
use crate::error::NetnsError;
use crate::header::{
    ip_from_bytes, via_address, RouteHeader, AF_INET, AF_INET6, RTA_DST, RTA_GATEWAY, RTA_OIF,
    RTA_PRIORITY, RTA_TABLE, RTA_VIA, RTM_GETROUTE, RTM_NEWROUTE, RT_TABLE_MAIN,
};
use crate::link::dump_links;
use crate::message::{
    attr_u32, find_attr, parse_attributes, MessageBuilder, NLM_F_DUMP, NLM_F_REQUEST,
};
use crate::socket::NetlinkSocket;

/// One route as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// `AF_INET` or `AF_INET6`.
    pub family: u8,
    pub dst: IpAddr,
    pub dst_len: u8,
    /// The single next hop's gateway; `None` for direct and multipath routes.
    pub gateway: Option<IpAddr>,
    /// The single next hop's interface index; `None` for multipath routes.
    pub oif: Option<u32>,
    /// The name of `oif`, filled in from the namespace's interfaces.
    pub ifname: Option<String>,
    pub metric: Option<u32>,
    pub table: u32,
    pub scope: u8,
    pub protocol: u8,
    /// `rtm_type` (unicast, blackhole, ...).
    pub kind: u8,
    /// The kernel's message payload, echoed back verbatim to delete exactly this route.
    pub(crate) raw: Vec<u8>,
}

impl Route {
    /// True for a default route (`0.0.0.0/0` or `::/0`).
    pub fn is_default(&self) -> bool {
        self.dst_len == 0
    }
}

fn unspecified(family: u8) -> IpAddr {
    if family == AF_INET {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    }
}

/// Decodes one `RTM_NEWROUTE` payload; `None` for families other than IPv4 and IPv6.
pub fn decode_route(payload: &[u8]) -> Result<Option<Route>, NetnsError> {
    let h = RouteHeader::decode(payload)?;
    if h.family != AF_INET && h.family != AF_INET6 {
        return Ok(None);
    }
    let attrs = parse_attributes(payload, RouteHeader::LEN)?;
    let dst = match find_attr(&attrs, RTA_DST) {
        Some(b) => ip_from_bytes(h.family, b).ok_or_else(|| {
            NetnsError::Malformed(format!("route destination of {} bytes", b.len()))
        })?,
        None => unspecified(h.family),
    };
    let gateway = find_attr(&attrs, RTA_GATEWAY)
        .and_then(|b| ip_from_bytes(h.family, b))
        .or_else(|| find_attr(&attrs, RTA_VIA).and_then(via_address));
    Ok(Some(Route {
        family: h.family,
        dst,
        dst_len: h.dst_len,
        gateway,
        oif: find_attr(&attrs, RTA_OIF).and_then(attr_u32),
        ifname: None,
        metric: find_attr(&attrs, RTA_PRIORITY).and_then(attr_u32),
        table: find_attr(&attrs, RTA_TABLE)
            .and_then(attr_u32)
            .unwrap_or(u32::from(h.table)),
        scope: h.scope,
        protocol: h.protocol,
        kind: h.kind,
        raw: payload.to_vec(),
    }))
}

/// The main-table routes of one family, interface names not yet filled in.
pub(crate) fn dump_main_routes(
    sock: &mut NetlinkSocket,
    family: u8,
) -> Result<Vec<Route>, NetnsError> {
    dump_table_routes(sock, family, RT_TABLE_MAIN)
}

/// The routes of one family in routing table `table`, interface names not yet filled in.
pub(crate) fn dump_table_routes(
    sock: &mut NetlinkSocket,
    family: u8,
    table: u32,
) -> Result<Vec<Route>, NetnsError> {
    let request = || {
        let mut b = MessageBuilder::new(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP);
        b.push(
            &RouteHeader {
                family,
                ..RouteHeader::default()
            }
            .encode(),
        );
        b
    };
    let mut routes = Vec::new();
    for reply in sock
        .dump("listing routes", request)?
        .iter()
        .filter(|r| r.kind == RTM_NEWROUTE)
    {
        if let Some(route) = decode_route(&reply.payload)? {
            if route.family == family && route.table == table {
                routes.push(route);
            }
        }
    }
    Ok(routes)
}

/// The main-table routes of both families in the namespace at `netns`, IPv4 first.
pub fn list_routes(netns: &str) -> Result<Vec<Route>, NetnsError> {
    let mut sock = socket_in_namespace(netns)?;
    let names: HashMap<u32, String> = dump_links(&mut sock)?
        .into_iter()
        .map(|l| (l.index, l.name))
        .collect();
    let mut routes = dump_main_routes(&mut sock, AF_INET)?;
    routes.extend(dump_main_routes(&mut sock, AF_INET6)?);
    for route in &mut routes {
        route.ifname = route.oif.and_then(|i| names.get(&i).cloned());
    }
    Ok(routes)
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_opt<T: std::fmt::Display>(out: &mut String, value: Option<T>) {
    match value {
        Some(v) => json_string(out, &v.to_string()),
        None => out.push_str("null"),
    }
}

/// The routes as a JSON list of objects with `family` (4 or 6), `dst` (`prefix/len`),
/// `gateway`, `ifname`, `metric` (each possibly null), `table`, `scope` and `protocol`.
pub fn routes_json(routes: &[Route]) -> String {
    let mut out = String::from("[");
    for (i, r) in routes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let family = if r.family == AF_INET { 4 } else { 6 };
        let _ = write!(
            out,
            "{{\"family\":{family},\"dst\":\"{}/{}\",\"gateway\":",
            r.dst, r.dst_len
        );
        json_opt(&mut out, r.gateway);
        out.push_str(",\"ifname\":");
        json_opt(&mut out, r.ifname.as_deref());
        let metric = r
            .metric
            .map_or_else(|| "null".to_owned(), |m| m.to_string());
        let _ = write!(
            out,
            ",\"metric\":{metric},\"table\":{},\"scope\":{},\"protocol\":{}}}",
            r.table, r.scope, r.protocol
        );
    }
    out.push(']');
    out
}

#[cfg(test)]
#[path = "route_tests.rs"]
mod tests;
