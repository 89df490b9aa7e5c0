//! Source-based routing for one interface of a multi-homed pod: a routing table of its own
//! (its connected routes and the routes of its result) and one rule per address,
//! `from <address> lookup <table>`, so that a reply leaves by the interface its request came in
//! on; and, optionally, one metric for the main-table routes through the interface that have a
//! gateway. The pure part ([`plan`], the requests) is unit-tested; [`apply`], [`clear`] and
//! [`check`] talk to the kernel.

use std::collections::HashSet;
use std::net::IpAddr;

use crate::error::NetnsError;
use crate::header::{
    family_of, ip_bytes, RouteHeader, AF_INET, AF_INET6, RTA_DST, RTA_GATEWAY, RTA_OIF,
    RTA_PREFSRC, RTA_PRIORITY, RTA_TABLE, RTM_DELROUTE, RTM_NEWROUTE, RTN_UNICAST, RTPROT_BOOT,
    RT_SCOPE_LINK, RT_SCOPE_UNIVERSE, RT_TABLE_MAIN,
};
use crate::message::{MessageBuilder, NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE, NLM_F_REQUEST};
use crate::route::{dump_table_routes, Route};
use crate::socket::NetlinkSocket;

/// The table of the interface with index `i` is `TABLE_BASE + i`: unique per interface of a
/// namespace, and never 0 (unspec), 253 (default), 254 (main) or 255 (local).
pub const TABLE_BASE: u32 = 10_000;
/// Interface indexes above this get no table (the range braid's tables live in ends there).
pub const MAX_IFINDEX: u32 = 1 << 24;
/// The priority of braid's rules: before `main` (32766) and `default` (32767).
pub const RULE_PRIORITY: u32 = 1000;
/// At most this many addresses per interface (one rule each).
pub const MAX_ADDRESSES: usize = 16;
/// At most this many routes per table, connected ones included.
pub const MAX_ROUTES: usize = 64;

/// One route of an interface's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRoute {
    pub dst: IpAddr,
    pub dst_len: u8,
    pub gateway: Option<IpAddr>,
    /// The preferred source (IPv4 connected routes only: an IPv6 address may still be
    /// tentative, and the kernel refuses a tentative source).
    pub prefsrc: Option<IpAddr>,
}

/// What one interface's source routing is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceRouting {
    /// The interface's addresses with their prefix lengths: one rule each.
    pub addresses: Vec<(IpAddr, u8)>,
    /// The table's routes: connected ones first, then those of the result.
    pub routes: Vec<TableRoute>,
}

/// The table of the interface with index `ifindex`.
pub fn table_for(ifindex: u32) -> Result<u32, NetnsError> {
    if ifindex == 0 || ifindex > MAX_IFINDEX {
        return Err(NetnsError::InvalidArgument(format!(
            "interface index {ifindex} is outside 1..={MAX_IFINDEX}"
        )));
    }
    Ok(TABLE_BASE + ifindex)
}

/// True for a table in braid's range.
pub fn is_braid_table(table: u32) -> bool {
    table > TABLE_BASE && table <= TABLE_BASE + MAX_IFINDEX
}

fn host_len(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        32
    } else {
        128
    }
}

/// `addr` with the bits past `len` cleared.
pub fn network(addr: IpAddr, len: u8) -> IpAddr {
    let mut bytes = ip_bytes(addr);
    for (i, byte) in bytes.iter_mut().enumerate() {
        let kept = usize::from(len).saturating_sub(i * 8).min(8);
        *byte &= u8::try_from(0xff_u16 << (8 - kept) & 0xff).unwrap_or(0);
    }
    match addr {
        IpAddr::V4(_) => <[u8; 4]>::try_from(bytes.as_slice()).map_or(addr, IpAddr::from),
        IpAddr::V6(_) => <[u8; 16]>::try_from(bytes.as_slice()).map_or(addr, IpAddr::from),
    }
}

/// `address[/len]`; no length means the host length.
fn parse_prefix(text: &str, what: &str) -> Result<(IpAddr, u8), NetnsError> {
    let bad = || NetnsError::InvalidArgument(format!("{what} {text:?} is not an IP prefix"));
    let (ip, len) = text
        .split_once('/')
        .map_or((text, None), |(a, l)| (a, Some(l)));
    let addr: IpAddr = ip.parse().map_err(|_| bad())?;
    let len = match len {
        None => host_len(addr),
        Some(l) => l.parse::<u8>().map_err(|_| bad())?,
    };
    if len > host_len(addr) {
        return Err(bad());
    }
    Ok((addr, len))
}

fn parse_gateway(text: &str, family: u8) -> Result<IpAddr, NetnsError> {
    let gw: IpAddr = text.parse().map_err(|_| {
        NetnsError::InvalidArgument(format!("gateway {text:?} is not an IP address"))
    })?;
    if family_of(gw) != family || gw.is_unspecified() || gw.is_multicast() {
        return Err(NetnsError::InvalidArgument(format!(
            "gateway {gw} cannot be a next hop of this route"
        )));
    }
    Ok(gw)
}

/// The interface's source routing from its result: `addresses` (`address/len`) and `routes`
/// (`(destination/len, gateway)`; no gateway: a direct route). Refuses more than
/// [`MAX_ADDRESSES`] addresses or [`MAX_ROUTES`] routes, and anything that does not parse.
pub fn plan(
    addresses: &[String],
    routes: &[(String, Option<String>)],
) -> Result<SourceRouting, NetnsError> {
    if addresses.len() > MAX_ADDRESSES || routes.len() > MAX_ROUTES {
        return Err(NetnsError::InvalidArgument(format!(
            "{} addresses and {} routes: source routing takes at most {MAX_ADDRESSES} \
             addresses and {MAX_ROUTES} routes per interface",
            addresses.len(),
            routes.len()
        )));
    }
    let mut out = SourceRouting::default();
    let mut seen = HashSet::new();
    for text in addresses {
        let (addr, len) = parse_prefix(text, "address")?;
        if addr.is_unspecified() || addr.is_multicast() {
            return Err(NetnsError::InvalidArgument(format!(
                "address {addr} cannot be an interface's"
            )));
        }
        if !out.addresses.contains(&(addr, len)) {
            out.addresses.push((addr, len));
        }
        if seen.insert((network(addr, len), len)) {
            out.routes.push(TableRoute {
                dst: network(addr, len),
                dst_len: len,
                gateway: None,
                prefsrc: addr.is_ipv4().then_some(addr),
            });
        }
    }
    for (dst, gateway) in routes {
        let (addr, len) = parse_prefix(dst, "route destination")?;
        let gateway = match gateway {
            Some(g) => Some(parse_gateway(g, family_of(addr))?),
            None => None,
        };
        if seen.insert((network(addr, len), len)) {
            out.routes.push(TableRoute {
                dst: network(addr, len),
                dst_len: len,
                gateway,
                prefsrc: None,
            });
        }
    }
    if out.routes.len() > MAX_ROUTES {
        return Err(NetnsError::InvalidArgument(format!(
            "{} routes: source routing takes at most {MAX_ROUTES} per interface",
            out.routes.len()
        )));
    }
    Ok(out)
}

/// The start of an `RTM_NEWROUTE` replace request: `header`, `table`, the destination (when
/// the header's prefix is not the default route) and the gateway.
fn replace_request(
    header: &RouteHeader,
    table: u32,
    dst: IpAddr,
    gateway: Option<IpAddr>,
) -> MessageBuilder {
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    let mut b = MessageBuilder::new(RTM_NEWROUTE, flags);
    b.push(&header.encode()).attr_u32(RTA_TABLE, table);
    if header.dst_len > 0 {
        b.attr(RTA_DST, &ip_bytes(dst));
    }
    if let Some(gw) = gateway {
        b.attr(RTA_GATEWAY, &ip_bytes(gw));
    }
    b
}

/// The request adding (or replacing) `route` in `table` through `oif`.
pub fn route_request(table: u32, oif: u32, route: &TableRoute) -> MessageBuilder {
    let family = family_of(route.dst);
    let scope = if route.gateway.is_none() && family == AF_INET {
        RT_SCOPE_LINK
    } else {
        RT_SCOPE_UNIVERSE
    };
    let header = RouteHeader {
        family,
        dst_len: route.dst_len,
        protocol: RTPROT_BOOT,
        scope,
        kind: RTN_UNICAST,
        ..RouteHeader::default()
    };
    let mut b = replace_request(&header, table, route.dst, route.gateway);
    if let Some(src) = route.prefsrc {
        b.attr(RTA_PREFSRC, &ip_bytes(src));
    }
    b.attr_u32(RTA_OIF, oif);
    b
}

/// The request adding a copy of the main-table `route` with `metric` as its priority.
pub fn metric_request(route: &Route, metric: u32) -> MessageBuilder {
    let header = RouteHeader {
        family: route.family,
        dst_len: route.dst_len,
        table: u8::try_from(RT_TABLE_MAIN).unwrap_or(u8::MAX),
        protocol: route.protocol,
        scope: route.scope,
        kind: route.kind,
        ..RouteHeader::default()
    };
    let mut b = replace_request(&header, RT_TABLE_MAIN, route.dst, route.gateway);
    if let Some(oif) = route.oif {
        b.attr_u32(RTA_OIF, oif);
    }
    b.attr_u32(RTA_PRIORITY, metric);
    b
}

/// Whether the kernel's `route` is `want` through `oif`.
pub fn is_route(route: &Route, want: &TableRoute, oif: u32) -> bool {
    route.dst == want.dst
        && route.dst_len == want.dst_len
        && route.gateway == want.gateway
        && route.oif == Some(oif)
}

/// The main-table routes through `oif` that have a gateway of their own family: the ones an
/// attachment's metric applies to.
pub(crate) fn gateway_routes(sock: &mut NetlinkSocket, oif: u32) -> Result<Vec<Route>, NetnsError> {
    let mut out = dump_table_routes(sock, AF_INET, RT_TABLE_MAIN)?;
    out.extend(dump_table_routes(sock, AF_INET6, RT_TABLE_MAIN)?);
    out.retain(|r| r.oif == Some(oif) && r.gateway.is_some_and(|g| family_of(g) == r.family));
    Ok(out)
}

/// Deletes `route` (the kernel's own description, echoed); one already gone counts as deleted.
pub(crate) fn delete_route(sock: &mut NetlinkSocket, route: &Route) -> Result<(), NetnsError> {
    let mut b = MessageBuilder::new(RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK);
    b.push(&route.raw);
    match sock.execute("deleting a route", b) {
        Err(e) if e.errno() == Some(libc::ESRCH) => Ok(()),
        other => other,
    }
}

/// The metric of a route as `ip route` shows it (an IPv4 route without one has 0).
pub fn metric_of(route: &Route) -> u32 {
    route.metric.unwrap_or(0)
}

/// Every route of `table`, both families.
pub(crate) fn table_routes(sock: &mut NetlinkSocket, table: u32) -> Result<Vec<Route>, NetnsError> {
    let mut out = dump_table_routes(sock, AF_INET, table)?;
    out.extend(dump_table_routes(sock, AF_INET6, table)?);
    Ok(out)
}

/// The source rules of `routing` as `(source, host length)`.
pub fn rule_sources(routing: &SourceRouting) -> Vec<(IpAddr, u8)> {
    routing
        .addresses
        .iter()
        .map(|(a, _)| (*a, host_len(*a)))
        .collect()
}

pub use crate::source_routing_ops::{apply, check, clear};

#[cfg(test)]
#[path = "source_routing_tests.rs"]
mod tests;
