//! Byte-level behaviour of result parsing: plugin ADD output (libcni's version fix-up, one
//! document only), `result_version`, error objects, and what `convert` refuses before decoding.
use braid_cni::codes;
use braid_cni::result::{convert, parse_error_object, parse_plugin_output, result_version};
use serde_json::{json, Value};

fn parsed(data: &[u8], config_version: &str) -> Value {
    let out = parse_plugin_output(data, config_version).expect("plugin output parses");
    serde_json::from_slice(&out).expect("output is JSON")
}

#[test]
fn plugin_output_without_version_takes_the_config_version() {
    let out = parsed(
        br#"{"ips":[{"version":"4","address":"10.0.0.9/24"}]}"#,
        "0.4.0",
    );
    assert_eq!(
        out,
        json!({"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.9/24"}],"dns":{}})
    );
    let out = parsed(
        br#"{"cniVersion":"","ips":[{"address":"10.0.0.9/24"}]}"#,
        "1.0.0",
    );
    assert_eq!(
        out,
        json!({"cniVersion":"1.0.0","ips":[{"address":"10.0.0.9/24"}]})
    );
}

#[test]
fn plugin_output_null_or_non_string_version_takes_the_config_version() {
    assert_eq!(parsed(b"null", "1.1.0"), json!({"cniVersion":"1.1.0"}));
    assert_eq!(
        parsed(b"  null\n", "0.3.1"),
        json!({"cniVersion":"0.3.1","dns":{}})
    );
    assert_eq!(
        parsed(br#"{"cniVersion":7}"#, "0.4.0"),
        json!({"cniVersion":"0.4.0","dns":{}})
    );
    assert_eq!(parsed(b"{}", ""), json!({"cniVersion":"0.1.0","dns":{}}));
}

#[test]
fn plugin_output_keeps_its_own_version() {
    let out = parsed(
        br#"{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24"}}"#,
        "1.0.0",
    );
    assert_eq!(
        out,
        json!({"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24"},"dns":{}})
    );
}

#[test]
fn plugin_output_must_be_exactly_one_document() {
    for bad in [
        &b""[..],
        b"   ",
        b"{} {}",
        b"{\"cniVersion\":\"1.0.0\"}\n{}",
        b"log line\n{}",
        b"{",
    ] {
        let err = parse_plugin_output(bad, "1.0.0").expect_err("refused");
        assert_eq!(err.code, codes::PLUGIN_FAILURE, "{err}");
        assert!(err.msg.contains("not exactly one JSON document"), "{err}");
    }
    assert!(parse_plugin_output(b"\n {\"cniVersion\":\"1.0.0\"} \n\t", "1.0.0").is_ok());
}

#[test]
fn plugin_output_of_an_unknown_version_or_shape_is_refused() {
    let err =
        parse_plugin_output(br#"{"cniVersion":"1.2.0"}"#, "1.0.0").expect_err("unknown version");
    assert_eq!(
        (err.code, err.msg.as_str()),
        (
            codes::INCOMPATIBLE_VERSION,
            r#"unsupported CNI result version "1.2.0""#
        )
    );
    let err = parse_plugin_output(b"{}", "9.9.9").expect_err("unknown config version");
    assert_eq!(err.code, codes::INCOMPATIBLE_VERSION);
    let err = parse_plugin_output(b"[1]", "1.0.0").expect_err("not an object");
    assert_eq!(err.code, codes::DECODE_FAILURE);
    let err = parse_plugin_output(br#"{"ips":[{"address":7}]}"#, "1.0.0").expect_err("bad type");
    assert_eq!(err.code, codes::DECODE_FAILURE);
    assert!(
        err.msg
            .contains("ips[0].address: expected a string, found a number"),
        "{err}"
    );
}

#[test]
fn result_version_reads_and_checks_the_label() {
    assert_eq!(
        result_version(br#"{"cniVersion":"0.3.1"}"#).as_deref(),
        Ok("0.3.1")
    );
    assert_eq!(result_version(b"{}").as_deref(), Ok("0.1.0"));
    assert_eq!(
        result_version(br#"{"cniVersion":""}"#).as_deref(),
        Ok("0.1.0")
    );
    assert_eq!(result_version(b"null").as_deref(), Ok("0.1.0"));
    assert_eq!(
        result_version(br#"{"cniVersion":"0.5.0"}"#).map_err(|e| e.code),
        Err(codes::INCOMPATIBLE_VERSION)
    );
    assert_eq!(
        result_version(br#"{"cniVersion":1}"#).map_err(|e| e.code),
        Err(codes::DECODE_FAILURE)
    );
    assert_eq!(
        result_version(b"nope").map_err(|e| e.code),
        Err(codes::DECODE_FAILURE)
    );
}

#[test]
fn error_objects_decode_with_or_without_optional_fields() {
    let e = parse_error_object(br#"{"code":7,"msg":"bad name"}"#).expect("decodes");
    assert_eq!(
        (e.code, e.msg.as_str(), e.details.as_str()),
        (7, "bad name", "")
    );
    let e = parse_error_object(
        br#"{"cniVersion":"1.0.0","code":999,"msg":"x","details":"y","extra":1}"#,
    )
    .expect("decodes");
    assert_eq!(
        (e.code, e.msg.as_str(), e.details.as_str()),
        (999, "x", "y")
    );
}

#[test]
fn malformed_error_objects_are_code_100() {
    let cases: [&[u8]; 8] = [
        b"",
        b"garbage",
        br#"{"msg":"no code"}"#,
        br#"{"code":-1,"msg":"x"}"#,
        br#"{"code":1.5,"msg":"x"}"#,
        br#"{"code":"7","msg":"x"}"#,
        br#"{"code":7}"#,
        br#"{"code":7,"msg":"x","details":3}"#,
    ];
    for data in cases {
        let err = parse_error_object(data).expect_err("refused");
        assert_eq!(err.code, codes::PLUGIN_FAILURE, "{err}");
        assert!(
            err.msg.contains("error parsing its diagnostic message"),
            "{err}"
        );
    }
}

#[test]
fn convert_refuses_what_is_not_one_json_result() {
    for bad in [
        &b""[..],
        b"{",
        b"{} {}",
        b"\"1.0.0\"",
        b"[]",
        br#"{"cniVersion":["1.0.0"]}"#,
    ] {
        let err = convert(bad, "1.0.0").expect_err("refused");
        assert_eq!(err.code, codes::DECODE_FAILURE, "{err}");
    }
}

#[test]
fn convert_decodes_before_looking_for_a_converter() {
    let err =
        convert(br#"{"cniVersion":"0.4.0","ips":"x"}"#, "9.0.0").expect_err("bad shape first");
    assert_eq!(err.code, codes::DECODE_FAILURE);
    let err = convert(br#"{"cniVersion":"0.4.0"}"#, "1.0").expect_err("targets are exact");
    assert_eq!(err.msg, "no converter for CNI result version 0.4.0 to 1.0");
}

#[test]
fn deeply_nested_input_is_an_error_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(
        convert(deep.as_bytes(), "1.0.0").map_err(|e| e.code),
        Err(codes::DECODE_FAILURE)
    );
    assert_eq!(
        parse_plugin_output(deep.as_bytes(), "1.0.0").map_err(|e| e.code),
        Err(codes::PLUGIN_FAILURE)
    );
    let nested_ips = format!(
        r#"{{"cniVersion":"1.0.0","ips":{}{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    assert!(convert(nested_ips.as_bytes(), "0.4.0").is_err());
}
