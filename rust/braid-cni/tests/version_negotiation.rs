//! Versions: libcni's list-version selection (the `libcni/conf_test.go` cases), braid's
//! negotiation against plugins' VERSION output, and VERSION decoding (libcni's `pkg/version`).
use std::cmp::Ordering;

use braid_cni::codes;
use braid_cni::version::{
    compare, negotiate, parse_version_output, select_list_version, supports_check,
    supports_gc_and_status, ALL, CURRENT,
};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn selection_follows_libcni_conf_test_cases() {
    assert_eq!(
        select_list_version("", &strings(&["1.1.0", "0.4.0", "1.0.0"])),
        "1.1.0"
    );
    assert_eq!(
        select_list_version("", &strings(&["99.0.0", "1.1.0", "0.4.0", "1.0.0"])),
        "1.1.0"
    );
    assert_eq!(
        select_list_version("1.0.0", &strings(&["0.1.0", "0.4.0"])),
        "1.0.0"
    );
    assert_eq!(select_list_version("1.2.3", &[]), "1.2.3");
    assert_eq!(select_list_version("", &[]), "");
}

#[test]
fn selection_ignores_newer_and_unparseable_entries() {
    assert_eq!(select_list_version("1.2.3", &strings(&["0.4.0"])), "0.4.0");
    assert_eq!(
        select_list_version("0.3.1", &strings(&["2.0.0", "x.y", "1.0.0"])),
        "1.0.0"
    );
    assert_eq!(select_list_version("0.4.0", &strings(&["9.0.0"])), "0.4.0");
}

#[test]
fn negotiation_picks_the_highest_version_every_plugin_supports() {
    let debian = strings(&["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"]);
    let list = strings(&["0.4.0", "1.0.0", "1.1.0"]);
    assert_eq!(
        negotiate("", &list, &[debian.clone(), debian.clone()]).as_deref(),
        Ok("1.0.0")
    );
    let old = strings(&["0.3.1", "0.4.0"]);
    assert_eq!(
        negotiate("1.1.0", &list, &[debian.clone(), old]).as_deref(),
        Ok("0.4.0")
    );
    let all = strings(&ALL);
    assert_eq!(negotiate("1.1.0", &list, &[all]).as_deref(), Ok("1.1.0"));
    assert_eq!(negotiate("", &[], &[debian]).as_deref(), Ok("0.1.0"));
}

#[test]
fn negotiation_without_plugins_is_libcni_selection() {
    let list = strings(&["0.4.0", "1.0.0", "9.9.9"]);
    assert_eq!(negotiate("0.3.1", &list, &[]).as_deref(), Ok("1.0.0"));
    assert_eq!(negotiate("", &[], &[]).as_deref(), Ok(""));
}

#[test]
fn negotiation_failure_is_code_1_listing_every_side() {
    let err = negotiate(
        "1.1.0",
        &[],
        &[strings(&["0.4.0", "1.0.0"]), strings(&["1.1.0"])],
    )
    .expect_err("no overlap");
    assert_eq!(err.code, codes::INCOMPATIBLE_VERSION);
    assert!(err.msg.contains("\"1.1.0\""), "{err}");
    assert!(
        err.msg.contains("plugin 0 supports [0.4.0, 1.0.0]"),
        "{err}"
    );
    assert!(err.msg.contains("plugin 1 supports [1.1.0]"), "{err}");
    let err = negotiate("1.2.0", &[], &[strings(&ALL)]).expect_err("unknown list version");
    assert_eq!(err.code, codes::INCOMPATIBLE_VERSION);
}

#[test]
fn version_output_decodes_with_libcni_rules() {
    let debian =
        b"{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"1.0.0\"]}\n";
    assert_eq!(
        parse_version_output(debian),
        Ok(strings(&["0.1.0", "0.2.0", "1.0.0"]))
    );
    assert_eq!(
        parse_version_output(br#"{"cniVersion":"0.2.0"}"#),
        Ok(strings(&["0.1.0", "0.2.0"]))
    );
    assert_eq!(
        parse_version_output(br#"{"cniVersion":"0.2.0","supportedVersions":[]}"#),
        Ok(strings(&["0.1.0", "0.2.0"]))
    );
}

#[test]
fn malformed_version_output_is_code_6_naming_the_problem() {
    let cases: [(&[u8], &str); 7] = [
        (
            br#"{"supportedVersions":["1.0.0"]}"#,
            "missing field cniVersion",
        ),
        (
            br#"{"cniVersion":"","supportedVersions":["1.0.0"]}"#,
            "missing field cniVersion",
        ),
        (
            br#"{"cniVersion":"1.0.0"}"#,
            "missing field supportedVersions",
        ),
        (
            br#"{"cniVersion":"1.0.0","supportedVersions":"1.0.0"}"#,
            "supportedVersions is not a list",
        ),
        (
            br#"{"cniVersion":"1.0.0","supportedVersions":["1.0.0",1]}"#,
            "supportedVersions[1]",
        ),
        (
            b"CNI protocol versions supported: 0.1.0",
            "not one JSON document",
        ),
        (b"[]", "not a JSON object"),
    ];
    for (data, want) in cases {
        let err = parse_version_output(data).expect_err("refused");
        assert_eq!(err.code, codes::DECODE_FAILURE, "{err}");
        assert!(err.msg.contains(want), "{err} should mention {want}");
    }
}

#[test]
fn comparison_and_verb_gates() {
    assert_eq!(compare("0.3.1", "0.3.0"), Some(Ordering::Greater));
    assert_eq!(compare("", "0.1.0"), Some(Ordering::Equal));
    assert_eq!(compare("1.10.0", "1.9.0"), Some(Ordering::Greater));
    assert_eq!(compare("1.0.0", "bogus"), None);
    let check: Vec<bool> = ALL.iter().map(|v| supports_check(v)).collect();
    assert_eq!(check, [false, false, false, false, true, true, true]);
    let gc: Vec<bool> = ALL.iter().map(|v| supports_gc_and_status(v)).collect();
    assert_eq!(gc, [false, false, false, false, false, false, true]);
    assert_eq!(CURRENT, "1.1.0");
}
