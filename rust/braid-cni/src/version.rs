//! CNI spec versions: the seven known versions, comparison, libcni's list-version selection,
//! braid's negotiation against plugins, and VERSION output decoding (libcni's `pkg/version`).
use std::cmp::Ordering;

use serde_json::Value;

use crate::error::{codes, CniError, Result};

pub use braid_wire::version::{ALL, BUILD, CURRENT, PACKAGE};

/// A parsed `major.minor.patch` triple.
type Triple = (u64, u64, u64);

/// Parses `N[.N[.N]]` as libcni's `ParseVersion` does; `""` means 0.1.0 (no version declared).
/// Returns `None` for anything else (too many parts, non-digits, overflow).
pub fn parse(version: &str) -> Option<Triple> {
    if version.is_empty() {
        return Some((0, 1, 0));
    }
    let mut parts = [0_u64; 3];
    for (index, part) in version.split('.').enumerate() {
        let slot = parts.get_mut(index)?;
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = part.parse().ok()?;
    }
    Some((parts[0], parts[1], parts[2]))
}

/// Compares two versions numerically (`""` is 0.1.0); `None` if either does not parse.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(parse(a)?.cmp(&parse(b)?))
}

/// Whether `version` parses and is at least `minimum`.
pub fn at_least(version: &str, minimum: &str) -> bool {
    matches!(
        compare(version, minimum),
        Some(Ordering::Greater | Ordering::Equal)
    )
}

/// Whether a configuration of `version` may be sent CHECK and carries `prevResult` on DEL and
/// CHECK (0.4.0 and later).
pub fn supports_check(version: &str) -> bool {
    at_least(version, "0.4.0")
}

/// Whether a configuration of `version` may be sent GC and STATUS (1.1.0 and later).
pub fn supports_gc_and_status(version: &str) -> bool {
    at_least(version, "1.1.0")
}

/// The entry of [`ALL`] equal to `version` numerically (`"1.0"` is 1.0.0), if any.
pub fn known(version: &str) -> Option<&'static str> {
    let triple = parse(version)?;
    ALL.iter().copied().find(|v| parse(v) == Some(triple))
}

/// libcni's selection of a list's version from `cniVersion` and `cniVersions` (`libcni/conf.go`):
/// the highest of the `cniVersions` entries and `cniVersion` that are not newer than
/// [`CURRENT`]; with none left, `cniVersion` as written. Unparseable entries are the config
/// parser's business and are ignored here.
pub fn select_list_version(cni_version: &str, cni_versions: &[String]) -> String {
    let not_newer = |v: &str| matches!(compare(v, CURRENT), Some(Ordering::Less | Ordering::Equal));
    let mut best: Option<&str> = None;
    let declared = (!cni_version.is_empty()).then_some(cni_version);
    for candidate in cni_versions.iter().map(String::as_str).chain(declared) {
        if !not_newer(candidate) {
            continue;
        }
        let newer = match best {
            None => true,
            Some(b) => compare(candidate, b) == Some(Ordering::Greater),
        };
        if newer {
            best = Some(candidate);
        }
    }
    best.unwrap_or(cni_version).to_owned()
}

/// braid's negotiation: the highest version of `{list_version} ∪ list_versions` that braid
/// knows and that every plugin's `supportedVersions` contains. An empty `list_version` with no
/// `list_versions` means 0.1.0. With no plugins, libcni's [`select_list_version`].
pub fn negotiate(
    list_version: &str,
    list_versions: &[String],
    plugin_versions: &[Vec<String>],
) -> Result<String> {
    if plugin_versions.is_empty() {
        return Ok(select_list_version(list_version, list_versions));
    }
    let declared = (!list_version.is_empty() || list_versions.is_empty()).then_some(list_version);
    let mut offered: Vec<&'static str> = list_versions
        .iter()
        .map(String::as_str)
        .chain(declared)
        .filter_map(known)
        .collect();
    offered.sort_by(|a, b| compare(b, a).unwrap_or(Ordering::Equal));
    let supported_by_all = |v: &str| {
        plugin_versions
            .iter()
            .all(|plugin| plugin.iter().any(|p| known(p) == Some(v)))
    };
    offered.into_iter().find(|v| supported_by_all(v)).map(str::to_owned).ok_or_else(|| {
        let plugins: Vec<String> =
            plugin_versions.iter().enumerate().map(|(i, p)| format!("plugin {i} supports [{}]", p.join(", "))).collect();
        CniError::new(
            codes::INCOMPATIBLE_VERSION,
            format!(
                "no CNI version is supported by both the network list and all its plugins: the list offers \
                 cniVersion {list_version:?} and cniVersions [{}]; {}",
                list_versions.join(", "),
                plugins.join("; ")
            ),
        )
    })
}

/// Decodes a plugin's VERSION output with libcni's rules (`pkg/version`); returns its
/// `supportedVersions`. A missing `supportedVersions` is accepted only for `cniVersion` 0.2.0.
pub fn parse_version_output(data: &[u8]) -> Result<Vec<String>> {
    let value: Value = serde_json::from_slice(data).map_err(|e| {
        CniError::decode(format!(
            "decoding version info: plugin output is not one JSON document: {e}"
        ))
    })?;
    let Value::Object(info) = value else {
        return Err(CniError::decode(
            "decoding version info: plugin output is not a JSON object",
        ));
    };
    let cni_version = match info.get("cniVersion") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => {
            return Err(CniError::decode(
                "decoding version info: cniVersion is not a string",
            ))
        }
    };
    if cni_version.is_empty() {
        return Err(CniError::decode(
            "decoding version info: missing field cniVersion",
        ));
    }
    let supported = match info.get("supportedVersions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(CniError::decode(format!(
                    "decoding version info: supportedVersions[{i}] is not a string"
                ))),
            })
            .collect::<Result<Vec<String>>>()?,
        Some(_) => {
            return Err(CniError::decode(
                "decoding version info: supportedVersions is not a list",
            ))
        }
    };
    if supported.is_empty() {
        if cni_version == "0.2.0" {
            return Ok(vec!["0.1.0".to_owned(), "0.2.0".to_owned()]);
        }
        return Err(CniError::decode(
            "decoding version info: missing field supportedVersions",
        ));
    }
    Ok(supported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_libcni() {
        assert_eq!(parse(""), Some((0, 1, 0)));
        assert_eq!(parse("1"), Some((1, 0, 0)));
        assert_eq!(parse("0.4"), Some((0, 4, 0)));
        assert_eq!(parse("1.2.3.4"), None);
        assert_eq!(parse("1..0"), None);
        assert_eq!(parse("a.b"), None);
        assert_eq!(parse("99999999999999999999999"), None);
    }

    #[test]
    fn version_gates() {
        assert!(supports_check("0.4.0") && supports_check("1.0.0") && !supports_check("0.3.1"));
        assert!(!supports_check("") && !supports_check("garbage"));
        assert!(supports_gc_and_status("1.1.0") && !supports_gc_and_status("1.0.0"));
        assert_eq!(known("1.0"), Some("1.0.0"));
        assert_eq!(known("1.2.0"), None);
    }
}
