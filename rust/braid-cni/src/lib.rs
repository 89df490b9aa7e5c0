//! braid's pure CNI core.
//!
//! Versions and results of every CNI spec version from 0.1.0 to 1.1.0 and their conversion
//! with libcni's rules ([`result`]), the network configuration model for conf and conflist
//! ([`config`]), the stdin each plugin receives for each verb ([`inject`]), `CNI_ARGS`
//! ([`args`]), the identifiers of an attachment ([`names`]) and the error type ([`error`]). No
//! I/O, no unsafe code, no Python.
#![forbid(unsafe_code)]

pub mod args;
pub mod config;
pub mod inject;
pub mod names;
pub mod record;
pub mod result;
pub mod version;

pub use braid_wire::settings::wait_duration;
pub use braid_wire::{error, readiness, settings, trust, wire};
pub use error::{codes, CniError, Result};
