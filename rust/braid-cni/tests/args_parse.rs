//! `CNI_ARGS` building and Go-compatible parsing (libcni's `pkg/types/args.go`).

use braid_cni::args::{build, parse};
use braid_cni::codes;
use proptest::prelude::*;

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn builds_without_escaping() {
    let built = build(&pairs(&[
        ("IgnoreUnknown", "1"),
        ("K8S_POD_NAME", "web-0"),
        ("IP", "10.0.0.2"),
    ]));
    assert_eq!(built, "IgnoreUnknown=1;K8S_POD_NAME=web-0;IP=10.0.0.2");
    assert_eq!(build(&[]), "");
}

#[test]
fn parses_like_load_args() {
    assert_eq!(parse("").unwrap(), vec![]);
    assert_eq!(
        parse("IgnoreUnknown=1;FOO=bar").unwrap(),
        pairs(&[("IgnoreUnknown", "1"), ("FOO", "bar")])
    );
    assert_eq!(parse("=").unwrap(), pairs(&[("", "")]));
    assert_eq!(parse("K=").unwrap(), pairs(&[("K", "")]));
    assert_eq!(
        parse("A=1;A=2").unwrap(),
        pairs(&[("A", "1"), ("A", "2")]),
        "duplicates kept in order"
    );
}

#[test]
fn refuses_pieces_without_exactly_one_equals_sign() {
    for (value, piece) in [
        ("FOO=a=b", "FOO=a=b"),
        ("FOO=bar;", ""),
        ("FOO", "FOO"),
        (";", ""),
        ("A=1;;B=2", ""),
    ] {
        let err = parse(value).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ENVIRONMENT, "{value}");
        assert_eq!(
            err.msg,
            format!("ARGS: invalid pair \"{piece}\""),
            "{value}"
        );
    }
}

proptest! {
    #[test]
    fn parse_inverts_build(items in prop::collection::vec(("[^;=]*", "[^;=]*"), 0..6)) {
        // One empty pair builds to "=", which parses back; no pairs build to "", which is none.
        prop_assert_eq!(parse(&build(&items)).unwrap(), items);
    }

    #[test]
    fn parse_never_panics(value in ".*") {
        match parse(&value) {
            Ok(found) => prop_assert_eq!(found.len(), value.split(';').count() - usize::from(value.is_empty())),
            Err(err) => prop_assert_eq!(err.code, codes::INVALID_ENVIRONMENT),
        }
    }
}
