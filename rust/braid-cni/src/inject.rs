//! The stdin each plugin of a list receives for each verb (reference §1.7).
// STUB: to be implemented.
use crate::error::{CniError, Result};

/// What to build one plugin's stdin from.
#[derive(Debug, Clone, Copy)]
pub struct StdinRequest<'a> {
    /// The network list JSON (as loaded; never re-ordered).
    pub network_list: &'a [u8],
    /// Index of the plugin in `plugins`.
    pub index: usize,
    /// The CNI verb: `ADD`, `DEL`, `CHECK`, `GC`, `STATUS`.
    pub command: &'a str,
    /// The version the list runs at (injected as `cniVersion`).
    pub cni_version: &'a str,
    /// The runtime's capability arguments, a JSON object.
    pub capability_args: Option<&'a [u8]>,
    /// The previous result (ADD: the previous plugin's; DEL/CHECK: the cached one).
    pub prev_result: Option<&'a [u8]>,
    /// GC's valid attachments, a JSON array (or `null`).
    pub valid_attachments: Option<&'a [u8]>,
    /// Keys merged into the plugin's `args.cni` object.
    pub args_cni: Option<&'a [u8]>,
}

/// Builds the stdin of one plugin.
pub fn plugin_stdin(req: &StdinRequest<'_>) -> Result<Vec<u8>> {
    let _ = req;
    Err(CniError::new(crate::codes::INTERNAL, "not implemented"))
}
