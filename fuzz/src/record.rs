//! The attachment record's one decoder (`braid_cni::record`, docs/attachment-record.md): a
//! damaged record is code 5, a decoded record re-encodes (format 2, as the engine writes it)
//! to bytes that decode to the same record, and what salvage returns from any prefix of a
//! record, cut short or zero-filled as a power failure leaves it, is always an entry the
//! record held: salvage never invents one, and says `complete` only when it has them all.
use braid_cni::codes;
use braid_cni::record::{self, Entry, Record, RECORD_KIND, RECORD_VERSION};
use serde_json::{json, Map, Value};

const CONTAINER: &str = "fuzz-container";

/// Checks the decoder on `data`, and salvage on prefixes of what it decoded.
pub fn check(data: &[u8]) {
    let record = match record::decode(data, CONTAINER) {
        Ok(record) => record,
        Err(damaged) => {
            crate::assert_code(&damaged.error, &[codes::IO_FAILURE], "record");
            assert!(damaged.error.msg.contains(CONTAINER));
            return;
        }
    };
    assert_eq!(
        record::container_of(data),
        Some(record.container_id.clone())
    );
    let encoded = encode(&record);
    let again = record::decode(&encoded, CONTAINER).expect("a re-encoded record decodes");
    assert_eq!(
        again,
        Record {
            version: RECORD_VERSION,
            ..record.clone()
        },
        "a re-encoded record decodes to another record"
    );
    // Cut points chosen by the input: its last bytes, so the fuzzer steers them.
    let cuts = data.iter().rev().take(4).map(|b| usize::from(*b) * 97);
    let cuts = cuts.chain([encoded.len() / 2, encoded.len() - 1]);
    for cut in cuts {
        salvaged(&again, &encoded, cut % encoded.len());
    }
}

/// The record's bytes cut at `cut` (and zero-filled after it) salvage only entries it held.
fn salvaged(record: &Record, encoded: &[u8], cut: usize) {
    let mut zeroed = encoded.to_vec();
    zeroed[cut..].fill(0);
    for damaged_bytes in [&encoded[..cut], &zeroed[..]] {
        let Err(damaged) = record::decode(damaged_bytes, CONTAINER) else {
            panic!("a record cut at {cut} decoded whole");
        };
        crate::assert_code(&damaged.error, &[codes::IO_FAILURE], "cut record");
        let mut held = record.attachments.clone();
        for entry in &damaged.salvaged {
            let at = held.iter().position(|e| e == entry);
            let at = at.unwrap_or_else(|| panic!("salvage invented {entry:?} (cut at {cut})"));
            held.remove(at);
        }
        if damaged.complete {
            assert!(held.is_empty(), "salvage is `complete` without {held:?}");
        }
    }
}

/// The record as the engine writes it, format 2.
pub fn encode(record: &Record) -> Vec<u8> {
    let pairs: Vec<Value> = record.cni_args.iter().map(|(k, v)| json!([k, v])).collect();
    let mut top = Map::new();
    top.insert("kind".into(), RECORD_KIND.into());
    top.insert("version".into(), RECORD_VERSION.into());
    top.insert("containerId".into(), record.container_id.clone().into());
    top.insert("netns".into(), record.netns.clone().into());
    top.insert("cniVersion".into(), record.cni_version.clone().into());
    top.insert("cniArgs".into(), pairs.into());
    top.insert("pluginDirs".into(), record.plugin_dirs.clone().into());
    if let Some(args) = &record.capability_args {
        top.insert("capabilityArgs".into(), raw(args));
    }
    top.insert("podNamespace".into(), record.pod_namespace.clone().into());
    top.insert("podName".into(), record.pod_name.clone().into());
    top.insert("podUid".into(), record.pod_uid.clone().into());
    let entries: Vec<Value> = record.attachments.iter().map(entry).collect();
    top.insert("attachments".into(), entries.into());
    if let Some(status) = &record.network_status {
        top.insert("networkStatus".into(), raw(status));
    }
    serde_json::to_vec(&Value::Object(top)).expect("a record encodes")
}

fn entry(entry: &Entry) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), entry.name.clone().into());
    out.insert("networkName".into(), entry.network_name.clone().into());
    out.insert("ifname".into(), entry.ifname.clone().into());
    out.insert("config".into(), entry.config.clone().into());
    out.insert("position".into(), entry.position.into());
    out.insert("isList".into(), entry.is_list.into());
    out.insert("isDefault".into(), entry.is_default.into());
    out.insert("label".into(), entry.label.clone().into());
    if let Some(args) = &entry.args_cni {
        out.insert("argsCni".into(), raw(args));
    }
    if let Some(own) = &entry.own_capability_args {
        out.insert("capabilityArgs".into(), raw(own));
    }
    out.insert("ips".into(), entry.ips.clone().into());
    out.insert("mac".into(), entry.mac.clone().into());
    out.insert("defaultRoute".into(), entry.default_route.clone().into());
    out.insert("auxiliaryChain".into(), entry.auxiliary_chain.into());
    out.insert("state".into(), entry.state.clone().into());
    out.insert(
        "result".into(),
        entry.result.as_deref().map_or(Value::Null, raw),
    );
    out.insert("error".into(), entry.error.clone().into());
    Value::Object(out)
}

fn raw(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("the decoder hands back JSON")
}
