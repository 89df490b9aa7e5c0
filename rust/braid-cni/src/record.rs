//! The attachment record (`docs/attachment-record.md`): its one decoder, used by the shim's
//! DEL replay and, through `braid._native`, by the engine.
//!
//! Format 2 keeps the runtime's capability arguments once, at the top, and in each entry only
//! the entry's own (`capabilities`); format 1, which kept them whole in every entry, is still
//! read. An [`Entry`]'s `capability_args` are what its delegates get either way.
//!
//! `containerId`, `netns`, `kind` and `version` are required, every other key has a default,
//! a key of the wrong kind makes the whole record undecodable, unknown keys are ignored. A
//! record that does not decode, or is of another `kind` or `version`, is [`Damaged`]: the
//! error (code 5), every attachment entry that still decodes on its own, and whether those are
//! all the record held ([`Damaged::complete`]). A record that is not whole JSON (cut short by
//! a power failure) is read up to the damage (`prefix`): every entry written whole before it
//! is salvaged.

mod canonical;
pub mod capabilities;
mod fields;
mod prefix;

use serde_json::{Map, Value};

use crate::config::conf_to_list;
use crate::error::{codes, CniError, Result};
use fields::{object_json, pairs, source_routing, state, strings, Decoded, Fields};

/// The `kind` of a record.
pub const RECORD_KIND: &str = "braidAttachmentRecord";
/// The `version` of the record format this crate writes (through the engine).
pub const RECORD_VERSION: u64 = 2;
/// Every `version` this crate reads.
pub const READ_VERSIONS: [u64; 2] = [1, 2];
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
    /// The runtime's capability arguments, a JSON object (`None` when empty, and in format 1).
    pub capability_args: Option<Vec<u8>>,
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
// Each bool is one independent boolean member of the record's JSON, read as it is written.
#[allow(clippy::struct_excessive_bools)]
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
    /// The capability arguments its delegates get, a JSON object: the runtime's with the
    /// entry's own over them (`None` when empty).
    pub capability_args: Option<Vec<u8>>,
    /// The entry's own capability arguments as the record holds them (format 1: all of them).
    pub own_capability_args: Option<Vec<u8>>,
    /// The addresses the pod asked for.
    pub ips: Vec<String>,
    /// The MAC address the pod asked for.
    pub mac: Option<String>,
    /// The default-route gateways the pod asked for.
    pub default_route: Option<Vec<String>>,
    /// Whether this is braid's auxiliary chain.
    pub auxiliary_chain: bool,
    /// Whether the attachment opted into source routing (`routing.sourceRouting`): its rules
    /// and table routes are removed before its delegates' DEL.
    pub source_routing: bool,
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
    read(data, container_id)
        .map(|(_, record)| record)
        .map_err(|(damaged, _)| damaged)
}

/// A record's members as it holds them, and its decoding.
type Read = (Map<String, Value>, Record);
/// A damaged record, and the members of each entry it salvaged (as `Damaged::salvaged`).
type Unread = (Damaged, Vec<Map<String, Value>>);

/// [`decode`], keeping the record's members (or those of the salvaged entries) for
/// [`canonical`].
fn read(data: &[u8], container_id: &str) -> std::result::Result<Read, Unread> {
    let damaged = |reason: String, salvage: Salvage| {
        let error = CniError::new(
            codes::IO_FAILURE,
            format!("the attachment record of container {container_id} is corrupt"),
        )
        .with_details(reason);
        let damaged = Damaged {
            error,
            salvaged: salvage.entries,
            complete: salvage.complete,
        };
        (damaged, salvage.members)
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
            let runtime = runtime_capabilities(&cut.members);
            let reason = format!("not whole JSON ({err}); read up to the damage");
            return Err(damaged(reason, Salvage::of(&entries, known, &runtime)));
        }
    };
    let items = match top.get("attachments") {
        Some(Value::Array(items)) => Some(items.as_slice()),
        _ => None,
    };
    let runtime = runtime_capabilities(&top);
    let salvage = || {
        Salvage::of(
            items.unwrap_or_default(),
            items.is_some() && format_known(&top),
            &runtime,
        )
    };
    let record = match decode_record(&top) {
        Ok(record) => record,
        Err(reason) => return Err(damaged(reason, salvage())),
    };
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != RECORD_KIND || !READ_VERSIONS.contains(&record.version) {
        let reason = format!(
            "unsupported record kind {kind:?} version {}",
            record.version
        );
        return Err(damaged(reason, salvage()));
    }
    Ok((top, record))
}

/// The record of `container_id` decoded (as [`decode`] decodes it) and given back as JSON in
/// one shape whatever the format it was written in: every member as the record holds it (the
/// members this crate does not read too, for the engine's record type), the runtime's
/// capability arguments at the top (`capabilityArgs`, none in format 1) and each entry's own
/// in the entry; a `null` `result` or `networkStatus` left out, as absent. A damaged record
/// gives the damage and its salvaged entries as a JSON array, each entry's `capabilityArgs`
/// whole (the runtime's merged in: they go into another record).
pub fn canonical(
    data: &[u8],
    container_id: &str,
) -> std::result::Result<Vec<u8>, (Damaged, Vec<u8>)> {
    match read(data, container_id) {
        Ok((top, record)) => Ok(canonical::record(top, &record)),
        Err((damaged, members)) => {
            let salvaged = canonical::salvaged(members, &damaged.salvaged);
            Err((damaged, salvaged))
        }
    }
}

/// Whether the members say a kind and version this crate reads. Both come before
/// `attachments` in every record braid writes, so a record cut short that reached its entries
/// still has them.
fn format_known(members: &Map<String, Value>) -> bool {
    members.get("kind").and_then(Value::as_str) == Some(RECORD_KIND)
        && members
            .get("version")
            .and_then(Value::as_u64)
            .is_some_and(|version| READ_VERSIONS.contains(&version))
}

/// The runtime's capability arguments a record's entries are merged with: its top-level
/// `capabilityArgs`, but in format 1 (which had none there) nothing.
fn runtime_capabilities(members: &Map<String, Value>) -> Map<String, Value> {
    if members.get("version").and_then(Value::as_u64) == Some(1) {
        return Map::new();
    }
    members
        .get("capabilityArgs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The entries of a damaged record that decode (with their members), and whether they are
/// all it held.
#[derive(Debug, Default)]
struct Salvage {
    entries: Vec<Entry>,
    members: Vec<Map<String, Value>>,
    complete: bool,
}

impl Salvage {
    /// `items` decoded one by one, in plan order; `listed_whole`: `items` is the record's
    /// whole `attachments` array, of a format this crate reads.
    fn of(items: &[Value], listed_whole: bool, runtime: &Map<String, Value>) -> Self {
        let mut found: Vec<(Entry, Map<String, Value>)> = items
            .iter()
            .filter_map(|item| {
                let entry = decode_entry(item, runtime).ok()?;
                Some((entry, item.as_object()?.clone()))
            })
            .collect();
        let complete = listed_whole && found.len() == items.len();
        found.sort_by_key(|(entry, _)| entry.position);
        let (entries, members) = found.into_iter().unzip();
        Self {
            entries,
            members,
            complete,
        }
    }
}

fn decode_record(top: &Map<String, Value>) -> Decoded<Record> {
    let fields = Fields(top);
    fields.required_string("kind")?;
    let version = fields
        .optional("version", Value::as_u64, "an integer")?
        .ok_or("`version` is missing")?;
    let runtime = if version == 1 {
        Map::new() // format 1 had no capabilityArgs here: one is no key of it
    } else {
        fields
            .optional("capabilityArgs", |v| v.as_object().cloned(), "an object")?
            .unwrap_or_default()
    };
    let attachments = match top.get("attachments") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                decode_entry(item, &runtime).map_err(|why| format!("attachments[{i}]: {why}"))
            })
            .collect::<Decoded<Vec<Entry>>>()?,
        Some(_) => return Err("`attachments` must be an array".into()),
    };
    Ok(Record {
        container_id: fields.required_string("containerId")?,
        netns: fields.required_string("netns")?,
        version,
        cni_version: fields.string("cniVersion")?,
        cni_args: fields
            .optional("cniArgs", pairs, "a list of [key, value] pairs")?
            .unwrap_or_default(),
        plugin_dirs: fields
            .optional("pluginDirs", strings, "a list of strings")?
            .unwrap_or_default(),
        capability_args: object_json(runtime),
        pod_namespace: fields.string("podNamespace")?,
        pod_name: fields.string("podName")?,
        pod_uid: fields.string("podUid")?,
        attachments,
        network_status: fields.json("networkStatus"),
    })
}

fn decode_entry(item: &Value, runtime: &Map<String, Value>) -> Decoded<Entry> {
    let object = item.as_object().ok_or("not a JSON object")?;
    let fields = Fields(object);
    let own = fields
        .optional("capabilityArgs", |v| v.as_object().cloned(), "an object")?
        .unwrap_or_default();
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
        capability_args: object_json(capabilities::merged(runtime, &own)),
        own_capability_args: object_json(own),
        ips: fields
            .optional("ips", strings, "a list of strings")?
            .unwrap_or_default(),
        mac: fields.nullable("mac", |v| v.as_str().map(str::to_owned), "a string")?,
        default_route: fields.nullable("defaultRoute", strings, "a list of strings")?,
        auxiliary_chain: fields
            .optional("auxiliaryChain", Value::as_bool, "a boolean")?
            .unwrap_or(false),
        source_routing: source_routing(&fields)?,
        state: fields
            .optional("state", state, "one of planned, added, failed, deleted")?
            .unwrap_or(STATES[0])
            .to_owned(),
        result: fields.json("result"),
        error: fields.nullable("error", |v| v.as_str().map(str::to_owned), "a string")?,
    })
}

#[cfg(test)]
mod tests;
