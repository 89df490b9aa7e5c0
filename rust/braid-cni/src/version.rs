//! CNI spec versions: the seven known versions, comparison, libcni's list-version selection,
//! braid's negotiation against plugins, and VERSION output decoding.
// STUB: to be implemented.
use crate::error::{CniError, Result};

/// Every CNI version braid speaks, oldest first.
pub const ALL: [&str; 7] = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"];

/// The newest version braid speaks (libcni's `version.Current()`).
pub const CURRENT: &str = "1.1.0";

/// libcni's selection of a list's version from `cniVersion` and `cniVersions` (reference §1.6).
pub fn select_list_version(cni_version: &str, cni_versions: &[String]) -> String {
    let _ = cni_versions;
    cni_version.to_owned()
}

/// The highest version supported by the list (`list_version` ∪ `list_versions`) and by every
/// plugin (`plugin_versions`, each plugin's `supportedVersions`).
pub fn negotiate(list_version: &str, list_versions: &[String], plugin_versions: &[Vec<String>]) -> Result<String> {
    let _ = (list_versions, plugin_versions);
    Ok(list_version.to_owned())
}

/// Decodes a plugin's VERSION output with libcni's rules; returns `supportedVersions`.
pub fn parse_version_output(data: &[u8]) -> Result<Vec<String>> {
    let _ = data;
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}
