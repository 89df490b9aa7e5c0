//! libcni's `GetAsVersion` converters between the three families (`pkg/types`): what each
//! direction keeps, loses and refuses.
use serde_json::Value;

use super::model::{Family, IpConfig, LegacyIp, LegacyResult, ModernResult};
use super::route::Route;
use crate::error::{codes, CniError, Result};

/// A decoded result of some family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decoded {
    /// 0.1.0/0.2.0.
    Legacy(LegacyResult),
    /// 0.3.x/0.4.0 or 1.x, with its family.
    Modern(ModernResult, Family),
}

impl Decoded {
    /// Encodes the result unchanged, labelled `version` (of its own family).
    pub(super) fn encode(&self, version: &str) -> Value {
        match self {
            Self::Legacy(legacy) => legacy.encode(version),
            Self::Modern(modern, family) => modern.encode(version, *family),
        }
    }
}

/// Converts `result` to `to`, a known version, and encodes it.
pub(super) fn convert(result: Decoded, to: &str) -> Result<Value> {
    let Some(target) = Family::of(to) else {
        return Err(CniError::new(
            codes::INTERNAL,
            format!("no result family for version {to:?}"),
        ));
    };
    match (result, target) {
        (Decoded::Legacy(legacy), Family::V020) => Ok(legacy.encode(to)),
        (Decoded::Legacy(legacy), family) => Ok(legacy_to_modern(legacy).encode(to, family)),
        (Decoded::Modern(modern, from), Family::V020) => {
            Ok(modern_to_legacy(&as_040(modern, from))?.encode(to))
        }
        (Decoded::Modern(modern, from), family) => {
            Ok(as_040_if(modern, from, family).encode(to, family))
        }
    }
}

/// 1.x → 0.3.x/0.4.0 recomputes each `ips[].version` from the address family; every other
/// direction inside the modern families keeps the entries as they are (the encoder drops what
/// the target family lacks).
fn as_040_if(modern: ModernResult, from: Family, to: Family) -> ModernResult {
    if to == Family::V040 {
        as_040(modern, from)
    } else {
        modern
    }
}

/// The 0.4.0 view of a modern result: versions recomputed when it came from 1.x.
fn as_040(mut modern: ModernResult, from: Family) -> ModernResult {
    if from == Family::V100 {
        for ip in &mut modern.ips {
            if ip.address.is_v4() { "4" } else { "6" }.clone_into(&mut ip.version);
        }
        for interface in &mut modern.interfaces {
            interface.mtu = 0;
            interface.socket_path.clear();
            interface.pci_id.clear();
        }
    }
    modern
}

/// 0.1.0/0.2.0 → 0.4.0: `ip4` then `ip6` become `ips` (no interface index), their routes are
/// flattened in the same order, `dns` is copied. Nothing is refused.
fn legacy_to_modern(legacy: LegacyResult) -> ModernResult {
    let mut out = ModernResult {
        dns: legacy.dns,
        ..ModernResult::default()
    };
    for (version, entry) in [("4", legacy.ip4), ("6", legacy.ip6)] {
        if let Some(entry) = entry {
            out.ips.push(IpConfig {
                version: version.to_owned(),
                interface: None,
                address: entry.ip,
                gateway: entry.gateway,
            });
            out.routes.extend(entry.routes);
        }
    }
    out
}

/// 0.4.0 → 0.1.0/0.2.0: the first `"4"` and first `"6"` address; each route to the family of
/// its `dst` if that family got an address, with only `dst` and `gw`. No address → refused.
fn modern_to_legacy(modern: &ModernResult) -> Result<LegacyResult> {
    let first = |version: &str| {
        modern
            .ips
            .iter()
            .find(|ip| ip.version == version)
            .map(|ip| LegacyIp {
                ip: ip.address,
                gateway: ip.gateway,
                routes: Vec::new(),
            })
    };
    let mut out = LegacyResult {
        ip4: first("4"),
        ip6: first("6"),
        dns: modern.dns.clone(),
    };
    if out.ip4.is_none() && out.ip6.is_none() {
        return Err(CniError::new(
            codes::CONVERSION_REFUSED,
            "cannot convert: no valid IP addresses",
        ));
    }
    for route in &modern.routes {
        let slot = if route.dst.is_v4() {
            out.ip4.as_mut()
        } else {
            out.ip6.as_mut()
        };
        if let Some(entry) = slot {
            entry.routes.push(Route::dst_and_gw(route));
        }
    }
    Ok(out)
}
