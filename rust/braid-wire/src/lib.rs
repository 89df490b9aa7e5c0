//! What the two executables of braid's shim share with each other and with the rest of braid:
//! the shim ↔ daemon protocol ([`wire`]), the CNI error type and its rendering ([`error`]), the
//! CNI versions braid speaks ([`version`]) and the shim's reading of braid's configuration on
//! stdin ([`settings`]), where the paths it trusts come from ([`trust`]: the node file, else
//! paths owned by root and closed), how long the shim waits for the daemon's answer
//! ([`answer`]) and for the cluster default network's readiness ([`readiness`]).
//!
//! `no_std` (with `alloc`): the `braid` front (`rust/braid-front`) runs without a C library,
//! so every byte it puts on the wire or on stdout comes from this crate, exactly as the full
//! shim (`braid-full`) and the daemon produce and read it. No I/O, no unsafe code.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod answer;
pub mod error;
pub mod readiness;
pub mod settings;
pub mod trust;
pub mod version;
pub mod wire;

pub use error::{codes, CniError, Result};
