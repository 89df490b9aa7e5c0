//! Decoding inputs into order-preserving JSON objects and encoding them back compactly.

use serde_json::{Map, Value};

use crate::error::{CniError, Result};

/// Parses `data` as one JSON object. Not JSON at all is a decode failure (code 6); JSON of
/// another kind is an invalid configuration (code 7). `what` names the input in the message.
pub(crate) fn decode_object(data: &[u8], what: &str) -> Result<Map<String, Value>> {
    match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(CniError::config(format!(
            "{what} must be a JSON object, not {}",
            kind_of(&other)
        ))),
        Err(err) => Err(CniError::decode(format!("{what} is not valid JSON: {err}"))),
    }
}

/// Compact JSON text of `value`; keys keep their order and numbers their original text.
pub(crate) fn encode(value: &Value) -> Vec<u8> {
    // Serializing a `Value` cannot fail: every map key is a string.
    serde_json::to_vec(value).unwrap_or_default()
}

/// The JSON kind of a value, for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
