//! Golden cases of `inject::plugin_stdin`, shared with the Python tests.

use std::fs;
use std::path::{Path, PathBuf};

use braid_cni::inject::{plugin_stdin, StdinRequest};
use serde_json::Value;

mod golden;

fn fixture_dir() -> PathBuf {
    golden::fixtures("stdin")
}

/// The bytes of an input: `"@file"` reads `inputs/file` verbatim, anything else is inline JSON.
fn input_bytes(case: &Value, key: &str) -> Option<Vec<u8>> {
    let value = case.get(key)?;
    if let Some(file) = value.as_str().and_then(|text| text.strip_prefix('@')) {
        return Some(fs::read(fixture_dir().join("inputs").join(file)).expect("input file"));
    }
    Some(serde_json::to_vec(value).expect("inline input"))
}

/// Asserts that every object in `actual` lists its keys in the order of `expected`.
fn assert_key_order(actual: &Value, expected: &Value, path: &str, skip_prev_result: bool) {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            let a_keys: Vec<&String> = a.keys().collect();
            let e_keys: Vec<&String> = e.keys().collect();
            assert_eq!(a_keys, e_keys, "key order at {path}");
            for (key, value) in a {
                if skip_prev_result && path.is_empty() && key == "prevResult" {
                    continue;
                }
                assert_key_order(value, &e[key], &format!("{path}/{key}"), false);
            }
        }
        (Value::Array(a), Value::Array(e)) => {
            for (position, (x, y)) in a.iter().zip(e).enumerate() {
                assert_key_order(x, y, &format!("{path}/{position}"), false);
            }
        }
        _ => {}
    }
}

fn prev_result_converted(case: &Value, prev_result: Option<&[u8]>) -> bool {
    let Some(data) = prev_result else {
        return false;
    };
    let parsed: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
    parsed.get("cniVersion") != case.get("cni_version")
}

fn run_case(path: &Path) {
    let case: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    let name = format!("{}: {}", path.display(), case["name"]);
    let list = input_bytes(&case, "list").unwrap();
    let capability_args = input_bytes(&case, "capability_args");
    let prev_result = input_bytes(&case, "prev_result");
    let valid_attachments = input_bytes(&case, "valid_attachments");
    let args_cni = input_bytes(&case, "args_cni");
    let req = StdinRequest {
        network_list: &list,
        index: usize::try_from(case["index"].as_u64().unwrap()).unwrap(),
        command: case["command"].as_str().unwrap(),
        cni_version: case["cni_version"].as_str().unwrap(),
        capability_args: capability_args.as_deref(),
        prev_result: prev_result.as_deref(),
        valid_attachments: valid_attachments.as_deref(),
        args_cni: args_cni.as_deref(),
    };
    let outcome = plugin_stdin(&req);
    if let Some(error) = case.get("error") {
        let err = outcome.expect_err(&name);
        assert_eq!(
            u64::from(err.code),
            error["code"].as_u64().unwrap(),
            "{name}: {err}"
        );
        let wanted = error["contains"].as_str().unwrap();
        assert!(
            err.msg.contains(wanted),
            "{name}: {:?} lacks {wanted:?}",
            err.msg
        );
        return;
    }
    let out = outcome.unwrap_or_else(|err| panic!("{name}: {err}"));
    let actual: Value = serde_json::from_slice(&out).expect("stdin is JSON");
    // arbitrary_precision: numbers compare by their text, so 2.50 != 2.5.
    assert_eq!(actual, case["expect"], "{name}");
    let converted = prev_result_converted(&case, prev_result.as_deref());
    assert_key_order(&actual, &case["expect"], "", converted);
    assert!(!out.contains(&b'\n'), "{name}: output is compact");
}

#[test]
fn every_stdin_case_matches_its_golden_file() {
    let paths = golden::json_cases(&fixture_dir());
    assert!(
        paths.len() >= 45,
        "the golden set is incomplete: {} cases",
        paths.len()
    );
    for path in &paths {
        run_case(path);
    }
}

#[test]
fn number_text_survives_in_the_bytes() {
    let list = fs::read(fixture_dir().join("inputs/list.json")).unwrap();
    let req = StdinRequest {
        network_list: &list,
        index: 0,
        command: "ADD",
        cni_version: "1.1.0",
        capability_args: None,
        prev_result: None,
        valid_attachments: None,
        args_cni: None,
    };
    let out = String::from_utf8(plugin_stdin(&req).unwrap()).unwrap();
    assert!(out.contains(r#""x-vendor-weight":2.50"#), "{out}");
    assert!(out.contains(r#"{"burst":1.0e+3,"ratio":0.10}"#), "{out}");
    assert!(
        out.starts_with(r#"{"type":"bridge","bridge":"braid0","#),
        "{out}"
    );
}

#[test]
fn exponent_text_is_normalized_by_the_json_layer() {
    // serde_json keeps decimal and integer text verbatim but writes exponents as `e+N`/`e-N`;
    // the value is unchanged. Pinned here so a change of that behaviour is noticed.
    let list = br#"{"name":"n","plugins":[{"type":"bridge","a":1E3,"b":2.5e-7,"c":-0.0,"d":12345678901234567890123}]}"#;
    let req = StdinRequest {
        network_list: list,
        index: 0,
        command: "STATUS",
        cni_version: "1.1.0",
        capability_args: None,
        prev_result: None,
        valid_attachments: None,
        args_cni: None,
    };
    let out = String::from_utf8(plugin_stdin(&req).unwrap()).unwrap();
    assert!(
        out.contains(r#""a":1e+3,"b":2.5e-7,"c":-0.0,"d":12345678901234567890123"#),
        "{out}"
    );
}
