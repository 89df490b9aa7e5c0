//! The one error type of braid's CNI core, carrying its CNI error code.
//!
//! Every failure in the pure core becomes a [`CniError`]; it is rendered as the CNI error JSON
//! object in exactly one place, [`CniError::to_json`].

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Well-known CNI error codes (SPEC "Error codes") and braid's own (100 and up).
pub mod codes {
    /// Incompatible CNI version.
    pub const INCOMPATIBLE_VERSION: u32 = 1;
    /// Unsupported field in network configuration.
    pub const UNSUPPORTED_FIELD: u32 = 2;
    /// Container unknown or does not exist.
    pub const UNKNOWN_CONTAINER: u32 = 3;
    /// Invalid or missing environment variables.
    pub const INVALID_ENVIRONMENT: u32 = 4;
    /// I/O failure.
    pub const IO_FAILURE: u32 = 5;
    /// Failed to decode content.
    pub const DECODE_FAILURE: u32 = 6;
    /// Invalid network configuration.
    pub const INVALID_CONFIG: u32 = 7;
    /// Try again later.
    pub const TRY_AGAIN_LATER: u32 = 11;
    /// A delegate plugin failed or misbehaved (garbage, nothing, two documents on stdout).
    pub const PLUGIN_FAILURE: u32 = 100;
    /// A result could not be converted between CNI versions.
    pub const CONVERSION_REFUSED: u32 = 101;
    /// A delegate plugin outlived its deadline; its process group was killed.
    pub const PLUGIN_TIMEOUT: u32 = 102;
    /// A delegate plugin binary is not in any plugin directory.
    pub const PLUGIN_NOT_FOUND: u32 = 103;
    /// Internal error (libcni's `ErrInternal`; also a panic in the shim).
    pub const INTERNAL: u32 = 999;

    /// Every code above by its name, in order: the one table `braid.errors` takes its
    /// constants from (`braid._native.ERROR_CODES`).
    pub const ALL: [(&str, u32); 13] = [
        ("INCOMPATIBLE_VERSION", INCOMPATIBLE_VERSION),
        ("UNSUPPORTED_FIELD", UNSUPPORTED_FIELD),
        ("UNKNOWN_CONTAINER", UNKNOWN_CONTAINER),
        ("INVALID_ENVIRONMENT", INVALID_ENVIRONMENT),
        ("IO_FAILURE", IO_FAILURE),
        ("DECODE_FAILURE", DECODE_FAILURE),
        ("INVALID_CONFIG", INVALID_CONFIG),
        ("TRY_AGAIN_LATER", TRY_AGAIN_LATER),
        ("PLUGIN_FAILURE", PLUGIN_FAILURE),
        ("CONVERSION_REFUSED", CONVERSION_REFUSED),
        ("PLUGIN_TIMEOUT", PLUGIN_TIMEOUT),
        ("PLUGIN_NOT_FOUND", PLUGIN_NOT_FOUND),
        ("INTERNAL", INTERNAL),
    ];
}

/// A CNI error: a code, a message saying what went wrong and where, and optional details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CniError {
    /// The CNI error code.
    pub code: u32,
    /// What was wrong, where, and what to do.
    pub msg: String,
    /// Optional extra details.
    pub details: String,
}

/// Result alias used throughout the core.
pub type Result<T> = core::result::Result<T, CniError>;

impl CniError {
    /// A new error with `code` and `msg` and no details.
    pub fn new(code: u32, msg: impl Into<String>) -> Self {
        Self {
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    /// The same error with `details` set.
    #[must_use]
    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = details.into();
        self
    }

    /// Shorthand for a code-6 decode failure.
    pub fn decode(msg: impl Into<String>) -> Self {
        Self::new(codes::DECODE_FAILURE, msg)
    }

    /// Shorthand for a code-7 invalid configuration.
    pub fn config(msg: impl Into<String>) -> Self {
        Self::new(codes::INVALID_CONFIG, msg)
    }

    /// The CNI error JSON object: `{"cniVersion", "code", "msg", "details"}`.
    ///
    /// `cniVersion` is omitted when `cni_version` is empty and `details` when it is empty,
    /// as Go plugins do.
    pub fn to_json(&self, cni_version: &str) -> Vec<u8> {
        let mut obj = serde_json::Map::new();
        if !cni_version.is_empty() {
            obj.insert("cniVersion".into(), cni_version.into());
        }
        obj.insert("code".into(), self.code.into());
        obj.insert("msg".into(), self.msg.clone().into());
        if !self.details.is_empty() {
            obj.insert("details".into(), self.details.clone().into());
        }
        let mut out = serde_json::to_vec_pretty(&serde_json::Value::Object(obj))
            .unwrap_or_else(|_| b"{\"code\": 999, \"msg\": \"error rendering failed\"}".to_vec());
        out.push(b'\n');
        out
    }
}

impl fmt::Display for CniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.details.is_empty() {
            write!(f, "{} (code {})", self.msg, self.code)
        } else {
            write!(f, "{}: {} (code {})", self.msg, self.details, self.code)
        }
    }
}

impl core::error::Error for CniError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_table_names_every_code_once() {
        let mut names: Vec<&str> = codes::ALL.iter().map(|(name, _)| *name).collect();
        let mut values: Vec<u32> = codes::ALL.iter().map(|(_, code)| *code).collect();
        names.sort_unstable();
        names.dedup();
        values.sort_unstable();
        values.dedup();
        assert_eq!(names.len(), codes::ALL.len());
        assert_eq!(values.len(), codes::ALL.len());
        assert!(codes::ALL.contains(&("INVALID_CONFIG", codes::INVALID_CONFIG)));
    }

    #[test]
    fn renders_without_empty_fields() {
        let e = CniError::new(7, "bad name");
        let v: serde_json::Value = serde_json::from_slice(&e.to_json("")).unwrap();
        assert_eq!(v, serde_json::json!({"code": 7, "msg": "bad name"}));
    }

    #[test]
    fn renders_all_fields() {
        let e = CniError::new(11, "later").with_details("busy");
        let v: serde_json::Value = serde_json::from_slice(&e.to_json("1.1.0")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"cniVersion": "1.1.0", "code": 11, "msg": "later", "details": "busy"})
        );
    }
}
