//! The stdin each plugin of a list receives for each verb (CNI spec, Section 3, "Deriving
//! execution configuration from plugin configuration").
//!
//! The plugin object is taken verbatim from the list (key order and number text kept); keys
//! braid sets replace an existing value in place or are appended in this order: `cniVersion`,
//! `name`, `runtimeConfig`, `prevResult`, `args`, `cni.dev/valid-attachments`,
//! `cni.dev/attachments`. Every given input is validated, whatever the verb.

mod inputs;

use serde_json::{Map, Value};

use crate::config::{decode_object, encode, string_member, validate_plugin};
use crate::error::{CniError, Result};
use inputs::{Inputs, Verb};

/// What to build one plugin's stdin from.
#[derive(Debug, Clone, Copy)]
pub struct StdinRequest<'a> {
    /// The network list JSON (as loaded; never re-ordered).
    pub network_list: &'a [u8],
    /// Index of the plugin in `plugins`.
    pub index: usize,
    /// The CNI verb: `ADD`, `DEL`, `CHECK`, `GC`, `STATUS`.
    pub command: &'a str,
    /// The version the list runs at (injected as `cniVersion`).
    pub cni_version: &'a str,
    /// The runtime's capability arguments, a JSON object.
    pub capability_args: Option<&'a [u8]>,
    /// The previous result (ADD: the previous plugin's; DEL/CHECK: the cached one).
    pub prev_result: Option<&'a [u8]>,
    /// GC's valid attachments, a JSON array (or `null`).
    pub valid_attachments: Option<&'a [u8]>,
    /// Keys merged into the plugin's `args.cni` object.
    pub args_cni: Option<&'a [u8]>,
}

/// Builds the stdin of one plugin: compact JSON.
pub fn plugin_stdin(req: &StdinRequest<'_>) -> Result<Vec<u8>> {
    let verb = Verb::parse(req.command)?;
    let inputs = Inputs::decode(req)?;
    let (list_name, mut plugin) = take_plugin(req.network_list, req.index)?;
    let place = format!("network list: plugins[{}]", req.index);
    plugin.insert("cniVersion".into(), req.cni_version.into());
    plugin.insert("name".into(), list_name.into());
    if verb.carries_attachment_data() {
        if let Some(runtime_config) = runtime_config(&plugin, inputs.capability_args.as_ref()) {
            plugin.insert("runtimeConfig".into(), Value::Object(runtime_config));
        }
        if let Some(prev_result) = inputs.prev_result_for(verb, req)? {
            plugin.insert("prevResult".into(), prev_result);
        }
        if let Some(args_cni) = inputs.args_cni {
            merge_args_cni(&mut plugin, args_cni, &place)?;
        }
    }
    if verb == Verb::Gc {
        if let Some(valid) = inputs.valid_attachments {
            plugin.insert("cni.dev/valid-attachments".into(), valid.clone());
            plugin.insert("cni.dev/attachments".into(), valid);
        }
    }
    Ok(encode(&Value::Object(plugin)))
}

/// The list's `name` and a copy of `plugins[index]`, validated as libcni would at load.
fn take_plugin(network_list: &[u8], index: usize) -> Result<(String, Map<String, Value>)> {
    const LIST: &str = "network list";
    let mut list = decode_object(network_list, LIST)?;
    let name = string_member(&list, "name", LIST)?
        .ok_or_else(|| CniError::config(format!("{LIST}: `name` is missing")))?;
    let Some(Value::Array(plugins)) = list.get_mut("plugins") else {
        return Err(CniError::config(format!(
            "{LIST}: `plugins` is missing or not an array"
        )));
    };
    let count = plugins.len();
    let Some(plugin) = plugins.get_mut(index) else {
        return Err(CniError::config(format!(
            "{LIST}: plugin index {index} is out of range: the list has {count} plugin(s)"
        )));
    };
    validate_plugin(plugin, &format!("{LIST}: plugins[{index}]"))?;
    match plugin.take() {
        Value::Object(object) => Ok((name, object)),
        _ => Err(CniError::config(format!(
            "{LIST}: plugins[{index}] must be an object"
        ))),
    }
}

/// `{cap: value}` for every capability set to `true` in the plugin that has a capability
/// argument; `None` when there is none (then a file-supplied `runtimeConfig` survives).
fn runtime_config(
    plugin: &Map<String, Value>,
    capability_args: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let args = capability_args?;
    let capabilities = plugin.get("capabilities")?.as_object()?;
    let selected: Map<String, Value> = capabilities
        .iter()
        .filter(|(_, enabled)| enabled.as_bool() == Some(true))
        .filter_map(|(cap, _)| args.get(cap).map(|value| (cap.clone(), value.clone())))
        .collect();
    (!selected.is_empty()).then_some(selected)
}

/// Merges `args_cni` into the plugin's `args.cni`, creating both objects when absent or null;
/// keys of `args_cni` win, other keys stay where they are. An empty `args_cni` adds nothing.
fn merge_args_cni(
    plugin: &mut Map<String, Value>,
    args_cni: Map<String, Value>,
    place: &str,
) -> Result<()> {
    if args_cni.is_empty() {
        return Ok(());
    }
    let args = object_slot(plugin, "args", place)?;
    let cni = object_slot(args, "cni", &format!("{place}: args"))?;
    for (key, value) in args_cni {
        cni.insert(key, value);
    }
    Ok(())
}

/// The object under `key`, inserted empty when absent or `null`; an error for other kinds.
fn object_slot<'m>(
    object: &'m mut Map<String, Value>,
    key: &str,
    place: &str,
) -> Result<&'m mut Map<String, Value>> {
    let slot = object.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(inner) => Ok(inner),
        _ => Err(CniError::config(format!(
            "{place}: `{key}` must be an object to merge CNI args into"
        ))),
    }
}
