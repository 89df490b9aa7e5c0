//! Making one gateway the only default route of its address family (main table), leaving
//! the other family untouched.

use std::net::IpAddr;

use crate::address::{dump_addresses, reach, Reach};
use crate::enter::socket_in_namespace;
use crate::error::NetnsError;
use crate::header::{
    family_of, ip_bytes, RouteHeader, AF_INET, AF_INET6, RTA_GATEWAY, RTA_OIF, RTA_PRIORITY,
    RTA_TABLE, RTM_DELROUTE, RTM_NEWROUTE, RTN_UNICAST, RTPROT_BOOT, RT_SCOPE_UNIVERSE,
    RT_TABLE_MAIN,
};
use crate::link::{dump_links, find_link};
use crate::message::{MessageBuilder, NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE, NLM_F_REQUEST};
use crate::route::{dump_main_routes, Route};
use crate::socket::NetlinkSocket;

/// Rounds of "check, then add or delete" before giving up on a namespace that keeps changing.
const ROUNDS: usize = 4;

/// The metric of the route braid adds: the kernel's own default for the family.
fn our_metric(family: u8) -> u32 {
    if family == AF_INET {
        0
    } else {
        1024
    }
}

/// Parses `gateway` and checks it belongs to `family` (4 or 6).
pub fn parse_gateway(family: u8, gateway: &str) -> Result<IpAddr, NetnsError> {
    let want = match family {
        4 => AF_INET,
        6 => AF_INET6,
        _ => {
            return Err(NetnsError::InvalidArgument(format!(
                "address family {family} is neither 4 nor 6"
            )))
        }
    };
    let addr: IpAddr = gateway.parse().map_err(|_| {
        NetnsError::InvalidArgument(format!("gateway {gateway:?} is not an IP address"))
    })?;
    if family_of(addr) != want {
        return Err(NetnsError::InvalidArgument(format!(
            "gateway {addr} is not an IPv{family} address"
        )));
    }
    if addr.is_unspecified() || addr.is_multicast() {
        return Err(NetnsError::InvalidArgument(format!(
            "gateway {addr} cannot be a next hop"
        )));
    }
    Ok(addr)
}

/// The interface index the default route goes through.
fn resolve_interface(
    sock: &mut NetlinkSocket,
    gateway: IpAddr,
    ifname: Option<&str>,
) -> Result<u32, NetnsError> {
    if let Some(name) = ifname {
        let link = find_link(sock, name)?;
        return link.map(|l| l.index).ok_or_else(|| NetnsError::NoSuchLink {
            ifname: name.to_owned(),
        });
    }
    match reach(&dump_addresses(sock, family_of(gateway))?, gateway) {
        Reach::Interface(index) => Ok(index),
        Reach::Nowhere => Err(NetnsError::Unreachable {
            gateway: gateway.to_string(),
        }),
        Reach::Several(indexes) => {
            let links = dump_links(sock)?;
            let ifnames = links
                .into_iter()
                .filter(|l| indexes.contains(&l.index))
                .map(|l| l.name)
                .collect();
            Err(NetnsError::Ambiguous {
                gateway: gateway.to_string(),
                ifnames,
            })
        }
    }
}

fn is_ours(route: &Route, gateway: IpAddr, oif: u32) -> bool {
    route.gateway == Some(gateway)
        && route.oif == Some(oif)
        && route.metric.unwrap_or(0) == our_metric(route.family)
}

/// The request adding (or replacing) the default route via `gateway` on `oif`.
pub fn add_request(gateway: IpAddr, oif: u32) -> MessageBuilder {
    let family = family_of(gateway);
    let header = RouteHeader {
        family,
        table: u8::try_from(RT_TABLE_MAIN).unwrap_or(u8::MAX),
        protocol: RTPROT_BOOT,
        scope: RT_SCOPE_UNIVERSE,
        kind: RTN_UNICAST,
        ..RouteHeader::default()
    };
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    let mut b = MessageBuilder::new(RTM_NEWROUTE, flags);
    b.push(&header.encode())
        .attr_u32(RTA_TABLE, RT_TABLE_MAIN)
        .attr(RTA_GATEWAY, &ip_bytes(gateway))
        .attr_u32(RTA_OIF, oif)
        .attr_u32(RTA_PRIORITY, our_metric(family));
    b
}

/// The request deleting exactly `route`: the kernel's own description of it, echoed back.
pub fn delete_request(route: &Route) -> MessageBuilder {
    let mut b = MessageBuilder::new(RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK);
    b.push(&route.raw);
    b
}

fn delete(sock: &mut NetlinkSocket, route: &Route) -> Result<(), NetnsError> {
    match sock.execute("deleting a default route", delete_request(route)) {
        // Already gone (removed concurrently): that is what we wanted.
        Err(e) if e.errno() == Some(libc::ESRCH) => Ok(()),
        other => other,
    }
}

/// Adds the new default route first, then deletes every other default route of its family,
/// and checks the outcome.
fn make_only_default(
    sock: &mut NetlinkSocket,
    gateway: IpAddr,
    oif: u32,
) -> Result<(), NetnsError> {
    let op = "adding the default route";
    sock.execute(op, add_request(gateway, oif))?;
    for _ in 0..ROUNDS {
        let defaults: Vec<Route> = dump_main_routes(sock, family_of(gateway))?
            .into_iter()
            .filter(Route::is_default)
            .collect();
        let Some(ours) = defaults.iter().position(|r| is_ours(r, gateway, oif)) else {
            sock.execute(op, add_request(gateway, oif))?;
            continue;
        };
        if defaults.len() == 1 {
            return Ok(());
        }
        for (_, route) in defaults.iter().enumerate().filter(|(i, _)| *i != ours) {
            delete(sock, route)?;
        }
    }
    Err(NetnsError::Malformed(format!(
        "default routes kept changing while making {gateway} the only one"
    )))
}

/// In the main table of the namespace at `netns`, makes `gateway` (through `ifname`, or the
/// interface whose connected prefix contains it) the only default route of `family` (4 or 6).
pub fn set_default_route(
    netns: &str,
    family: u8,
    gateway: &str,
    ifname: Option<&str>,
) -> Result<(), NetnsError> {
    let gateway = parse_gateway(family, gateway)?;
    let mut sock = socket_in_namespace(netns)?;
    let oif = resolve_interface(&mut sock, gateway, ifname)?;
    make_only_default(&mut sock, gateway, oif)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{attr_u32, find_attr, parse_attributes, parse_messages};
    use crate::route::decode_route;

    #[test]
    fn gateways_must_match_their_family() {
        assert!(parse_gateway(4, "192.0.2.1").is_ok());
        assert!(parse_gateway(6, "2001:db8::1").is_ok());
        for (family, gw) in [
            (4, "2001:db8::1"),
            (6, "192.0.2.1"),
            (5, "192.0.2.1"),
            (4, "x"),
            (4, "0.0.0.0"),
        ] {
            assert!(
                matches!(
                    parse_gateway(family, gw),
                    Err(NetnsError::InvalidArgument(_))
                ),
                "{gw}"
            );
        }
    }

    #[test]
    fn add_request_is_a_main_table_unicast_replace() {
        let bytes = add_request("2001:db8::1".parse().unwrap(), 5).finish(9);
        let msg = parse_messages(&bytes).unwrap()[0];
        assert_eq!(msg.kind, RTM_NEWROUTE);
        assert_eq!(
            msg.flags,
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE
        );
        let route = decode_route(msg.payload).unwrap().unwrap();
        assert!(route.is_default());
        assert_eq!(route.gateway, Some("2001:db8::1".parse().unwrap()));
        assert_eq!(
            (route.oif, route.metric, route.table),
            (Some(5), Some(1024), 254)
        );
        assert_eq!(
            (route.kind, route.protocol, route.scope),
            (RTN_UNICAST, RTPROT_BOOT, 0)
        );
        assert!(is_ours(&route, "2001:db8::1".parse().unwrap(), 5));
        assert!(!is_ours(&route, "2001:db8::1".parse().unwrap(), 6));
    }

    #[test]
    fn delete_request_echoes_the_route() {
        let added = add_request("192.0.2.1".parse().unwrap(), 3).finish(1);
        let route = decode_route(parse_messages(&added).unwrap()[0].payload)
            .unwrap()
            .unwrap();
        let bytes = delete_request(&route).finish(2);
        let msg = parse_messages(&bytes).unwrap()[0];
        assert_eq!(
            (msg.kind, msg.flags),
            (RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK)
        );
        assert_eq!(msg.payload, route.raw.as_slice());
        let attrs = parse_attributes(msg.payload, RouteHeader::LEN).unwrap();
        assert_eq!(find_attr(&attrs, RTA_PRIORITY).and_then(attr_u32), Some(0));
    }
}
