//! `tests/fixtures/cache/`: result cache files read, and entry paths made, as the Python
//! runtime's tests expect from the same files.

use std::path::Path;

use braid_delegate::cache::{decode_result, entry_path, read_result};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/cache");

fn cases() -> Value {
    let data = std::fs::read(Path::new(FIXTURES).join("cases.json")).expect("cases");
    serde_json::from_slice(&data).expect("json")
}

#[test]
fn each_file_holds_the_result_the_fixture_says() {
    let cases = cases();
    let files = cases["files"].as_object().expect("files");
    assert!(files.len() >= 6);
    for (name, want) in files {
        let path = Path::new(FIXTURES).join(name);
        let decoded = decode_result(&std::fs::read(&path).expect("file"));
        if want.get("corrupt").is_some() {
            let err = decoded.expect_err(name);
            assert_eq!(err.code, 6, "{name}: {err}");
            assert_eq!(read_result(&path), None, "{name}");
            continue;
        }
        let got = decoded
            .expect(name)
            .map(|bytes| serde_json::from_slice::<Value>(&bytes).expect("result JSON"));
        let expected = (!want["result"].is_null()).then(|| want["result"].clone());
        assert_eq!(got, expected, "{name}");
        assert_eq!(
            read_result(&path).map(|b| serde_json::from_slice::<Value>(&b).expect("json")),
            expected,
            "{name}"
        );
    }
}

#[test]
fn entry_paths_are_made_as_the_fixture_says() {
    let cases = cases();
    for case in cases["paths"].as_array().expect("paths") {
        let parts: Vec<&str> = case["parts"]
            .as_array()
            .expect("parts")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let got = entry_path(Path::new("/cache"), parts[0], parts[1], parts[2]);
        if let Some(want) = case["path"].as_str() {
            assert_eq!(got.expect("path"), Path::new("/cache").join(want));
        } else {
            let err = got.expect_err("refused");
            assert_eq!(u64::from(err.code), case["code"].as_u64().expect("code"));
            assert_eq!(err.msg, case["msg"].as_str().expect("msg"));
        }
    }
}
