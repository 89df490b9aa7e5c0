//! The netlink decoders of `braid_netns` behind source routing: `rule::decode_rule` and
//! `route::decode_route` read what the kernel reports about a pod's namespace, whose rules and
//! routes anyone privileged in the pod may have made. The input is a reply as the socket reads
//! it: split into messages (`message::parse_messages`), each payload decoded as a rule and as
//! a route. Properties: bad bytes are `Malformed`, never a panic; what decodes is IPv4 or IPv6
//! with addresses of its family; and the rule and table route braid would build from the
//! input's first bytes decode back to what they were built from, a rule's delete request
//! naming the same rule.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use braid_netns::header::{AF_INET, AF_INET6};
use braid_netns::message::parse_messages;
use braid_netns::route::{decode_route, Route};
use braid_netns::rule::{self, decode_rule, Rule, FR_ACT_TO_TBL};
use braid_netns::source_routing::{route_request, TableRoute};
use braid_netns::NetnsError;

/// Checks the decoders on `data` as a reply, then the round trips of values taken from it.
pub fn check(data: &[u8]) {
    match parse_messages(data) {
        Ok(messages) => {
            for message in messages {
                check_rule(decode_rule(message.payload));
                check_route(decode_route(message.payload));
            }
        }
        Err(err) => malformed(&err),
    }
    let mut values = Values(data);
    rule_round_trip(&mut values);
    route_round_trip(&mut values);
}

fn malformed(err: &NetnsError) {
    assert!(
        matches!(err, NetnsError::Malformed(_)),
        "not Malformed: {err}"
    );
    assert!(!err.to_string().is_empty());
}

fn family_of(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        AF_INET
    } else {
        AF_INET6
    }
}

fn check_rule(decoded: Result<Option<Rule>, NetnsError>) {
    match decoded {
        Ok(Some(rule)) => {
            assert!(matches!(rule.family, AF_INET | AF_INET6), "{rule:?}");
            if let Some((src, _)) = rule.src {
                assert_eq!(family_of(src), rule.family, "{rule:?}");
            }
        }
        Ok(None) => {}
        Err(err) => malformed(&err),
    }
}

fn check_route(decoded: Result<Option<Route>, NetnsError>) {
    match decoded {
        Ok(Some(route)) => {
            assert!(matches!(route.family, AF_INET | AF_INET6), "{route:?}");
            assert_eq!(family_of(route.dst), route.family, "{route:?}");
            assert!(route.ifname.is_none(), "{route:?}");
        }
        Ok(None) => {}
        Err(err) => malformed(&err),
    }
}

/// The input's bytes as values, zeros once they run out.
struct Values<'a>(&'a [u8]);

impl Values<'_> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }

    fn u32(&mut self) -> u32 {
        u32::from_ne_bytes(self.bytes())
    }

    /// An address of either family and a prefix length that fits it.
    fn prefix(&mut self) -> (IpAddr, u8) {
        let [kind, len] = self.bytes();
        if kind & 1 == 0 {
            (IpAddr::V4(Ipv4Addr::from(self.bytes::<4>())), len % 33)
        } else {
            (IpAddr::V6(Ipv6Addr::from(self.bytes::<16>())), len % 129)
        }
    }
}

fn one_payload(message: &[u8]) -> Vec<u8> {
    let messages = parse_messages(message).expect("braid's own request parses");
    assert_eq!(messages.len(), 1);
    messages[0].payload.to_vec()
}

fn rule_round_trip(values: &mut Values<'_>) {
    let (source, len) = values.prefix();
    let (table, priority) = (values.u32(), values.u32());
    let request = rule::add_request(source, len, table, priority).finish(1);
    let rule = decode_rule(&one_payload(&request))
        .expect("braid's rule decodes")
        .expect("of a known family");
    assert_eq!(rule.src, Some((source, len)));
    assert_eq!((rule.table, rule.priority), (table, Some(priority)));
    assert_eq!((rule.family, rule.has_dst), (family_of(source), false));
    assert_eq!(rule.action, FR_ACT_TO_TBL);
    let delete = rule::delete_request(&rule).finish(2);
    let again = decode_rule(&one_payload(&delete)).expect("the delete request decodes");
    assert_eq!(
        again.as_ref(),
        Some(&rule),
        "the delete request names another rule"
    );
}

fn route_round_trip(values: &mut Values<'_>) {
    let (dst, dst_len) = values.prefix();
    let dst_len = dst_len.max(1); // a default route has no destination to compare
    let [with_gateway] = values.bytes();
    let (gateway, _) = values.prefix();
    let gateway =
        (with_gateway & 1 == 1 && family_of(gateway) == family_of(dst)).then_some(gateway);
    let (table, oif) = (values.u32(), values.u32());
    let want = TableRoute {
        dst,
        dst_len,
        gateway,
        prefsrc: None,
    };
    let request = route_request(table, oif, &want).finish(3);
    let route = decode_route(&one_payload(&request))
        .expect("braid's route decodes")
        .expect("of a known family");
    assert_eq!(
        (route.dst, route.dst_len, route.gateway),
        (dst, dst_len, gateway)
    );
    assert_eq!(
        (route.table, route.oif, route.metric),
        (table, Some(oif), None)
    );
}
