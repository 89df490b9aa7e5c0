//! A decoded record given back as JSON in one shape ([`super::canonical`]): what the engine's
//! record type (`braid.engine.record`) decodes, so that a member only the engine reads is
//! declared there alone, and carried through here untouched.

use serde_json::{Map, Value};

use super::{Entry, Record};

/// The record's members (`top`), with the capability arguments where format 2 keeps them and
/// each entry's members so.
pub(super) fn record(mut top: Map<String, Value>, record: &Record) -> Vec<u8> {
    set_json(
        &mut top,
        "capabilityArgs",
        record.capability_args.as_deref(),
    );
    drop_null(&mut top, "networkStatus");
    if let Some(Value::Array(items)) = top.get_mut("attachments") {
        for (item, entry) in items.iter_mut().zip(&record.attachments) {
            if let Value::Object(members) = item {
                entry_members(members, entry.own_capability_args.as_deref());
            }
        }
    }
    to_bytes(&Value::Object(top))
}

/// The salvaged entries' members (in the order of `entries`, which they were decoded to), each
/// with its capability arguments whole, as a JSON array.
pub(super) fn salvaged(members: Vec<Map<String, Value>>, entries: &[Entry]) -> Vec<u8> {
    let items = members
        .into_iter()
        .zip(entries)
        .map(|(mut members, entry)| {
            entry_members(&mut members, entry.capability_args.as_deref());
            Value::Object(members)
        })
        .collect();
    to_bytes(&Value::Array(items))
}

fn entry_members(members: &mut Map<String, Value>, capability_args: Option<&[u8]>) {
    set_json(members, "capabilityArgs", capability_args);
    drop_null(members, "result");
}

/// Sets `key` to the JSON `value`, or removes it when there is none.
fn set_json(members: &mut Map<String, Value>, key: &str, value: Option<&[u8]>) {
    match value.and_then(|data| serde_json::from_slice::<Value>(data).ok()) {
        Some(value) => {
            members.insert(key.to_owned(), value);
        }
        None => {
            members.remove(key);
        }
    }
}

fn drop_null(members: &mut Map<String, Value>, key: &str) {
    if members.get(key).is_some_and(Value::is_null) {
        members.remove(key);
    }
}

fn to_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
