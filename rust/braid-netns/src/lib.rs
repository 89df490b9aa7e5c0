//! Network namespace handles and netlink operations; every `unsafe` block carries a
//! `SAFETY:` comment.
//!
//! Work inside a namespace runs on a dedicated thread that enters, does it and restores or
//! dies ([`in_namespace`]); the one exception, [`enter::socket_in_namespace`], enters on the
//! calling thread only long enough to open a netlink socket there and comes back before it
//! returns (the process aborts if it cannot: a thread left in a pod's namespace would make
//! every later request act there).
//!
//! Netlink is spoken directly over a `NETLINK_ROUTE` socket: [`message`] and [`header`] encode
//! and decode (pure, unit-tested), [`socket`] sends and receives, and [`link`], [`route`],
//! [`rule`], [`default_route`] and [`source_routing`] are the operations braid needs in a
//! pod's namespace.

pub mod address;
pub mod default_route;
pub mod enter;
pub mod error;
pub mod header;
pub mod link;
pub mod message;
pub mod route;
pub mod rule;
pub mod socket;
pub mod source_routing;
mod source_routing_ops;

pub use default_route::set_default_route;
pub use enter::in_namespace;
pub use error::NetnsError;
pub use link::{link_info, list_links, Link};
pub use route::{list_routes, routes_json, Route};
pub use source_routing::SourceRouting;

use std::ffi::CString;
use std::io;

/// The identity of a namespace file: `(st_dev, st_ino)` of what `path` opens.
///
/// Two paths name the same namespace exactly when their identities are equal; comparing path
/// strings is wrong (`/var/run` is often a symlink to `/run`).
pub fn namespace_id(path: &str) -> io::Result<(u64, u64)> {
    let c_path = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `c_path` is a valid NUL-terminated string and `st` points to writable memory
    // large enough for a `stat`; `stat` initialises it when it returns 0.
    let rc = unsafe { libc::stat(c_path.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `stat` returned 0, so it filled the whole structure.
    let st = unsafe { st.assume_init() };
    Ok((st.st_dev, st.st_ino))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_namespace_has_an_identity() {
        let a = namespace_id("/proc/self/ns/net").unwrap();
        let b = namespace_id("/proc/thread-self/ns/net").unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn missing_path_is_an_error() {
        assert!(namespace_id("/nonexistent/ns").is_err());
        assert!(namespace_id("bad\0path").is_err());
    }
}
