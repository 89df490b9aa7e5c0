//! The routing half of a replayed DEL: the rules and table routes of every attachment that
//! opted into source routing (`braid-cni.io/routing`, `docs/annotations.md`) are removed from
//! the pod's namespace before the delegates' DEL, by the same `braid-netns` code the daemon
//! uses.

use braid_cni::record::Entry;
use braid_cni::{codes, CniError};
use braid_netns::source_routing;

/// Removes the source routing of the routed `entries` from the namespace at `netns`; one error
/// per attachment whose routing could not be removed. A namespace that is gone (or none given)
/// holds nothing to remove.
pub fn clear(entries: &[&Entry], netns: &str) -> Vec<CniError> {
    if netns.is_empty() {
        return Vec::new();
    }
    let mut failures = Vec::new();
    for entry in entries.iter().filter(|entry| entry.source_routing) {
        match source_routing::clear(netns, &entry.ifname) {
            Err(err) if !err.is_bad_namespace() => failures.push(
                CniError::new(
                    codes::INTERNAL,
                    format!(
                        "{}: cannot remove the routing of {} in network namespace {netns:?}",
                        entry.display_name(),
                        entry.ifname
                    ),
                )
                .with_details(err.to_string()),
            ),
            _ => {}
        }
    }
    failures
}
