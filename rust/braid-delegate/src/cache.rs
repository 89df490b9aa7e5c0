//! The result cache (libcni's `cniCacheV1`, `libcni/api.go`): where an attachment's entry lives
//! and which result an entry holds. `braid.cni` writes the entries; the DEL replay and the
//! runtime read the result from them with [`decode_result`].

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use braid_cni::result::result_version;
use braid_cni::{codes, CniError};
use serde_json::Value;

/// The largest cache entry read.
pub const MAX_ENTRY_BYTES: u64 = 4 << 20;
/// The `kind` of a libcni cache entry.
pub const CACHE_KIND: &str = "cniCacheV1";

/// `<cache_dir>/results/<network>-<container>-<ifname>`; code 4 when a part cannot be (part of)
/// a file name.
pub fn entry_path(
    cache_dir: &Path,
    network: &str,
    container_id: &str,
    ifname: &str,
) -> Result<PathBuf, CniError> {
    for (what, part) in [
        ("network name", network),
        ("container ID", container_id),
        ("interface name", ifname),
    ] {
        if part.is_empty() || part == "." || part == ".." || part.contains(['/', '\0']) {
            return Err(CniError::new(
                codes::INVALID_ENVIRONMENT,
                format!("{what} {part:?} cannot name a result cache file"),
            ));
        }
    }
    Ok(cache_dir
        .join("results")
        .join(format!("{network}-{container_id}-{ifname}")))
}

/// What a cache file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cached {
    /// Whether the file is in the legacy format (a bare result), not a `cniCacheV1` entry.
    pub legacy: bool,
    /// The result (JSON bytes); `None` for an entry without one.
    pub result: Option<Vec<u8>>,
}

/// The result a cache file's bytes hold: a `cniCacheV1` entry's `result` (`None` when it has
/// none), or the whole file in the legacy format (a bare result). Code 6 when the bytes are
/// neither.
pub fn decode_result(data: &[u8]) -> Result<Option<Vec<u8>>, CniError> {
    decode(data).map(|cached| cached.result)
}

/// [`decode_result`], saying which format the file is in.
pub fn decode(data: &[u8]) -> Result<Cached, CniError> {
    let corrupt = |why: String| CniError::decode("the cached result is corrupt").with_details(why);
    let entry = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(entry)) => entry,
        Ok(_) => return Err(corrupt("not a JSON object".into())),
        Err(err) => return Err(corrupt(err.to_string())),
    };
    match entry.get("kind") {
        None => {
            result_version(data).map_err(|err| corrupt(err.msg))?;
            Ok(Cached {
                legacy: true,
                result: Some(data.to_vec()),
            })
        }
        Some(Value::String(kind)) if kind == CACHE_KIND => {
            let result = match entry.get("result") {
                None | Some(Value::Null) => None,
                Some(result @ Value::Object(_)) => {
                    Some(serde_json::to_vec(result).map_err(|err| corrupt(err.to_string()))?)
                }
                Some(_) => return Err(corrupt("its result is not a JSON object".into())),
            };
            Ok(Cached {
                legacy: false,
                result,
            })
        }
        Some(kind) => Err(corrupt(format!("unknown kind {kind}"))),
    }
}

/// The cached result of the entry at `path`; `None` when absent, too large, unreadable or
/// corrupt (a DEL then goes on without it).
pub fn read_result(path: &Path) -> Option<Vec<u8>> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_ENTRY_BYTES {
        return None;
    }
    decode_result(&fs::read(path).ok()?).ok().flatten()
}

/// Removes a file; one already gone is fine.
pub fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
