//! `tests/fixtures/delegate/exits.json`: plugin exits and VERSION answers judged as the Python
//! runtime's tests expect from the same file.

use braid_delegate::judge::{judge_exit, supported_versions};
use serde_json::Value;

fn golden() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/delegate/exits.json"
    );
    serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json")
}

fn text<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key].as_str().unwrap_or_default()
}

fn returncode(case: &Value) -> i32 {
    i32::try_from(case["returncode"].as_i64().expect("returncode")).expect("i32")
}

fn assert_error(name: &str, want: &Value, code: u32, msg: &str, details: &str) {
    assert_eq!(
        u64::from(code),
        want["code"].as_u64().expect("code"),
        "{name}"
    );
    assert_eq!(msg, want["msg"].as_str().expect("msg"), "{name}");
    if let Some(expected) = want.get("details") {
        assert_eq!(details, expected.as_str().expect("details"), "{name}");
    }
}

#[test]
fn exits_are_judged_as_the_fixture_says() {
    let golden = golden();
    let cases = golden["exits"].as_array().expect("exits");
    assert!(cases.len() >= 5);
    for case in cases {
        let name = text(case, "name");
        let judged = judge_exit(
            returncode(case),
            text(case, "stdout").as_bytes(),
            text(case, "stderr").as_bytes(),
            text(case, "plugin"),
        );
        match (&case["error"], judged) {
            (Value::Null, Ok(())) => assert_eq!(case["ok"], true, "{name}"),
            (want @ Value::Object(_), Err(failure)) => {
                let err = &failure.error;
                assert_error(name, want, err.code, &err.msg, &err.details);
                assert_eq!(failure.plugin_msg, text(want, "plugin_msg"), "{name}");
            }
            (want, got) => panic!("{name}: wanted {want}, got {got:?}"),
        }
    }
}

#[test]
fn version_answers_are_read_as_the_fixture_says() {
    let golden = golden();
    for case in golden["versions"].as_array().expect("versions") {
        let name = text(case, "name");
        let got = supported_versions(
            returncode(case),
            text(case, "stdout").as_bytes(),
            text(case, "stderr").as_bytes(),
            text(case, "plugin"),
        );
        match (&case["supported"], got) {
            (Value::Array(want), Ok(supported)) => {
                let want: Vec<&str> = want.iter().filter_map(Value::as_str).collect();
                assert_eq!(supported, want, "{name}");
            }
            (Value::Null, Err(err)) => {
                assert_error(name, &case["error"], err.code, &err.msg, &err.details);
            }
            (want, got) => panic!("{name}: wanted {want}, got {got:?}"),
        }
    }
}

#[test]
fn runs_without_output_fail_as_the_fixture_says() {
    use braid_delegate::judge::{no_output_error, NoOutput};
    use braid_delegate::MAX_STDOUT_BYTES;
    use std::time::Duration;

    let golden = golden();
    for case in golden["no_output"].as_array().expect("no_output") {
        let name = text(case, "name");
        let errno = i32::try_from(case["errno"].as_i64().unwrap_or(0)).expect("errno");
        let err = std::io::Error::from_raw_os_error(errno);
        let why = match text(case, "kind") {
            "timeout" => NoOutput::TimedOut(case["timeout"].as_f64().map(Duration::from_secs_f64)),
            "overflow" => NoOutput::StdoutTooLarge(MAX_STDOUT_BYTES),
            "io" => NoOutput::Exchange(&err),
            "spawn" => NoOutput::Start(&err),
            other => panic!("{name}: unknown kind {other}"),
        };
        let got = no_output_error(std::path::Path::new(text(case, "path")), &why);
        assert_error(name, &case["error"], got.code, &got.msg, &got.details);
    }
}
