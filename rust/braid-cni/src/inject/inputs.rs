//! Decoding and checking the runtime-supplied inputs of a stdin request.

use serde_json::{Map, Value};

use super::StdinRequest;
use crate::config::decode_object;
use crate::error::{codes, CniError, Result};
use crate::version::{parse as parse_version, supports_check};

/// The verbs that carry plugin configuration on stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verb {
    Add,
    Del,
    Check,
    Gc,
    Status,
}

impl Verb {
    /// `ADD`, `DEL`, `CHECK`, `GC` or `STATUS`; anything else is code 4.
    pub(super) fn parse(command: &str) -> Result<Self> {
        match command {
            "ADD" => Ok(Self::Add),
            "DEL" => Ok(Self::Del),
            "CHECK" => Ok(Self::Check),
            "GC" => Ok(Self::Gc),
            "STATUS" => Ok(Self::Status),
            other => Err(CniError::new(
                codes::INVALID_ENVIRONMENT,
                format!(
                    "CNI_COMMAND {other:?} has no plugin stdin: use ADD, DEL, CHECK, GC or STATUS"
                ),
            )),
        }
    }

    /// Verbs about one attachment: they get `runtimeConfig`, `prevResult` and `args`.
    pub(super) fn carries_attachment_data(self) -> bool {
        matches!(self, Self::Add | Self::Del | Self::Check)
    }
}

/// The decoded optional inputs.
#[derive(Debug)]
pub(super) struct Inputs {
    pub(super) capability_args: Option<Map<String, Value>>,
    pub(super) prev_result: Option<Map<String, Value>>,
    /// The GC array (`null` already turned into `[]`).
    pub(super) valid_attachments: Option<Value>,
    pub(super) args_cni: Option<Map<String, Value>>,
}

impl Inputs {
    /// Decodes every given input: not JSON is code 6, the wrong JSON kind code 7; an
    /// unparseable `cni_version` is code 1.
    pub(super) fn decode(req: &StdinRequest<'_>) -> Result<Self> {
        if parse_version(req.cni_version).is_none() {
            return Err(CniError::new(
                codes::INCOMPATIBLE_VERSION,
                format!(
                    "cniVersion {:?} is not a version (N[.N[.N]])",
                    req.cni_version
                ),
            ));
        }
        let object = |data: Option<&[u8]>, what: &str| {
            data.map(|bytes| decode_object(bytes, what)).transpose()
        };
        let prev_result = object(req.prev_result, "prevResult")?;
        if let Some(result) = &prev_result {
            result_version(result)?;
        }
        Ok(Self {
            capability_args: object(req.capability_args, "capability arguments")?,
            prev_result,
            valid_attachments: req.valid_attachments.map(decode_attachments).transpose()?,
            args_cni: object(req.args_cni, "args.cni")?,
        })
    }

    /// The `prevResult` to inject for `verb`, converted to the request's version when its own
    /// differs: ADD always, DEL and CHECK only at 0.4.0 and later, other verbs never.
    pub(super) fn prev_result_for(
        &self,
        verb: Verb,
        req: &StdinRequest<'_>,
    ) -> Result<Option<Value>> {
        let Some(result) = &self.prev_result else {
            return Ok(None);
        };
        let wanted = match verb {
            Verb::Add => true,
            Verb::Del | Verb::Check => supports_check(req.cni_version),
            Verb::Gc | Verb::Status => false,
        };
        if !wanted {
            return Ok(None);
        }
        // libcni's issue #895 rule: a chained ADD result without a `cniVersion` is of the list's
        // version; a cached one (DEL, CHECK) without one reads as 0.1.0 and is converted.
        let own = result_version(result)?;
        if own == req.cni_version || (verb == Verb::Add && own.is_empty()) {
            return Ok(Some(Value::Object(result.clone())));
        }
        let data = req.prev_result.unwrap_or_default();
        let converted = crate::result::convert(data, req.cni_version)?;
        decode_object(&converted, "converted prevResult").map(|object| Some(Value::Object(object)))
    }
}

/// A result's own `cniVersion` ("" when absent); an error when it is not a string.
fn result_version(result: &Map<String, Value>) -> Result<&str> {
    match result.get("cniVersion") {
        None => Ok(""),
        Some(Value::String(version)) => Ok(version),
        Some(_) => Err(CniError::decode(
            "prevResult: `cniVersion` must be a string",
        )),
    }
}

/// GC's valid attachments: a JSON array, or `null` meaning none are valid.
fn decode_attachments(data: &[u8]) -> Result<Value> {
    match serde_json::from_slice::<Value>(data) {
        Ok(Value::Null) => Ok(Value::Array(Vec::new())),
        Ok(array @ Value::Array(_)) => Ok(array),
        Ok(_) => Err(CniError::config(
            "valid attachments must be a JSON array or null",
        )),
        Err(err) => Err(CniError::decode(format!(
            "valid attachments are not valid JSON: {err}"
        ))),
    }
}
