//! CNI results of the three families (020, 040, 100), parsed with libcni's rules and converted
//! between every ordered pair of versions (CNI spec, Section 5; libcni's `pkg/types`).
//!
//! Converted and parsed results are re-encoded as libcni marshals them (compact JSON, unknown
//! keys dropped, addresses in Go's canonical text, keys printed or left out as libcni's types
//! do); a conversion to the result's own version returns the input bytes unchanged after
//! validating them.
mod address;
mod conversion;
mod emit;
mod fields;
mod model;
mod route;

use serde_json::Value;

use self::conversion::Decoded;
use self::fields::{invalid, object, Fields};
use self::model::{Family, LegacyResult, ModernResult};
use crate::error::{codes, CniError, Result};
use crate::version;

/// The version a result without `cniVersion` (or with an empty one) has.
const UNLABELLED: &str = "0.1.0";

/// Converts a result to `to_version` (empty means 0.1.0) with libcni's rules, losses and
/// refusals. Same version returns the input unchanged.
pub fn convert(data: &[u8], to_version: &str) -> Result<Vec<u8>> {
    let value = parse_json(data, "result")?;
    let declared = declared_version(&value)?;
    let source = if declared.is_empty() {
        UNLABELLED
    } else {
        declared
    };
    let decoded = decode(&value, source)?;
    let target = if to_version.is_empty() {
        UNLABELLED
    } else {
        to_version
    };
    if target == declared {
        return Ok(data.to_vec());
    }
    if !version::ALL.contains(&target) {
        return Err(CniError::new(
            codes::INCOMPATIBLE_VERSION,
            format!("no converter for CNI result version {source} to {target}"),
        ));
    }
    render(&conversion::convert(decoded, target)?)
}

/// Parses a plugin's ADD output for a configuration of `config_version`: a missing or empty
/// `cniVersion` means `config_version` (libcni's issue #895 rule). Returns the result JSON.
///
/// Anything but exactly one JSON document (surrounding whitespace allowed) is a plugin failure
/// (code 100); a document that is not a valid result of its version fails with code 6.
pub fn parse_plugin_output(data: &[u8], config_version: &str) -> Result<Vec<u8>> {
    let value: Value = serde_json::from_slice(data).map_err(|e| {
        CniError::new(
            codes::PLUGIN_FAILURE,
            format!("plugin output is not exactly one JSON document: {e}"),
        )
    })?;
    // libcni (pkg/invoke/exec.go) keeps a non-empty string `cniVersion` and otherwise labels
    // the result with the configuration's version, even for a `null` document.
    let declared = match &value {
        Value::Object(map) => map.get("cniVersion").and_then(Value::as_str).unwrap_or(""),
        _ => "",
    };
    let label = match (declared, config_version) {
        ("", "") => UNLABELLED,
        ("", config) => config,
        (own, _) => own,
    };
    render(&decode(&value, label)?.encode(label))
}

/// The `cniVersion` of a result (missing means 0.1.0), validated to be a known version.
pub fn result_version(data: &[u8]) -> Result<String> {
    let value = parse_json(data, "result")?;
    let declared = declared_version(&value)?;
    let source = if declared.is_empty() {
        UNLABELLED
    } else {
        declared
    };
    Family::of(source).ok_or_else(|| unsupported(source))?;
    Ok(source.to_owned())
}

/// Decodes a plugin's error object (`code`, `msg`, `details`; `cniVersion` optional). Anything
/// else is a code-100 error saying the plugin's diagnostic message could not be parsed.
pub fn parse_error_object(data: &[u8]) -> Result<CniError> {
    decode_error_object(data).map_err(|why| {
        let shown = String::from_utf8_lossy(data.get(..512).unwrap_or(data));
        CniError::new(
            codes::PLUGIN_FAILURE,
            format!("plugin failed but error parsing its diagnostic message {shown:?}: {why}"),
        )
    })
}

fn decode_error_object(data: &[u8]) -> std::result::Result<CniError, String> {
    let value: Value = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    let fields = object(&value, "")
        .ok()
        .flatten()
        .ok_or("not a JSON object")?;
    let code = match fields.get("code") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|c| u32::try_from(c).ok())
            .ok_or("code is not a small unsigned integer")?,
        Some(_) => return Err("code is not a number".into()),
        None => return Err("code is missing".into()),
    };
    let msg = fields
        .string("msg")
        .map_err(|e| e.msg)?
        .ok_or("msg is missing")?;
    let details = fields.text("details").map_err(|e| e.msg)?;
    fields.string("cniVersion").map_err(|e| e.msg)?;
    Ok(CniError::new(code, msg).with_details(details))
}

/// Parses exactly one JSON document; a code-6 error naming `what` otherwise.
fn parse_json(data: &[u8], what: &str) -> Result<Value> {
    serde_json::from_slice(data)
        .map_err(|e| CniError::decode(format!("{what} is not valid JSON: {e}")))
}

/// The `cniVersion` as written (`""` when missing or `null`); the document must be an object.
fn declared_version(value: &Value) -> Result<&str> {
    let Some(fields) = object(value, "")? else {
        return Ok("");
    };
    Ok(match fields.get("cniVersion") {
        None => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(invalid("cniVersion", "expected a string")),
    })
}

/// Decodes `value` as a result of `version`'s family (`null` is the empty result).
fn decode(value: &Value, version: &str) -> Result<Decoded> {
    let family = Family::of(version).ok_or_else(|| unsupported(version))?;
    let empty = serde_json::Map::new();
    let fields = object(value, "")?.unwrap_or_else(|| Fields::empty(&empty));
    Ok(match family {
        Family::V020 => Decoded::Legacy(LegacyResult::decode(fields)?),
        other => Decoded::Modern(ModernResult::decode(fields, other)?, other),
    })
}

fn unsupported(version: &str) -> CniError {
    CniError::new(
        codes::INCOMPATIBLE_VERSION,
        format!("unsupported CNI result version {version:?}"),
    )
}

fn render(value: &Value) -> Result<Vec<u8>> {
    serde_json::to_vec(value)
        .map_err(|e| CniError::new(codes::INTERNAL, format!("rendering a result failed: {e}")))
}
