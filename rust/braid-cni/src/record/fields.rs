//! Typed access to a record's members, with the record's defaults and its errors (which
//! member is of the wrong kind).

use serde_json::{Map, Value};

use super::STATES;

/// A member's decoding: its value, or why it is refused.
pub(super) type Decoded<T> = std::result::Result<T, String>;

/// Typed access to an object's members with the record's defaults.
pub(super) struct Fields<'a>(pub(super) &'a Map<String, Value>);

impl Fields<'_> {
    pub(super) fn optional<T>(
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
    pub(super) fn nullable<T>(
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

    pub(super) fn string(&self, key: &str) -> Decoded<String> {
        let text = self.optional(key, |v| v.as_str().map(str::to_owned), "a string")?;
        Ok(text.unwrap_or_default())
    }

    pub(super) fn required_string(&self, key: &str) -> Decoded<String> {
        self.optional(key, |v| v.as_str().map(str::to_owned), "a string")?
            .ok_or_else(|| format!("`{key}` is missing"))
    }

    /// A JSON object member as compact bytes; absent or empty is `None`.
    pub(super) fn object_bytes(&self, key: &str) -> Decoded<Option<Vec<u8>>> {
        let object = self.optional(key, |v| v.as_object().cloned(), "an object")?;
        Ok(object.and_then(object_json))
    }

    /// Any JSON member as compact bytes; absent or null is `None`.
    pub(super) fn json(&self, key: &str) -> Option<Vec<u8>> {
        self.0.get(key).filter(|v| !v.is_null()).map(to_bytes)
    }
}

/// An object as compact bytes; empty is `None`.
pub(super) fn object_json(object: Map<String, Value>) -> Option<Vec<u8>> {
    (!object.is_empty()).then(|| to_bytes(&Value::Object(object)))
}

fn to_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

pub(super) fn state(value: &Value) -> Option<&'static str> {
    let text = value.as_str()?;
    STATES.into_iter().find(|known| *known == text)
}

pub(super) fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

pub(super) fn pairs(value: &Value) -> Option<Vec<(String, String)>> {
    value
        .as_array()?
        .iter()
        .map(|pair| match strings(pair)?.as_slice() {
            [key, value] => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

/// `routing.sourceRouting` of an entry (`false` when it has no `routing`).
pub(super) fn source_routing(fields: &Fields<'_>) -> Decoded<bool> {
    let routing = match fields.0.get("routing") {
        None | Some(Value::Null) => return Ok(false),
        Some(Value::Object(routing)) => routing,
        Some(_) => return Err("`routing` must be an object or null".to_owned()),
    };
    Ok(Fields(routing)
        .optional("sourceRouting", Value::as_bool, "a boolean")?
        .unwrap_or(false))
}
