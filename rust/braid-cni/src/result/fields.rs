//! Typed reads of result fields from parsed JSON, each failure a code-6 error naming the field
//! by its path (`ips[1].address`). JSON `null` reads as absent, as Go's decoder treats it.
use serde_json::{Map, Value};

use super::address::{Cidr, Ip};
use crate::error::{CniError, Result};

/// A JSON object being decoded, with its path for error messages.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: &'a str,
}

/// The JSON type name used in messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A code-6 error for the field at `path`.
pub(super) fn invalid(path: &str, what: &str) -> CniError {
    if path.is_empty() {
        CniError::decode(format!("invalid CNI result: {what}"))
    } else {
        CniError::decode(format!("invalid CNI result: {path}: {what}"))
    }
}

/// `value` as an object (`None` for `null`).
pub(super) fn object<'a>(value: &'a Value, path: &'a str) -> Result<Option<Fields<'a>>> {
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(Fields { map, path })),
        other => Err(invalid(
            path,
            &format!("expected an object, found {}", kind(other)),
        )),
    }
}

impl<'a> Fields<'a> {
    /// An empty object at the top level (a `null` document reads as one).
    pub(super) fn empty(map: &'a Map<String, Value>) -> Self {
        Self { map, path: "" }
    }

    /// The path of `key` inside this object.
    pub(super) fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// The raw value of `key`, `None` when missing or `null`.
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// An optional string field.
    pub(super) fn string(&self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(
                &self.path_of(key),
                &format!("expected a string, found {}", kind(other)),
            )),
        }
    }

    /// An optional string field, empty when absent.
    pub(super) fn text(&self, key: &str) -> Result<String> {
        Ok(self.string(key)?.unwrap_or_default())
    }

    /// An optional integer field (Go `int`: a 64-bit integer literal).
    pub(super) fn integer(&self, key: &str) -> Result<Option<i64>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| {
                invalid(
                    &self.path_of(key),
                    &format!("expected an integer, found {n}"),
                )
            }),
            Some(other) => Err(invalid(
                &self.path_of(key),
                &format!("expected an integer, found {}", kind(other)),
            )),
        }
    }

    /// The elements of an optional list field (empty when absent).
    pub(super) fn list(&self, key: &str) -> Result<&'a [Value]> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(invalid(
                &self.path_of(key),
                &format!("expected a list, found {}", kind(other)),
            )),
        }
    }

    /// An optional list of strings.
    pub(super) fn strings(&self, key: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for (i, item) in self.list(key)?.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => {
                    let path = format!("{}[{i}]", self.path_of(key));
                    return Err(invalid(
                        &path,
                        &format!("expected a string, found {}", kind(other)),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// A required `address/prefix` field.
    pub(super) fn cidr(&self, key: &str) -> Result<Cidr> {
        let path = self.path_of(key);
        let text = self.string(key)?.ok_or_else(|| invalid(&path, "missing"))?;
        Cidr::parse(&text).ok_or_else(|| {
            invalid(
                &path,
                &format!("{text:?} is not an address with a prefix length"),
            )
        })
    }

    /// An optional IP address field; `""` reads as absent, as Go's `net.IP` decoder does.
    pub(super) fn ip(&self, key: &str) -> Result<Option<Ip>> {
        match self.string(key)? {
            None => Ok(None),
            Some(text) if text.is_empty() => Ok(None),
            Some(text) => Ip::parse(&text).map(Some).ok_or_else(|| {
                invalid(
                    &self.path_of(key),
                    &format!("{text:?} is not an IP address"),
                )
            }),
        }
    }

    /// Decodes each element of the list field `key` as an object with `decode`.
    pub(super) fn each<T>(
        &self,
        key: &str,
        decode: impl Fn(Fields<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let base = self.path_of(key);
        let mut out = Vec::new();
        for (i, item) in self.list(key)?.iter().enumerate() {
            let path = format!("{base}[{i}]");
            let fields = object(item, &path)?
                .ok_or_else(|| invalid(&path, "expected an object, found null"))?;
            out.push(decode(fields)?);
        }
        Ok(out)
    }

    /// The optional object field `key`.
    pub(super) fn child<T>(
        &self,
        key: &str,
        decode: impl Fn(Fields<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let path = self.path_of(key);
        match self.get(key) {
            None => Ok(None),
            Some(value) => match object(value, &path)? {
                None => Ok(None),
                Some(fields) => decode(fields).map(Some),
            },
        }
    }
}
