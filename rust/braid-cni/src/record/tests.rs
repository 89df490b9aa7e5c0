//! The decoder against the golden records of `tests/fixtures/records` (`cases.json`), which the
//! engine's tests read too.

use std::fs;
use std::path::PathBuf;

use serde_json::Value;

use super::{decode, Entry};

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
