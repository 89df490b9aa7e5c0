//! Network configuration (conf and conflist) with libcni's validation, keeping unknown keys,
//! key order and number text verbatim.
// STUB: to be implemented.
use crate::error::{CniError, Result};

/// Validates a conflist and returns its summary JSON (see `braid._native.parse_network_list`).
pub fn summarize(data: &[u8]) -> Result<Vec<u8>> {
    let _ = data;
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}

/// Up-converts a single-plugin conf into a conflist holding the original object verbatim.
pub fn conf_to_list(data: &[u8]) -> Result<Vec<u8>> {
    let _ = data;
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}

/// Appends plugin objects (each must have a `type`) to a conflist's `plugins`.
pub fn append_plugins(list: &[u8], plugins: &[&[u8]]) -> Result<Vec<u8>> {
    let _ = (list, plugins);
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}
