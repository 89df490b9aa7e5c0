//! CNI results of the three families (020, 040, 100), parsed with libcni's rules and converted
//! between every ordered pair of versions (reference §2).
// STUB: to be implemented.
use crate::error::{CniError, Result};

/// Converts a result to `to_version` (empty means 0.1.0) with libcni's rules, losses and
/// refusals. Same version returns the input unchanged.
pub fn convert(data: &[u8], to_version: &str) -> Result<Vec<u8>> {
    let _ = (data, to_version);
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}

/// Parses a plugin's ADD output for a configuration of `config_version`: a missing or empty
/// `cniVersion` means `config_version` (libcni's issue #895 rule). Returns the result JSON.
pub fn parse_plugin_output(data: &[u8], config_version: &str) -> Result<Vec<u8>> {
    let _ = (data, config_version);
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}

/// The `cniVersion` of a result (missing means 0.1.0), validated to be a known version.
pub fn result_version(data: &[u8]) -> Result<String> {
    let _ = data;
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}

/// Decodes a plugin's error object (`code`, `msg`, `details`; `cniVersion` optional).
pub fn parse_error_object(data: &[u8]) -> Result<CniError> {
    let _ = data;
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}
