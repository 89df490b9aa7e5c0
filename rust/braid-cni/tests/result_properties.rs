//! Property tests: no input makes a parser or converter panic (every failure is a `CniError`),
//! and generated valid results of each family round-trip losslessly where libcni is lossless
//! (0.1↔0.2, 0.3.x/0.4.0 among themselves, 1.0↔1.1, 0.2.0→1.0.0→0.2.0).
use std::net::{Ipv4Addr, Ipv6Addr};

use braid_cni::result::{convert, parse_error_object, parse_plugin_output, result_version};
use braid_cni::version::{self, ALL};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn v4() -> impl Strategy<Value = String> {
    any::<u32>().prop_map(|n| Ipv4Addr::from(n).to_string())
}

fn v6() -> impl Strategy<Value = String> {
    any::<u128>().prop_filter_map("mapped addresses print as IPv4", |n| {
        let addr = Ipv6Addr::from(n);
        addr.to_ipv4_mapped().is_none().then(|| addr.to_string())
    })
}

fn cidr(v6_family: bool) -> BoxedStrategy<String> {
    if v6_family {
        (v6(), 0..=128_u8)
            .prop_map(|(a, p)| format!("{a}/{p}"))
            .boxed()
    } else {
        (v4(), 0..=32_u8)
            .prop_map(|(a, p)| format!("{a}/{p}"))
            .boxed()
    }
}

/// Inserts `key` only when `value` is set, as libcni's `omitempty` does.
fn with(mut obj: Value, key: &str, value: Option<Value>) -> Value {
    if let (Value::Object(map), Some(v)) = (&mut obj, value) {
        map.insert(key.to_owned(), v);
    }
    obj
}

fn route(v6_family: bool, extras: bool) -> impl Strategy<Value = Value> {
    let gw = if v6_family {
        v6().boxed()
    } else {
        v4().boxed()
    };
    let extra = if extras {
        (1..9000_i64, 0..3_i64, prop::option::of(0..300_i64)).boxed()
    } else {
        Just((0, 0, None)).boxed()
    };
    (cidr(v6_family), prop::option::of(gw), extra).prop_map(|(dst, gw, (mtu, priority, table))| {
        let r = with(json!({ "dst": dst }), "gw", gw.map(Value::from));
        let r = with(r, "mtu", (mtu != 0 && mtu % 2 == 0).then(|| mtu.into()));
        let r = with(r, "priority", (priority != 0).then(|| priority.into()));
        with(r, "table", table.map(Value::from))
    })
}

fn dns() -> impl Strategy<Value = Value> {
    let words = || prop::collection::vec("[a-z0-9.:]{1,12}", 0..3);
    (words(), "[a-z.]{0,10}", words(), words()).prop_map(|(ns, domain, search, options)| {
        let mut m = Map::new();
        for (key, list) in [
            ("nameservers", ns),
            ("search", search),
            ("options", options),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), list.into());
            }
        }
        if !domain.is_empty() {
            m.insert("domain".into(), domain.into());
        }
        Value::Object(m)
    })
}

fn legacy_ip(v6_family: bool) -> impl Strategy<Value = Value> {
    let gw = if v6_family {
        v6().boxed()
    } else {
        v4().boxed()
    };
    (
        cidr(v6_family),
        prop::option::of(gw),
        prop::collection::vec(route(v6_family, false), 0..3),
    )
        .prop_map(|(ip, gw, routes)| {
            let e = with(json!({ "ip": ip }), "gateway", gw.map(Value::from));
            with(e, "routes", (!routes.is_empty()).then(|| routes.into()))
        })
}

/// A 0.1.0/0.2.0 result with at least one address, printed as libcni prints it.
fn legacy_result() -> impl Strategy<Value = Value> {
    (
        prop::option::of(legacy_ip(false)),
        prop::option::of(legacy_ip(true)),
        dns(),
    )
        .prop_filter("an address is needed", |(a, b, _)| {
            a.is_some() || b.is_some()
        })
        .prop_map(|(ip4, ip6, dns)| with(with(json!({ "dns": dns }), "ip4", ip4), "ip6", ip6))
}

fn modern_ip(with_version: bool) -> impl Strategy<Value = Value> {
    (any::<bool>(), prop::option::of(0..4_i64)).prop_flat_map(move |(is6, interface)| {
        let gw = if is6 { v6().boxed() } else { v4().boxed() };
        (cidr(is6), prop::option::of(gw)).prop_map(move |(address, gw)| {
            let ip = with(
                json!({ "address": address }),
                "gateway",
                gw.map(Value::from),
            );
            let ip = with(ip, "interface", interface.map(Value::from));
            with(
                ip,
                "version",
                with_version.then(|| if is6 { "6" } else { "4" }.into()),
            )
        })
    })
}

fn interface(extras: bool) -> impl Strategy<Value = Value> {
    (
        "[a-z0-9]{0,8}",
        prop::option::of("[0-9a-f:]{17}"),
        prop::option::of("/run/netns/[a-z]{1,6}"),
        0..2_i64,
    )
        .prop_map(move |(name, mac, sandbox, mtu)| {
            let i = with(json!({ "name": name }), "mac", mac.map(Value::from));
            let i = with(i, "sandbox", sandbox.map(Value::from));
            with(i, "mtu", (extras && mtu == 1).then(|| 1500.into()))
        })
}

/// A 0.3.x/0.4.0 (`family_040`) or 1.x result, printed as libcni prints it.
fn modern_result(family_040: bool) -> impl Strategy<Value = Value> {
    let routes = prop::collection::vec(any::<bool>().prop_flat_map(|is6| route(is6, true)), 0..3);
    (
        prop::collection::vec(interface(!family_040), 0..3),
        prop::collection::vec(modern_ip(family_040), 0..4),
        routes,
        dns(),
    )
        .prop_map(move |(interfaces, ips, routes, dns)| {
            let mut m = Map::new();
            for (key, list) in [("interfaces", interfaces), ("ips", ips), ("routes", routes)] {
                if !list.is_empty() {
                    m.insert(key.into(), list.into());
                }
            }
            if family_040 || dns.as_object().is_some_and(|d| !d.is_empty()) {
                m.insert("dns".into(), dns);
            }
            Value::Object(m)
        })
}

fn labelled(result: &Value, version: &str) -> Vec<u8> {
    let mut result = result.clone();
    if let Value::Object(map) = &mut result {
        map.insert("cniVersion".into(), version.into());
    }
    serde_json::to_vec(&result).expect("serialisable")
}

/// Converts along `path` and returns the final result, stripped of nothing.
fn walk(start: &[u8], path: &[&str]) -> Value {
    let mut data = start.to_vec();
    for to in path {
        data = convert(&data, to).unwrap_or_else(|e| panic!("conversion to {to} failed: {e}"));
    }
    serde_json::from_slice(&data).expect("JSON output")
}

/// Arbitrary JSON biased towards result vocabulary, so decoding gets deep before failing.
fn json_value() -> impl Strategy<Value = Value> {
    let word = prop::sample::select(vec![
        "cniVersion",
        "ips",
        "ip4",
        "ip6",
        "ip",
        "interfaces",
        "routes",
        "dns",
        "address",
        "dst",
        "gw",
        "gateway",
        "version",
        "interface",
        "mtu",
        "table",
        "scope",
        "name",
        "code",
        "msg",
        "details",
        "supportedVersions",
        "1.0.0",
        "0.4.0",
        "0.2.0",
        "4",
        "6",
        "10.0.0.1/8",
        "::/0",
        "10.0.0.1",
        "",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        word.clone().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::vec((word.clone(), inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

fn exercise_everything(data: &[u8]) {
    for to in ALL.iter().copied().chain(["", "0.5.0"]) {
        let _ = convert(data, to);
        let _ = parse_plugin_output(data, to);
    }
    let _ = result_version(data);
    let _ = parse_error_object(data);
    let _ = version::parse_version_output(data);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..256)) {
        exercise_everything(&data);
    }

    #[test]
    fn arbitrary_json_never_panics(value in json_value()) {
        exercise_everything(&serde_json::to_vec(&value).expect("serialisable"));
    }

    #[test]
    fn legacy_results_round_trip(result in legacy_result()) {
        let want = json!(result);
        let start = labelled(&result, "0.1.0");
        prop_assert_eq!(walk(&start, &["0.2.0", "0.1.0"]), with(want.clone(), "cniVersion", Some("0.1.0".into())));
        let start = labelled(&result, "0.2.0");
        prop_assert_eq!(walk(&start, &["1.0.0", "0.2.0"]), with(want, "cniVersion", Some("0.2.0".into())));
    }

    #[test]
    fn results_040_round_trip_among_themselves(result in modern_result(true)) {
        let start = labelled(&result, "0.3.0");
        let want = with(result, "cniVersion", Some("0.3.0".into()));
        prop_assert_eq!(walk(&start, &["0.4.0", "0.3.1", "0.3.0"]), want);
    }

    #[test]
    fn results_100_round_trip(result in modern_result(false)) {
        let start = labelled(&result, "1.1.0");
        let want = with(result, "cniVersion", Some("1.1.0".into()));
        prop_assert_eq!(walk(&start, &["1.0.0", "1.1.0"]), want);
    }
}
