//! Network configuration (conf and conflist) with libcni's validation (`libcni/conf.go`),
//! keeping unknown keys, key order and number text verbatim.
//!
//! Every function takes the configuration as bytes and returns bytes: the JSON is parsed into
//! an order-preserving map with numbers kept as their original text, so whatever braid does not
//! read passes through unchanged.

mod json_input;
mod validate;

use serde_json::{json, Map, Value};

use crate::error::{CniError, Result};
pub(crate) use json_input::{decode_object, encode};
pub(crate) use validate::validate_plugin;

/// Validates a conflist like libcni's `NetworkConfFromBytes` and returns its summary JSON
/// (see `braid._native.parse_network_list`).
pub fn summarize(data: &[u8]) -> Result<Vec<u8>> {
    let list = decode_object(data, "network configuration")?;
    let summary = validate::validate_list(&list)?;
    Ok(encode(&summary.to_json()))
}

/// Up-converts a single-plugin conf into a conflist holding the original object verbatim
/// (libcni's `ConfListFromConf`): `{"name", "cniVersion", "plugins": [<the conf>]}`.
pub fn conf_to_list(data: &[u8]) -> Result<Vec<u8>> {
    let conf = decode_object(data, "plugin configuration")?;
    let conf = Value::Object(conf);
    validate_plugin(&conf, "plugin configuration")?;
    let text_of = |key: &str| {
        conf.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let list =
        json!({"name": text_of("name"), "cniVersion": text_of("cniVersion"), "plugins": [conf]});
    Ok(encode(&list))
}

/// Appends plugin objects (each must be an object with a non-empty string `type`) to a
/// conflist's `plugins`, creating the key when it is missing.
pub fn append_plugins(list: &[u8], plugins: &[&[u8]]) -> Result<Vec<u8>> {
    let mut list = decode_object(list, "network configuration")?;
    let mut decoded = Vec::with_capacity(plugins.len());
    for (position, data) in plugins.iter().enumerate() {
        let place = format!("appended plugin {position}");
        let plugin = Value::Object(decode_object(data, &place)?);
        validate_plugin(&plugin, &place)?;
        decoded.push(plugin);
    }
    let slot = list
        .entry("plugins")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(existing) = slot else {
        return Err(CniError::config(
            "network configuration: `plugins` must be an array",
        ));
    };
    existing.extend(decoded);
    Ok(encode(&Value::Object(list)))
}

/// The string value of `key` in `object`: `None` when absent, an error naming `place` when the
/// value is not a string (JSON `null` included, as Go's `rawValue.(string)` refuses it).
pub(crate) fn string_member(
    object: &Map<String, Value>,
    key: &str,
    place: &str,
) -> Result<Option<String>> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(CniError::config(format!(
            "{place}: `{key}` must be a string, not {}",
            json_input::kind_of(other)
        ))),
    }
}
