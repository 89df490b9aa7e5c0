use super::*;
use crate::message::{parse_attributes, parse_messages};
use crate::route::decode_route;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn tables_avoid_the_reserved_ones_and_have_a_range() {
    assert_eq!(table_for(1).unwrap(), 10_001);
    assert!(table_for(0).is_err());
    assert!(table_for(MAX_IFINDEX + 1).is_err());
    assert!(is_braid_table(table_for(MAX_IFINDEX).unwrap()));
    for reserved in [0, 253, 254, 255, TABLE_BASE] {
        assert!(!is_braid_table(reserved));
    }
}

#[test]
fn networks_clear_the_host_bits() {
    assert_eq!(network(ip("10.1.2.77"), 24), ip("10.1.2.0"));
    assert_eq!(network(ip("10.1.2.77"), 23), ip("10.1.2.0"));
    assert_eq!(network(ip("10.1.3.77"), 23), ip("10.1.2.0"));
    assert_eq!(network(ip("10.1.3.77"), 0), ip("0.0.0.0"));
    assert_eq!(network(ip("10.1.3.77"), 32), ip("10.1.3.77"));
    assert_eq!(network(ip("2001:db8:1:2::9"), 64), ip("2001:db8:1:2::"));
}

#[test]
fn a_plan_has_connected_routes_then_result_routes() {
    let routing = plan(
        &strings(&["10.1.0.5/24", "2001:db8:1::5/64"]),
        &[
            ("0.0.0.0/0".to_owned(), Some("10.1.0.1".to_owned())),
            ("10.1.0.0/24".to_owned(), None),
            ("::/0".to_owned(), Some("2001:db8:1::1".to_owned())),
        ],
    )
    .unwrap();
    assert_eq!(
        routing.addresses,
        vec![(ip("10.1.0.5"), 24), (ip("2001:db8:1::5"), 64)]
    );
    let dsts: Vec<_> = routing
        .routes
        .iter()
        .map(|r| (r.dst, r.dst_len, r.gateway, r.prefsrc))
        .collect();
    assert_eq!(
        dsts,
        vec![
            (ip("10.1.0.0"), 24, None, Some(ip("10.1.0.5"))),
            (ip("2001:db8:1::"), 64, None, None),
            (ip("0.0.0.0"), 0, Some(ip("10.1.0.1")), None),
            (ip("::"), 0, Some(ip("2001:db8:1::1")), None),
        ]
    );
    assert_eq!(
        rule_sources(&routing),
        vec![(ip("10.1.0.5"), 32), (ip("2001:db8:1::5"), 128)]
    );
}

#[test]
fn hostile_or_bad_input_is_refused() {
    let many: Vec<String> = (0..10_000)
        .map(|i| format!("10.2.{}.{}/16", i / 250, i % 250))
        .collect();
    let err = plan(&many, &[]).unwrap_err();
    assert!(matches!(err, NetnsError::InvalidArgument(_)));
    assert!(err.to_string().contains("at most 16"));
    let routes: Vec<_> = (0..65).map(|i| (format!("10.9.{i}.0/24"), None)).collect();
    assert!(plan(&[], &routes).is_err());
    let near: Vec<_> = (0..60).map(|i| (format!("10.9.{i}.0/24"), None)).collect();
    let addrs: Vec<String> = (0..8).map(|i| format!("10.{i}.0.1/24")).collect();
    assert!(plan(&addrs, &near).is_err(), "connected routes count too");
    for bad in [
        "x",
        "10.0.0.1/33",
        "0.0.0.0/0",
        "224.0.0.1/4",
        "10.0.0.1/-1",
    ] {
        assert!(plan(&strings(&[bad]), &[]).is_err(), "{bad}");
    }
    let v6_via_v4 = [("::/0".to_owned(), Some("10.0.0.1".to_owned()))];
    assert!(plan(&[], &v6_via_v4).is_err());
    let bad_gw = [("0.0.0.0/0".to_owned(), Some("0.0.0.0".to_owned()))];
    assert!(plan(&[], &bad_gw).is_err());
}

#[test]
fn route_requests_name_the_table_interface_and_scope() {
    let routing = plan(
        &strings(&["192.0.2.5/24"]),
        &[("0.0.0.0/0".to_owned(), Some("192.0.2.1".to_owned()))],
    )
    .unwrap();
    let connected = route_request(10_004, 4, &routing.routes[0]).finish(1);
    let msg = parse_messages(&connected).unwrap()[0];
    assert_eq!(msg.kind, RTM_NEWROUTE);
    assert_eq!(
        msg.flags,
        NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE
    );
    let route = decode_route(msg.payload).unwrap().unwrap();
    assert_eq!(
        (route.table, route.oif, route.scope),
        (10_004, Some(4), RT_SCOPE_LINK)
    );
    assert!(is_route(&route, &routing.routes[0], 4));
    assert!(!is_route(&route, &routing.routes[0], 5));
    let attrs = parse_attributes(msg.payload, RouteHeader::LEN).unwrap();
    assert_eq!(
        crate::message::find_attr(&attrs, RTA_PREFSRC),
        Some(&[192, 0, 2, 5][..])
    );
    let default = route_request(10_004, 4, &routing.routes[1]).finish(2);
    let route = decode_route(parse_messages(&default).unwrap()[0].payload)
        .unwrap()
        .unwrap();
    assert!(route.is_default());
    assert_eq!(
        (route.gateway, route.scope),
        (Some(ip("192.0.2.1")), RT_SCOPE_UNIVERSE)
    );
}

#[test]
fn metric_requests_copy_the_route_with_the_new_priority() {
    let want = TableRoute {
        dst: ip("2001:db8:9::"),
        dst_len: 48,
        gateway: Some(ip("2001:db8:1::1")),
        prefsrc: None,
    };
    let bytes = route_request(RT_TABLE_MAIN, 3, &want).finish(1);
    let main = decode_route(parse_messages(&bytes).unwrap()[0].payload)
        .unwrap()
        .unwrap();
    assert_eq!(metric_of(&main), 0);
    let copy = metric_request(&main, 300).finish(2);
    let route = decode_route(parse_messages(&copy).unwrap()[0].payload)
        .unwrap()
        .unwrap();
    assert_eq!(
        (route.table, route.metric, route.oif),
        (RT_TABLE_MAIN, Some(300), Some(3))
    );
    assert!(is_route(&route, &want, 3));
}
