use super::*;
use crate::header::{ip_bytes, RTN_UNICAST, RTPROT_BOOT};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn route_payload(family: u8, dst: Option<(&str, u8)>, gw: Option<&str>, table: u32) -> Vec<u8> {
    let header = RouteHeader {
        family,
        dst_len: dst.map_or(0, |d| d.1),
        table: u8::try_from(table).unwrap_or(252),
        protocol: RTPROT_BOOT,
        kind: RTN_UNICAST,
        ..RouteHeader::default()
    };
    let mut b = MessageBuilder::new(RTM_NEWROUTE, 0);
    b.push(&header.encode()).attr_u32(RTA_TABLE, table);
    if let Some((d, _)) = dst {
        b.attr(RTA_DST, &ip_bytes(ip(d)));
    }
    if let Some(g) = gw {
        b.attr(RTA_GATEWAY, &ip_bytes(ip(g)));
    }
    b.attr_u32(RTA_OIF, 3).attr_u32(RTA_PRIORITY, 100);
    b.finish(0)[16..].to_vec()
}

#[test]
fn default_routes_decode_with_unspecified_destination() {
    let p = route_payload(AF_INET, None, Some("192.0.2.1"), 254);
    let r = decode_route(&p).unwrap().unwrap();
    assert!(r.is_default());
    assert_eq!(r.dst, ip("0.0.0.0"));
    assert_eq!(r.gateway, Some(ip("192.0.2.1")));
    assert_eq!((r.oif, r.metric, r.table), (Some(3), Some(100), 254));
    assert_eq!((r.protocol, r.kind), (RTPROT_BOOT, RTN_UNICAST));
    assert_eq!(r.raw, p);
}

#[test]
fn large_table_ids_come_from_the_attribute() {
    let p = route_payload(AF_INET6, Some(("2001:db8::", 64)), None, 1000);
    let r = decode_route(&p).unwrap().unwrap();
    assert_eq!(
        (r.dst, r.dst_len, r.table, r.gateway),
        (ip("2001:db8::"), 64, 1000, None)
    );
    assert!(!r.is_default());
}

#[test]
fn via_gateways_are_reported() {
    let header = RouteHeader {
        family: AF_INET,
        table: 254,
        ..RouteHeader::default()
    };
    let mut via = u16::from(AF_INET6).to_ne_bytes().to_vec();
    via.extend(ip_bytes(ip("fe80::1")));
    let mut b = MessageBuilder::new(RTM_NEWROUTE, 0);
    b.push(&header.encode()).attr(RTA_VIA, &via);
    let r = decode_route(&b.finish(0)[16..]).unwrap().unwrap();
    assert_eq!(r.gateway, Some(ip("fe80::1")));
}

#[test]
fn other_families_and_bad_destinations() {
    let mut p = route_payload(AF_INET, None, None, 254);
    p[0] = 7;
    assert_eq!(decode_route(&p).unwrap(), None);
    let header = RouteHeader {
        family: AF_INET,
        dst_len: 8,
        ..RouteHeader::default()
    };
    let mut b = MessageBuilder::new(RTM_NEWROUTE, 0);
    b.push(&header.encode()).attr(RTA_DST, &[10, 0]);
    assert!(decode_route(&b.finish(0)[16..]).is_err());
}

#[test]
fn json_has_every_field_and_escapes_names() {
    let mut a = decode_route(&route_payload(AF_INET, None, Some("192.0.2.1"), 254))
        .unwrap()
        .unwrap();
    a.ifname = Some("we\"ird\\1".into());
    let mut b = decode_route(&route_payload(
        AF_INET6,
        Some(("2001:db8::", 64)),
        None,
        254,
    ))
    .unwrap()
    .unwrap();
    b.metric = None;
    let json = routes_json(&[a, b]);
    assert_eq!(
        json,
        "[{\"family\":4,\"dst\":\"0.0.0.0/0\",\"gateway\":\"192.0.2.1\",\"ifname\":\"we\\\"ird\\\\1\",\
         \"metric\":100,\"table\":254,\"scope\":0,\"protocol\":3},\
         {\"family\":6,\"dst\":\"2001:db8::/64\",\"gateway\":null,\"ifname\":null,\
         \"metric\":null,\"table\":254,\"scope\":0,\"protocol\":3}]"
    );
    assert_eq!(routes_json(&[]), "[]");
}
