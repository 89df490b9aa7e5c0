//! Every golden conversion fixture in `tests/fixtures/cni/convert/` (worked examples E1–E10,
//! every ordered pair of versions on a rich dual-stack result, edge cases), compared
//! semantically: key order is irrelevant, values and number text are not.
use std::fs;
use std::path::PathBuf;

use braid_cni::result::{convert, parse_plugin_output};
use serde_json::Value;

mod golden;

fn fixture_root() -> PathBuf {
    golden::fixtures("convert")
}

fn fixtures(dir: &str) -> Vec<(String, Value)> {
    golden::json_cases(&fixture_root().join(dir))
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).expect("fixture readable");
            (
                p.display().to_string(),
                serde_json::from_str(&text).expect("fixture is JSON"),
            )
        })
        .collect()
}

/// Runs one fixture; `Err` describes the mismatch.
fn run(case: &Value) -> Result<(), String> {
    let input = serde_json::to_vec(&case["input"]).map_err(|e| e.to_string())?;
    let to_version = case["to_version"]
        .as_str()
        .ok_or("fixture without to_version")?;
    let outcome = match case.get("config_version").and_then(Value::as_str) {
        Some(config) => {
            parse_plugin_output(&input, config).and_then(|parsed| convert(&parsed, to_version))
        }
        None => convert(&input, to_version),
    };
    match (outcome, case.get("expect"), case.get("error")) {
        (Ok(out), Some(expect), None) => {
            let got: Value =
                serde_json::from_slice(&out).map_err(|e| format!("output is not JSON: {e}"))?;
            if &got == expect {
                Ok(())
            } else {
                Err(format!("got {got}\nwant {expect}"))
            }
        }
        (Err(err), None, Some(want)) => {
            let code = want["code"].as_u64().ok_or("error fixture without code")?;
            let contains = want["contains"]
                .as_str()
                .ok_or("error fixture without contains")?;
            if u64::from(err.code) == code && err.msg.contains(contains) {
                Ok(())
            } else {
                Err(format!(
                    "got error {err}, want code {code} containing {contains:?}"
                ))
            }
        }
        (Ok(out), _, Some(want)) => Err(format!(
            "got {}, want error {want}",
            String::from_utf8_lossy(&out)
        )),
        (Err(err), Some(expect), _) => Err(format!("got error {err}, want {expect}")),
        _ => Err("fixture needs exactly one of expect and error".into()),
    }
}

fn run_dir(dir: &str, expected_count: usize) {
    let cases = fixtures(dir);
    assert!(
        cases.len() >= expected_count,
        "{dir}: {} fixtures, want at least {expected_count}",
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(path, case)| run(case).err().map(|why| format!("{path}:\n{why}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn worked_examples_e1_to_e10() {
    run_dir("examples", 15);
}

#[test]
fn every_ordered_pair_of_versions() {
    run_dir("pairs", 49);
}

#[test]
fn edge_cases() {
    run_dir("edge", 16);
}

#[test]
fn same_version_returns_the_exact_input_bytes() {
    for (path, case) in fixtures("pairs") {
        let to = case["to_version"].as_str().expect("to_version");
        if case["input"]["cniVersion"] == to {
            let input = serde_json::to_vec_pretty(&case["input"]).expect("serialisable");
            assert_eq!(convert(&input, to).expect(&path), input, "{path}");
        }
    }
}
