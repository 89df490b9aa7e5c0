//! libcni's per-list and per-plugin validation (`NetworkConfFromBytes`, `ConfFromBytes`;
//! `libcni/conf.go`), reading only the keys braid needs for the summary.

use serde_json::{json, Map, Value};

use super::json_input::kind_of;
use super::string_member;
use crate::error::{CniError, Result};
use crate::version::{parse as parse_version, select_list_version};

const LIST: &str = "network configuration";

/// What braid reads of a valid conflist.
#[derive(Debug)]
pub(super) struct ListSummary {
    name: String,
    cni_version: String,
    cni_versions: Vec<String>,
    disable_check: bool,
    disable_gc: bool,
    load_only_inlined_plugins: bool,
    /// `None` when the list has no `plugins` key (libcni v1.3.0 allows that).
    plugins: Option<Vec<PluginSummary>>,
}

/// What braid reads of a valid plugin object.
#[derive(Debug)]
pub(crate) struct PluginSummary {
    plugin_type: String,
    /// Capabilities set to `true`, in file order.
    capabilities: Vec<String>,
    ipam_type: String,
}

impl ListSummary {
    /// The summary JSON object of `braid._native.parse_network_list`.
    pub(super) fn to_json(&self) -> Value {
        let plugins: Vec<Value> = self
            .plugins
            .iter()
            .flatten()
            .map(PluginSummary::to_json)
            .collect();
        json!({
            "name": self.name,
            "cniVersion": self.cni_version,
            "cniVersions": self.cni_versions,
            "effectiveVersion": select_list_version(&self.cni_version, &self.cni_versions),
            "disableCheck": self.disable_check,
            "disableGC": self.disable_gc,
            "loadOnlyInlinedPlugins": self.load_only_inlined_plugins,
            "hasPlugins": self.plugins.is_some(),
            "plugins": plugins,
        })
    }
}

impl PluginSummary {
    fn to_json(&self) -> Value {
        json!({"type": self.plugin_type, "capabilities": self.capabilities, "ipamType": self.ipam_type})
    }
}

/// Validates a conflist object with libcni's rules; errors are code 7 and name the key.
pub(super) fn validate_list(list: &Map<String, Value>) -> Result<ListSummary> {
    let name = string_member(list, "name", LIST)?
        .ok_or_else(|| CniError::config(format!("{LIST}: `name` is missing")))?;
    let cni_version = string_member(list, "cniVersion", LIST)?.unwrap_or_default();
    let cni_versions = version_list(list)?;
    let disable_check = flag(list, "disableCheck")?;
    let disable_gc = flag(list, "disableGC")?;
    let load_only_inlined_plugins = flag(list, "loadOnlyInlinedPlugins")?;
    let plugins = plugin_list(list, load_only_inlined_plugins)?;
    Ok(ListSummary {
        name,
        cni_version,
        cni_versions,
        disable_check,
        disable_gc,
        load_only_inlined_plugins,
        plugins,
    })
}

/// A boolean key: a JSON boolean or the string "true"/"false" in any case; absent is false.
fn flag(list: &Map<String, Value>, key: &str) -> Result<bool> {
    match list.get(key) {
        None => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(Value::String(text)) if text.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(text)) if text.eq_ignore_ascii_case("false") => Ok(false),
        Some(Value::String(text)) => Err(CniError::config(format!(
            "{LIST}: `{key}` must be true or false, not {text:?}"
        ))),
        Some(other) => Err(CniError::config(format!(
            "{LIST}: `{key}` must be a boolean, not {}",
            kind_of(other)
        ))),
    }
}

/// `cniVersions`: an array of version strings, each parseable like libcni's `ParseVersion`.
fn version_list(list: &Map<String, Value>) -> Result<Vec<String>> {
    let Some(raw) = list.get("cniVersions") else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = raw else {
        return Err(CniError::config(format!(
            "{LIST}: `cniVersions` must be an array of strings, not {}",
            kind_of(raw)
        )));
    };
    let mut versions = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let Value::String(text) = item else {
            return Err(CniError::config(format!(
                "{LIST}: `cniVersions[{position}]` must be a string, not {}",
                kind_of(item)
            )));
        };
        if parse_version(text).is_none() {
            return Err(CniError::config(format!(
                "{LIST}: `cniVersions[{position}]` {text:?} is not a version (N[.N[.N]])"
            )));
        }
        versions.push(text.clone());
    }
    Ok(versions)
}

/// `plugins`: a non-empty array of valid plugin objects. Missing is allowed unless
/// `loadOnlyInlinedPlugins` is true (libcni v1.3.0: the plugins then come from files).
fn plugin_list(
    list: &Map<String, Value>,
    load_only_inlined: bool,
) -> Result<Option<Vec<PluginSummary>>> {
    let Some(raw) = list.get("plugins") else {
        if load_only_inlined {
            return Err(CniError::config(format!(
                "{LIST}: `loadOnlyInlinedPlugins` is true but there is no `plugins` key"
            )));
        }
        return Ok(None);
    };
    let Value::Array(items) = raw else {
        return Err(CniError::config(format!(
            "{LIST}: `plugins` must be an array, not {}",
            kind_of(raw)
        )));
    };
    if items.is_empty() {
        return Err(CniError::config(format!(
            "{LIST}: `plugins` is empty; add at least one plugin"
        )));
    }
    let summaries = items
        .iter()
        .enumerate()
        .map(|(index, item)| validate_plugin(item, &format!("{LIST}: plugins[{index}]")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(summaries))
}

/// Validates one plugin object like libcni's `ConfFromBytes`: an object with a non-empty string
/// `type`; `name` and `cniVersion` strings; `capabilities` an object of booleans; `ipam` an
/// object whose `type` is a string. JSON `null` counts as absent, as in Go's decoding into a
/// struct. `place` prefixes every message.
pub(crate) fn validate_plugin(plugin: &Value, place: &str) -> Result<PluginSummary> {
    let Value::Object(object) = plugin else {
        return Err(CniError::config(format!(
            "{place} must be an object, not {}",
            kind_of(plugin)
        )));
    };
    let plugin_type = optional_string(object, "type", place)?;
    if plugin_type.is_empty() {
        return Err(CniError::config(format!(
            "{place}: `type` is missing or empty"
        )));
    }
    optional_string(object, "name", place)?;
    optional_string(object, "cniVersion", place)?;
    Ok(PluginSummary {
        plugin_type,
        capabilities: enabled_capabilities(object, place)?,
        ipam_type: ipam_type(object, place)?,
    })
}

/// A string member where `null` and absent both mean "".
fn optional_string(object: &Map<String, Value>, key: &str, place: &str) -> Result<String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err(CniError::config(format!(
            "{place}: `{key}` must be a string, not {}",
            kind_of(other)
        ))),
    }
}

fn enabled_capabilities(object: &Map<String, Value>, place: &str) -> Result<Vec<String>> {
    let capabilities = match object.get("capabilities") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(capabilities)) => capabilities,
        Some(other) => {
            return Err(CniError::config(format!(
                "{place}: `capabilities` must be an object of booleans, not {}",
                kind_of(other)
            )))
        }
    };
    let mut enabled = Vec::new();
    for (name, value) in capabilities {
        match value {
            Value::Bool(true) => enabled.push(name.clone()),
            Value::Bool(false) | Value::Null => {}
            other => {
                return Err(CniError::config(format!(
                    "{place}: `capabilities.{name}` must be a boolean, not {}",
                    kind_of(other)
                )))
            }
        }
    }
    Ok(enabled)
}

fn ipam_type(object: &Map<String, Value>, place: &str) -> Result<String> {
    match object.get("ipam") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::Object(ipam)) => optional_string(ipam, "type", &format!("{place}: ipam")),
        Some(other) => Err(CniError::config(format!(
            "{place}: `ipam` must be an object, not {}",
            kind_of(other)
        ))),
    }
}
