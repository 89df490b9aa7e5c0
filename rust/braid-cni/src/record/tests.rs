//! The decoder against the golden records of `tests/fixtures/records` (`cases.json`), which the
//! engine's tests read too.

use std::fs;
use std::path::PathBuf;

use serde_json::Value;

use super::{canonical, decode, Entry};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/records")
}

fn json_of(bytes: Option<&Vec<u8>>) -> Value {
    bytes.map_or(Value::Null, |b| serde_json::from_slice(b).expect("JSON"))
}

fn check_entry(entry: &Entry, want: &Value, case: &str) {
    let at = format!("{case}: {}", entry.ifname);
    assert_eq!(entry.state, want["state"], "{at}");
    assert_eq!(Value::from(entry.position), want["position"], "{at}");
    assert_eq!(Value::from(entry.is_list), want["isList"], "{at}");
    assert_eq!(Value::from(entry.is_default), want["isDefault"], "{at}");
    assert_eq!(
        json_of(entry.capability_args.as_ref()),
        want["capabilityArgs"],
        "{at}"
    );
    assert_eq!(json_of(entry.args_cni.as_ref()), want["argsCni"], "{at}");
    let result = json_of(entry.result.as_ref());
    let ips: Vec<&Value> = result["ips"]
        .as_array()
        .expect("ips")
        .iter()
        .map(|ip| &ip["address"])
        .collect();
    let wanted: Vec<&Value> = want["resultIps"].as_array().expect("ips").iter().collect();
    assert_eq!(ips, wanted, "{at}");
}

#[test]
fn every_golden_record_decodes_as_cases_json_says() {
    let cases: Value =
        serde_json::from_slice(&fs::read(fixtures().join("cases.json")).expect("cases"))
            .expect("cases.json");
    let listed = cases["cases"].as_array().expect("cases");
    assert!(listed.len() >= 9);
    for case in listed {
        let file = case["file"].as_str().expect("file");
        let data = fs::read(fixtures().join(file)).expect("fixture");
        let (entries, complete) = match decode(&data, "ctr1") {
            Ok(record) => {
                assert_eq!(case["decodes"], true, "{file} decoded");
                assert_eq!(record.container_id, "ctr1");
                assert_eq!(record.netns, "/run/netns/pod1");
                assert_eq!(record.pod_name, "web-0");
                assert_eq!(record.cni_args[3], ("K8S_POD_UID".into(), "uid-1".into()));
                let status = json_of(record.network_status.as_ref());
                assert_eq!(status[1]["interface"], "net1", "{file}");
                (record.attachments, true)
            }
            Err(damaged) => {
                assert_eq!(case["decodes"], false, "{file}: {}", damaged.error);
                assert_eq!(damaged.error.code, 5);
                assert!(damaged.error.msg.contains("container ctr1 is corrupt"));
                let details = case["details"].as_str().expect("details");
                assert!(
                    damaged.error.details.contains(details),
                    "{file}: {}",
                    damaged.error.details
                );
                (damaged.salvaged, damaged.complete)
            }
        };
        assert_eq!(Value::from(complete), case["complete"], "{file}: complete");
        let ifnames: Vec<&str> = entries.iter().map(|e| e.ifname.as_str()).collect();
        assert_eq!(Value::from(ifnames), case["ifnames"], "{file}");
        for entry in &entries {
            check_entry(entry, &cases["entries"][&entry.ifname], file);
        }
    }
}

#[test]
fn canonical_json_decodes_to_the_same_record_and_keeps_what_only_the_engine_reads() {
    let cases: Value =
        serde_json::from_slice(&fs::read(fixtures().join("cases.json")).expect("cases"))
            .expect("cases.json");
    for case in cases["cases"].as_array().expect("cases") {
        let file = case["file"].as_str().expect("file");
        let data = fs::read(fixtures().join(file)).expect("fixture");
        match (decode(&data, "ctr1"), canonical(&data, "ctr1")) {
            (Ok(record), Ok(json)) => {
                let again = decode(&json, "ctr1").expect("canonical JSON decodes");
                let format_2 =
                    |r: &super::Record| (r.capability_args.clone(), r.attachments.clone());
                assert_eq!(format_2(&again), format_2(&record), "{file}");
                let top: Value = serde_json::from_slice(&json).expect("JSON");
                for item in top["attachments"].as_array().expect("attachments") {
                    assert!(!item.get("result").is_some_and(Value::is_null), "{file}");
                }
            }
            (Err(damaged), Err((again, salvaged))) => {
                assert_eq!(damaged, again, "{file}");
                let items: Vec<Value> = serde_json::from_slice(&salvaged).expect("JSON");
                assert_eq!(items.len(), damaged.salvaged.len(), "{file}");
                for (item, entry) in items.iter().zip(&damaged.salvaged) {
                    assert_eq!(item["ifname"], entry.ifname.as_str(), "{file}");
                    assert_eq!(
                        item["capabilityArgs"],
                        json_of(entry.capability_args.as_ref()),
                        "{file}: whole"
                    );
                }
            }
            _ => panic!("{file}: canonical and decode disagree"),
        }
    }
    let data = fs::read(fixtures().join("v2-python.json")).expect("fixture");
    let json = canonical(&data, "ctr1").expect("decodes");
    let top: Value = serde_json::from_slice(&json).expect("JSON");
    assert_eq!(
        top["attachments"][1]["networkData"]["interfaceName"], "net1",
        "a member the engine alone reads is given back untouched"
    );
}

#[test]
fn an_entry_opted_into_source_routing_says_so() {
    let data = fs::read(fixtures().join("v2-whole.json")).expect("fixture");
    let mut record: Value = serde_json::from_slice(&data).expect("JSON");
    let entries = record["attachments"].as_array_mut().expect("attachments");
    assert!(entries.len() >= 2);
    entries[0]["routing"] = serde_json::json!({"metric": 200});
    entries[1]["routing"] = serde_json::json!({"sourceRouting": true, "metric": 5});
    let decoded = decode(record.to_string().as_bytes(), "ctr1").expect("decodes");
    let routed: Vec<bool> = decoded
        .attachments
        .iter()
        .map(|e| e.source_routing)
        .collect();
    assert_eq!(routed[..2], [false, true]);
    assert!(routed[2..].iter().all(|routed| !routed));

    for (bad, why) in [
        (
            serde_json::json!(true),
            "`routing` must be an object or null",
        ),
        (
            serde_json::json!({"sourceRouting": "yes"}),
            "`sourceRouting` must be a boolean",
        ),
    ] {
        record["attachments"][1]["routing"] = bad;
        let damaged = decode(record.to_string().as_bytes(), "ctr1").expect_err("damaged");
        assert!(damaged.error.details.contains(why), "{}", damaged.error);
    }
}
