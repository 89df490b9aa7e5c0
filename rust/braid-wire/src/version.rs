//! The CNI spec versions braid speaks (the rest of the version logic is in `braid-cni`).

/// Every CNI version braid speaks, oldest first.
pub const ALL: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// The newest version braid speaks (libcni's `version.Current()`).
pub const CURRENT: &str = "1.1.0";

/// The shim's answer to VERSION, with its trailing newline.
pub fn version_output() -> alloc::vec::Vec<u8> {
    let obj = serde_json::json!({
        "cniVersion": CURRENT,
        "supportedVersions": ALL,
    });
    let mut out = serde_json::to_vec(&obj).unwrap_or_default();
    out.push(b'\n');
    out
}
