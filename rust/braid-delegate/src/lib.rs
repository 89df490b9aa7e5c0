//! Running a delegate plugin and tearing down an attachment record, the one implementation
//! that both the compiled shim's DEL replay (`braid-shim`) and the Python runtime `braid.cni`
//! (through `braid._native`) use:
//!
//! - [`lookup`]: a plugin type is a plain file name, found as the first executable regular file
//!   of that name in the plugin directories (CNI spec, "Parameters": `CNI_PATH`);
//! - [`judge`]: a plugin's exit judged with libcni's rules (`pkg/invoke`), and the VERSION
//!   answer with its fallback for plugins older than VERSION;
//! - [`cache`]: the result cache's paths and the reading of its entries (libcni's
//!   `cniCacheV1`);
//! - [`lock`]: the container's lock files;
//! - [`delegates`]: plugins run as processes (`braid-exec`) with the CNI variables;
//! - [`teardown`]: the DEL of a network list, plugins in reverse with `prevResult`;
//! - [`durable`]: the durable write of a record, over a spare file or through a new one;
//! - [`spares`]: what a spare record file holds, and the spare holding a container's record;
//! - [`trust`]: the shim's trusted paths read from the node (the node file, `stat(2)`);
//! - [`devinfo`]: the device-information files braid wrote for a container, removed once its
//!   attachments are torn down.
//!
//! The pure rules take bytes and give bytes or a [`CniError`](braid_cni::CniError); the
//! process and file work is kept to [`delegates`], [`lock`], [`devinfo`], [`durable`] and the readers of
//! [`cache`].
#![forbid(unsafe_code)]

use std::time::Duration;

pub mod cache;
pub mod delegates;
pub mod devinfo;
pub mod durable;
pub mod judge;
pub mod lock;
pub mod lookup;
pub mod spares;
pub mod teardown;
pub mod trust;

/// The most stdout accepted from a plugin; more kills it (code 100).
pub const MAX_STDOUT_BYTES: usize = 1 << 20;
/// Silence allowed on a plugin's pipes once it has exited (a descendant may hold them).
pub const EXIT_GRACE: Duration = Duration::from_millis(200);
