//! The attachment record (`docs/attachment-record.md`): its one decoder, used by the shim's
//! DEL replay and, through `braid._native`, by the engine.
//!
//! `containerId`, `netns`, `kind` and `version` are required, every other key has a default,
//! a key of the wrong kind makes the whole record undecodable, unknown keys are ignored. A
//! record that does not decode, or is of another `kind` or `version`, is [`Damaged`]: the
//! error (code 5), every attachment entry that still decodes on its own, and whether those are
//! all the record held ([`Damaged::complete`]). A record that is not whole JSON (cut short by
//! a power failure) is read up to the damage (`prefix`): every entry written whole before it
//! is salvaged.

mod prefix;

use serde_json::{Map, Value};

use crate::config::conf_to_list;
use crate::error::{codes, CniError, Result};

/// The `kind` of a record.
pub const RECORD_KIND: &str = "braidAttachmentRecord";
/// The `version` of the record format this crate reads.
pub const RECORD_VERSION: u64 = 1;
/// The `state` values of an entry; the first is the default.
pub const STATES: [&str; 4] = ["planned", "added", "failed", "deleted"];

/// A decoded record: the container and its attachments in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `CNI_CONTAINERID` of the ADD.
    pub container_id: String,
    /// `CNI_NETNS` of the ADD.
    pub netns: String,
    /// The record format's version.
    pub version: u64,
    /// braid's own configuration version.
    pub cni_version: String,
    /// The runtime's `CNI_ARGS` pairs at ADD time.
    pub cni_args: Vec<(String, String)>,
    /// The runtime's `CNI_PATH` entries at ADD time.
    pub plugin_dirs: Vec<String>,
    /// The pod's namespace.
    pub pod_namespace: String,
    /// The pod's name.
    pub pod_name: String,
    /// The pod's UID.
    pub pod_uid: String,
    /// The attachments, the default network first.
    pub attachments: Vec<Entry>,
    /// The network-status list, JSON (`None` when absent).
    pub network_status: Option<Vec<u8>>,
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
    /// The addresses the pod asked for.
    pub ips: Vec<String>,
    /// The MAC address the pod asked for.
    pub mac: Option<String>,
    /// The default-route gateways the pod asked for.
    pub default_route: Option<Vec<String>>,
    /// Whether this is braid's auxiliary chain.
    pub auxiliary_chain: bool,
    /// One of [`STATES`].
    pub state: String,
    /// The final result, JSON (`None` when absent or null).
    pub result: Option<Vec<u8>>,
    /// Why its last DEL failed, when it did.
    pub error: Option<String>,
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
    /// Whether `salvaged` is every attachment the record held: its `attachments` array was
    /// read to its end, every entry decoded, and the record is of the kind and a version this
    /// crate reads. When it is not, something the record described may be missing.
    pub complete: bool,
}

/// The `containerId` a record's bytes name, without decoding the rest (`None`: not a JSON
/// object with a string `containerId`). A spare file holding a record is found this way.
pub fn container_of(data: &[u8]) -> Option<String> {
    let top: Value = serde_json::from_slice(data).ok()?;
    top.get("containerId")?.as_str().map(str::to_owned)
}

/// Decodes the record of `container_id`.
pub fn decode(data: &[u8], container_id: &str) -> std::result::Result<Record, Damaged> {
    let damaged = |reason: String, salvage: Salvage| Damaged {
        error: CniError::new(
            codes::IO_FAILURE,
            format!("the attachment record of container {container_id} is corrupt"),
        )
        .with_details(reason),
        salvaged: salvage.entries,
        complete: salvage.complete,
    };
    let top = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(top)) => top,
        Ok(_) => {
            let reason = "the record is not a JSON object".to_owned();
            return Err(damaged(reason, Salvage::default()));
        }
        Err(err) => {
            let cut = prefix::read(data);
            let entries = cut.attachments.unwrap_or_default();
            let known = cut.attachments_closed && format_known(&cut.members);
            let reason = format!("not whole JSON ({err}); read up to the damage");
            return Err(damaged(reason, Salvage::of(&entries, known)));
        }
    };
    let items = match top.get("attachments") {
        Some(Value::Array(items)) => Some(items.as_slice()),
        _ => None,
    };
    let salvage = || {
        Salvage::of(
            items.unwrap_or_default(),
            items.is_some() && format_known(&top),
        )
    };
    let record = decode_record(&top).map_err(|reason| damaged(reason, salvage()))?;
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != RECORD_KIND || record.version != RECORD_VERSION {
        let reason = format!(
            "unsupported record kind {kind:?} version {}",
            record.version
        );
        return Err(damaged(reason, salvage()));
    }
    Ok(record)
}

/// Whether the members say a kind and version this crate reads. Both come before
/// `attachments` in every record braid writes, so a record cut short that reached its entries
/// still has them.
fn format_known(members: &Map<String, Value>) -> bool {
    members.get("kind").and_then(Value::as_str) == Some(RECORD_KIND)
        && members.get("version").and_then(Value::as_u64) == Some(RECORD_VERSION)
}

/// The entries of a damaged record that decode, and whether they are all it held.
#[derive(Debug, Default)]
struct Salvage {
    entries: Vec<Entry>,
    complete: bool,
}

impl Salvage {
    /// `items` decoded one by one, in plan order; `listed_whole`: `items` is the record's
    /// whole `attachments` array, of a format this crate reads.
    fn of(items: &[Value], listed_whole: bool) -> Self {
        let mut entries: Vec<Entry> = items.iter().filter_map(|i| decode_entry(i).ok()).collect();
        let complete = listed_whole && entries.len() == items.len();
        entries.sort_by_key(|entry| entry.position);
        Self { entries, complete }
    }
}

type Decoded<T> = std::result::Result<T, String>;

fn decode_record(top: &Map<String, Value>) -> Decoded<Record> {
    let fields = Fields(top);
    fields.required_string("kind")?;
    let attachments = match top.get("attachments") {
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
        version: fields
            .optional("version", Value::as_u64, "an integer")?
            .ok_or("`version` is missing")?,
        cni_version: fields.string("cniVersion")?,
        cni_args: fields
            .optional("cniArgs", pairs, "a list of [key, value] pairs")?
            .unwrap_or_default(),
        plugin_dirs: fields
            .optional("pluginDirs", strings, "a list of strings")?
            .unwrap_or_default(),
        pod_namespace: fields.string("podNamespace")?,
        pod_name: fields.string("podName")?,
        pod_uid: fields.string("podUid")?,
        attachments,
        network_status: fields.json("networkStatus"),
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
        ips: fields
            .optional("ips", strings, "a list of strings")?
            .unwrap_or_default(),
        mac: fields.nullable("mac", |v| v.as_str().map(str::to_owned), "a string")?,
        default_route: fields.nullable("defaultRoute", strings, "a list of strings")?,
        auxiliary_chain: fields
            .optional("auxiliaryChain", Value::as_bool, "a boolean")?
            .unwrap_or(false),
        state: fields
            .optional("state", state, "one of planned, added, failed, deleted")?
            .unwrap_or(STATES[0])
            .to_owned(),
        result: fields.json("result"),
        error: fields.nullable("error", |v| v.as_str().map(str::to_owned), "a string")?,
    })
}

/// Typed access to an object's members with the record's defaults.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn optional<T>(
        &self,
        key: &str,
        get: impl Fn(&Value) -> Option<T>,
        kind: &str,
    ) -> Decoded<Option<T>> {
        match self.0.get(key) {
            None => Ok(None),
            Some(value) => get(value)
                .map(Some)
                .ok_or_else(|| format!("`{key}` must be {kind}")),
        }
    }

    /// `optional`, with `null` meaning absent.
    fn nullable<T>(
        &self,
        key: &str,
        get: impl Fn(&Value) -> Option<T>,
        kind: &str,
    ) -> Decoded<Option<T>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.optional(key, get, &format!("{kind} or null")),
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
            .map(|o| to_bytes(&Value::Object(o))))
    }

    /// Any JSON member as compact bytes; absent or null is `None`.
    fn json(&self, key: &str) -> Option<Vec<u8>> {
        self.0.get(key).filter(|v| !v.is_null()).map(to_bytes)
    }
}

fn to_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

fn state(value: &Value) -> Option<&'static str> {
    let text = value.as_str()?;
    STATES.into_iter().find(|known| *known == text)
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

#[cfg(test)]
mod tests;
