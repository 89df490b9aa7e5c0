//! Decoding the attachment record (`docs/attachment-record.md`): a valid record, corrupt ones
//! (what still decodes is salvaged) and records of another kind or version.

use braid_cni::codes;
use braid_cni::record::{container_of, decode, Damaged, Record};
use serde_json::{json, Value};

fn valid() -> Value {
    json!({
        "containerId": "ctr1", "netns": "/run/netns/pod1",
        "kind": "braidAttachmentRecord", "version": 1, "cniVersion": "1.0.0",
        "cniArgs": [["IgnoreUnknown", "1"], ["K8S_POD_NAME", "web-0"]],
        "pluginDirs": ["/opt/cni/bin"], "podNamespace": "default", "podName": "web-0",
        "futureKey": {"ignored": true},
        "attachments": [
            {"name": "cluster", "networkName": "cluster", "ifname": "eth0",
             "config": "{\"cniVersion\":\"1.0.0\",\"name\":\"cluster\",\"plugins\":[{\"type\":\"bridge\"}]}",
             "position": 0, "isList": true, "isDefault": true,
             "label": "the default network 'cluster'",
             "capabilityArgs": {"portMappings": [{"hostPort": 8080}]},
             "state": "added", "result": {"cniVersion": "1.0.0", "ips": [{"address": "10.1.0.5/16"}]}},
            {"name": "default/net-a", "networkName": "net-a", "ifname": "net1",
             "config": "{\"cniVersion\":\"0.4.0\",\"name\":\"net-a\",\"type\":\"macvlan\"}",
             "position": 1, "isList": false, "argsCni": {"ips": ["10.2.2.42/24"]},
             "state": "planned"}
        ],
        "networkStatus": []
    })
}

fn decode_value(value: &Value) -> Result<Record, Damaged> {
    decode(&serde_json::to_vec(value).unwrap(), "ctr1")
}

#[test]
fn a_valid_record_decodes_with_every_field() {
    let record = decode_value(&valid()).unwrap();
    assert_eq!(record.container_id, "ctr1");
    assert_eq!(record.netns, "/run/netns/pod1");
    assert_eq!(record.cni_version, "1.0.0");
    assert_eq!(record.cni_args[1], ("K8S_POD_NAME".into(), "web-0".into()));
    assert_eq!(record.plugin_dirs, ["/opt/cni/bin"]);
    let [cluster, net_a] = record.attachments.as_slice() else {
        panic!("two attachments expected");
    };
    assert!(cluster.is_default && cluster.is_list);
    assert_eq!(cluster.display_name(), "the default network 'cluster'");
    assert_eq!(
        serde_json::from_slice::<Value>(cluster.capability_args.as_ref().unwrap()).unwrap(),
        json!({"portMappings": [{"hostPort": 8080}]})
    );
    let result: Value = serde_json::from_slice(cluster.result.as_ref().unwrap()).unwrap();
    assert_eq!(result["ips"][0]["address"], "10.1.0.5/16");
    assert_eq!((net_a.position, net_a.is_list), (1, false));
    assert_eq!(net_a.display_name(), "default/net-a");
    assert_eq!(net_a.result, None);
    assert_eq!(net_a.capability_args, None);
    assert_eq!(
        net_a.args_cni.as_deref(),
        Some(br#"{"ips":["10.2.2.42/24"]}"#.as_slice())
    );
}

#[test]
fn a_single_conf_is_up_converted_and_a_list_kept_verbatim() {
    let record = decode_value(&valid()).unwrap();
    let list: Value =
        serde_json::from_slice(&record.attachments[1].network_list().unwrap()).unwrap();
    assert_eq!(list["name"], "net-a");
    assert_eq!(list["cniVersion"], "0.4.0");
    assert_eq!(list["plugins"][0]["type"], "macvlan");
    let cluster = &record.attachments[0];
    assert_eq!(cluster.network_list().unwrap(), cluster.config.as_bytes());
}

#[test]
fn defaults_apply_to_absent_keys() {
    let minimal = json!({"containerId": "c", "netns": "",
        "kind": "braidAttachmentRecord", "version": 1,
        "attachments": [{"name": "n", "networkName": "n", "ifname": "eth0", "config": "{}"}]});
    let record = decode_value(&minimal).unwrap();
    let entry = &record.attachments[0];
    assert!(entry.is_list && !entry.is_default);
    assert_eq!((entry.position, entry.state.as_str()), (0, "planned"));
    assert!(record.cni_args.is_empty() && record.plugin_dirs.is_empty());
}

fn damaged(value: &Value) -> Damaged {
    decode_value(value).expect_err("must be refused")
}

#[test]
fn not_json_is_code_5_with_nothing_salvaged() {
    let err = decode(b"{\"containerId\": \"ctr1\", \"atta", "ctr1").unwrap_err();
    assert_eq!(err.error.code, codes::IO_FAILURE);
    assert!(
        err.error.msg.contains("container ctr1 is corrupt"),
        "{}",
        err.error
    );
    assert!(err.salvaged.is_empty());
}

#[test]
fn a_broken_entry_spoils_the_record_but_the_others_are_salvaged() {
    let mut record = valid();
    record["attachments"][0]["ifname"] = json!(7);
    let err = damaged(&record);
    assert_eq!(err.error.code, codes::IO_FAILURE);
    assert!(
        err.error.details.contains("attachments[0]"),
        "{}",
        err.error
    );
    let names: Vec<&str> = err.salvaged.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["default/net-a"]);
}

#[test]
fn a_missing_required_key_is_corrupt_and_entries_are_salvaged_in_plan_order() {
    let mut record = valid();
    record.as_object_mut().unwrap().remove("netns");
    record["attachments"].as_array_mut().unwrap().reverse();
    let err = damaged(&record);
    assert!(
        err.error.details.contains("`netns` is missing"),
        "{}",
        err.error
    );
    let positions: Vec<u64> = err.salvaged.iter().map(|e| e.position).collect();
    assert_eq!(positions, [0, 1]);
}

#[test]
fn another_kind_or_version_is_refused_but_its_entries_are_salvaged() {
    for (key, value) in [("kind", json!("multusCache")), ("version", json!(3))] {
        let mut record = valid();
        record[key] = value;
        let err = damaged(&record);
        assert_eq!(err.error.code, codes::IO_FAILURE);
        assert!(
            err.error.details.contains("unsupported record kind"),
            "{}",
            err.error
        );
        assert_eq!(err.salvaged.len(), 2);
    }
}

#[test]
fn wrong_kinds_of_optional_fields_are_corrupt() {
    for (key, value) in [
        ("cniArgs", json!([["only-one"]])),
        ("pluginDirs", json!("/opt/cni/bin")),
        ("attachments", json!({})),
        ("version", json!("1")),
    ] {
        let mut record = valid();
        record[key] = value;
        let err = damaged(&record);
        assert!(err.error.details.contains(key), "{key}: {}", err.error);
    }
}

#[test]
fn a_spare_file_names_its_container_through_the_trailing_spaces() {
    let mut spare = br#"{"containerId":"ctr-9","netns":"/run/netns/p","kind":"braidAttachmentRecord","version":1}"#.to_vec();
    spare.resize(16 * 1024, b' ');
    assert_eq!(container_of(&spare).as_deref(), Some("ctr-9"));
    assert!(
        decode(&spare, "ctr-9").is_ok(),
        "trailing spaces are JSON whitespace"
    );
    assert_eq!(
        container_of(&[b' '; 64]),
        None,
        "a blank spare names nobody"
    );
    assert_eq!(container_of(br#"{"containerId":"ctr-9","#), None, "torn");
    assert_eq!(container_of(br#"{"containerId":7}"#), None);
    assert_eq!(container_of(b"[1]"), None);
}
