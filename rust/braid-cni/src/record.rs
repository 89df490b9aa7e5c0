//! The attachment record (`docs/attachment-record.md`): decoding what the shim replays for DEL.
//!
//! Field rules follow the engine's reader: `containerId` and `netns` are required, every other
//! key has a default, a key of the wrong kind makes the whole record undecodable, unknown keys
//! are ignored. A record that does not decode, or is of another `kind` or `version`, is
//! [`Damaged`]: the error (code 5) plus every attachment entry that still decodes on its own.

use serde_json::{Map, Value};

use crate::config::conf_to_list;
use crate::error::{codes, CniError, Result};

/// The `kind` of a record.
pub const RECORD_KIND: &str = "braidAttachmentRecord";
/// The `version` of the record format this crate reads.
pub const RECORD_VERSION: u64 = 1;

/// A decoded record: the container and its attachments in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `CNI_CONTAINERID` of the ADD.
    pub container_id: String,
    /// `CNI_NETNS` of the ADD.
    pub netns: String,
    /// braid's own configuration version.
    pub cni_version: String,
    /// The runtime's `CNI_ARGS` pairs at ADD time.
    pub cni_args: Vec<(String, String)>,
    /// The runtime's `CNI_PATH` entries at ADD time.
    pub plugin_dirs: Vec<String>,
    /// The attachments, the default network first.
    pub attachments: Vec<Entry>,
}

/// One attachment: a delegate network run for one interface of the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The network-status name (`<namespace>/<NAD>` or the cluster network's name).
    pub name: String,
    /// The delegate configuration's network name (the result cache key).
    pub network_name: String,
    /// `CNI_IFNAME` of every call for this attachment.
    pub ifname: String,
    /// The delegate configuration text verbatim.
    pub config: String,
    /// Position in the plan (0: the default network).
    pub position: u64,
    /// Whether `config` is a conflist (else a single conf).
    pub is_list: bool,
    /// Whether this is the cluster default network.
    pub is_default: bool,
    /// How messages name the attachment ("" when the record has none).
    pub label: String,
    /// Keys merged into each delegate's `args.cni`, a JSON object (`None` when empty).
    pub args_cni: Option<Vec<u8>>,
    /// The capability arguments, a JSON object (`None` when empty).
    pub capability_args: Option<Vec<u8>>,
    /// `planned`, `added`, `failed` or `deleted`.
    pub state: String,
    /// The final result, JSON (`None` when absent or null).
    pub result: Option<Vec<u8>>,
}

impl Entry {
    /// The label, or the name when the record has no label.
    pub fn display_name(&self) -> &str {
        if self.label.is_empty() {
            &self.name
        } else {
            &self.label
        }
    }

    /// The configuration as a network list (a single conf is up-converted as libcni does).
    pub fn network_list(&self) -> Result<Vec<u8>> {
        if self.is_list {
            Ok(self.config.as_bytes().to_vec())
        } else {
            conf_to_list(self.config.as_bytes())
        }
    }
}

/// A record that could not be used whole: why, and the entries that still decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    /// Code 5, naming the container and the reason.
    pub error: CniError,
    /// Every attachment entry that decodes on its own, in plan order.
    pub salvaged: Vec<Entry>,
}

/// The `containerId` a record's bytes name, without decoding the rest (`None`: not a JSON
/// object with a string `containerId`). A spare file holding a record is found this way.
pub fn container_of(data: &[u8]) -> Option<String> {
    let top: Value = serde_json::from_slice(data).ok()?;
    top.get("containerId")?.as_str().map(str::to_owned)
}

/// Decodes the record of `container_id`.
pub fn decode(data: &[u8], container_id: &str) -> std::result::Result<Record, Damaged> {
    let top = serde_json::from_slice::<Value>(data);
    let damaged = |reason: String, top: Option<&Value>| Damaged {
        error: CniError::new(
            codes::IO_FAILURE,
            format!("the attachment record of container {container_id} is corrupt"),
        )
        .with_details(reason),
        salvaged: top.map(salvage).unwrap_or_default(),
    };
    let top = match top {
        Ok(value) => value,
        Err(err) => return Err(damaged(format!("not JSON: {err}"), None)),
    };
    let record = match decode_record(&top) {
        Ok(record) => record,
        Err(reason) => return Err(damaged(reason, Some(&top))),
    };
    let kind = top
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or(RECORD_KIND);
    let version = top
        .get("version")
        .and_then(Value::as_u64)
        .unwrap_or(RECORD_VERSION);
    if kind != RECORD_KIND || version != RECORD_VERSION {
        let reason = format!("unsupported record kind {kind:?} version {version}");
        return Err(damaged(reason, Some(&top)));
    }
    Ok(record)
}

type Decoded<T> = std::result::Result<T, String>;

fn decode_record(top: &Value) -> Decoded<Record> {
    let object = top.as_object().ok_or("the record is not a JSON object")?;
    let fields = Fields(object);
    fields.string("kind")?;
    fields.optional("version", Value::as_u64, "an integer")?;
    let attachments = match object.get("attachments") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| decode_entry(item).map_err(|why| format!("attachments[{i}]: {why}")))
            .collect::<Decoded<Vec<Entry>>>()?,
        Some(_) => return Err("`attachments` must be an array".into()),
    };
    Ok(Record {
        container_id: fields.required_string("containerId")?,
        netns: fields.required_string("netns")?,
        cni_version: fields.string("cniVersion")?,
        cni_args: fields
            .optional("cniArgs", pairs, "a list of [key, value] pairs")?
            .unwrap_or_default(),
        plugin_dirs: fields
            .optional("pluginDirs", strings, "a list of strings")?
            .unwrap_or_default(),
        attachments,
    })
}

fn decode_entry(item: &Value) -> Decoded<Entry> {
    let object = item.as_object().ok_or("not a JSON object")?;
    let fields = Fields(object);
    Ok(Entry {
        name: fields.required_string("name")?,
        network_name: fields.required_string("networkName")?,
        ifname: fields.required_string("ifname")?,
        config: fields.required_string("config")?,
        position: fields
            .optional("position", Value::as_u64, "an integer")?
            .unwrap_or(0),
        is_list: fields
            .optional("isList", Value::as_bool, "a boolean")?
            .unwrap_or(true),
        is_default: fields
            .optional("isDefault", Value::as_bool, "a boolean")?
            .unwrap_or(false),
        label: fields.string("label")?,
        args_cni: fields.object_bytes("argsCni")?,
        capability_args: fields.object_bytes("capabilityArgs")?,
        state: fields.string("state")?,
        result: object
            .get("result")
            .filter(|v| !v.is_null())
            .map(|v| serde_json::to_vec(v).unwrap_or_default()),
    })
}

/// Every attachment entry of a damaged record that decodes on its own, in plan order.
fn salvage(top: &Value) -> Vec<Entry> {
    let Some(Value::Array(items)) = top.get("attachments") else {
        return Vec::new();
    };
    let mut entries: Vec<Entry> = items.iter().filter_map(|i| decode_entry(i).ok()).collect();
    entries.sort_by_key(|entry| entry.position);
    entries
}

/// Typed access to an object's members with the engine's defaults.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn optional<T>(
        &self,
        key: &str,
        get: fn(&Value) -> Option<T>,
        kind: &str,
    ) -> Decoded<Option<T>> {
        match self.0.get(key) {
            None => Ok(None),
            Some(value) => get(value)
                .map(Some)
                .ok_or_else(|| format!("`{key}` must be {kind}")),
        }
    }

    fn string(&self, key: &str) -> Decoded<String> {
        let text = self.optional(key, |v| v.as_str().map(str::to_owned), "a string")?;
        Ok(text.unwrap_or_default())
    }

    fn required_string(&self, key: &str) -> Decoded<String> {
        self.optional(key, |v| v.as_str().map(str::to_owned), "a string")?
            .ok_or_else(|| format!("`{key}` is missing"))
    }

    /// A JSON object member as compact bytes; absent or empty is `None`.
    fn object_bytes(&self, key: &str) -> Decoded<Option<Vec<u8>>> {
        let object = self.optional(key, |v| v.as_object().cloned(), "an object")?;
        Ok(object
            .filter(|o| !o.is_empty())
            .map(|o| serde_json::to_vec(&Value::Object(o)).unwrap_or_default()))
    }
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn pairs(value: &Value) -> Option<Vec<(String, String)>> {
    value
        .as_array()?
        .iter()
        .map(|pair| match strings(pair)?.as_slice() {
            [key, value] => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect()
}
