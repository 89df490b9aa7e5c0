//! Golden cases of `config::{summarize, conf_to_list, append_plugins}` (libcni's
//! `libcni/conf.go`), shared with the Python tests.

use std::fs;
use std::path::{Path, PathBuf};

use braid_cni::config::{append_plugins, conf_to_list, summarize};
use braid_cni::Result;
use serde_json::Value;

mod golden;

fn fixture_dir() -> PathBuf {
    golden::fixtures("config")
}

/// `"@file"` is the bytes of `inputs/file`; anything else is inline JSON.
fn bytes_of(value: &Value) -> Vec<u8> {
    if let Some(file) = value.as_str().and_then(|text| text.strip_prefix('@')) {
        return fs::read(fixture_dir().join("inputs").join(file)).expect("input file");
    }
    serde_json::to_vec(value).expect("inline input")
}

fn call(case: &Value) -> Result<Vec<u8>> {
    let input = bytes_of(&case["input"]);
    match case["function"].as_str().unwrap() {
        "summarize" => summarize(&input),
        "conf_to_list" => conf_to_list(&input),
        "append_plugins" => {
            let plugins: Vec<Vec<u8>> = case["plugins"]
                .as_array()
                .unwrap()
                .iter()
                .map(bytes_of)
                .collect();
            let refs: Vec<&[u8]> = plugins.iter().map(Vec::as_slice).collect();
            append_plugins(&input, &refs)
        }
        other => panic!("unknown function {other}"),
    }
}

fn run_case(path: &Path) {
    let case: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    let name = format!("{}: {}", path.display(), case["name"]);
    let outcome = call(&case);
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
    let expect: Value = serde_json::from_slice(&bytes_of(&case["expect"])).unwrap();
    // Compact, key order and number text as written: the bytes must match exactly.
    let wanted = serde_json::to_vec(&expect).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&wanted),
        "{name}"
    );
}

#[test]
fn every_config_case_matches_its_golden_file() {
    let paths = golden::json_cases(&fixture_dir());
    assert!(
        paths.len() >= 40,
        "the golden set is incomplete: {} cases",
        paths.len()
    );
    for path in &paths {
        run_case(path);
    }
}

#[test]
fn an_up_converted_conf_summarizes_like_a_list() {
    let conf = fs::read(fixture_dir().join("inputs/bridge.conf")).unwrap();
    let list = conf_to_list(&conf).unwrap();
    let summary: Value = serde_json::from_slice(&summarize(&list).unwrap()).unwrap();
    assert_eq!(summary["name"], "legacy");
    assert_eq!(summary["effectiveVersion"], "0.4.0");
    assert_eq!(summary["plugins"][0]["ipamType"], "host-local");
}
