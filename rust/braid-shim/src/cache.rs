//! The result cache the runtime `braid.cni` keeps under `<cniDir>/results/` (libcni's
//! `cniCacheV1` layout of libcni's `api.go`): read for `prevResult`, removed after a DEL.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The largest cache file read.
const MAX_ENTRY_BYTES: u64 = 4 << 20;

/// `<cni_dir>/results/<network>-<container>-<ifname>`; `None` when a part cannot name a file.
pub fn entry_path(
    cni_dir: &Path,
    network: &str,
    container_id: &str,
    ifname: &str,
) -> Option<PathBuf> {
    let usable =
        |part: &str| !part.is_empty() && part != "." && part != ".." && !part.contains(['/', '\0']);
    if !(usable(network) && usable(container_id) && usable(ifname)) {
        return None;
    }
    Some(
        cni_dir
            .join("results")
            .join(format!("{network}-{container_id}-{ifname}")),
    )
}

/// The cached final result (JSON bytes); `None` when absent, unreadable or without a result.
/// A `cniCacheV1` entry holds it under `result`; the legacy format is the bare result.
pub fn cached_result(path: &Path) -> Option<Vec<u8>> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_ENTRY_BYTES {
        return None;
    }
    let data = fs::read(path).ok()?;
    let Value::Object(entry) = serde_json::from_slice::<Value>(&data).ok()? else {
        return None;
    };
    if entry.get("kind").and_then(Value::as_str) == Some("cniCacheV1") {
        return match entry.get("result") {
            Some(result @ Value::Object(_)) => serde_json::to_vec(result).ok(),
            _ => None,
        };
    }
    Some(data)
}

/// Removes a file; one already gone is fine.
pub fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
