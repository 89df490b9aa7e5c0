//! The errors of namespace and netlink operations: plain Rust errors, mapped to Python's
//! exceptions by the glue crate.

use std::fmt;
use std::io;

/// What went wrong while entering a namespace or talking rtnetlink inside it.
#[derive(Debug)]
pub enum NetnsError {
    /// The namespace path could not be opened, or what it opens is not a network namespace.
    BadNamespace { path: String, source: io::Error },
    /// A system call other than entering the namespace failed (`socket`, `send`, `recv`, ...).
    Os { op: &'static str, source: io::Error },
    /// The kernel refused a netlink request; `message` is its extended acknowledgement, if any.
    Kernel {
        op: &'static str,
        source: io::Error,
        message: Option<String>,
    },
    /// The kernel's reply did not have the shape netlink promises.
    Malformed(String),
    /// A caller's argument is invalid (family, address text, interface name).
    InvalidArgument(String),
    /// The named interface does not exist in the namespace.
    NoSuchLink { ifname: String },
    /// No interface's connected prefix contains the gateway.
    Unreachable { gateway: String },
    /// Several interfaces' connected prefixes contain the gateway equally well.
    Ambiguous {
        gateway: String,
        ifnames: Vec<String>,
    },
    /// The thread that entered the namespace panicked.
    WorkerPanicked,
}

impl NetnsError {
    /// The OS error number behind this error, when there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::BadNamespace { source, .. }
            | Self::Os { source, .. }
            | Self::Kernel { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }

    /// True when the namespace path itself is at fault (CNI code 4 territory).
    pub fn is_bad_namespace(&self) -> bool {
        matches!(self, Self::BadNamespace { .. })
    }
}

impl fmt::Display for NetnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadNamespace { path, source } => {
                write!(f, "{path:?} is not a usable network namespace: {source}")
            }
            Self::Os { op, source } => write!(f, "{op} failed: {source}"),
            Self::Kernel {
                op,
                source,
                message: Some(m),
            } => {
                write!(f, "the kernel refused {op}: {m} ({source})")
            }
            Self::Kernel {
                op,
                source,
                message: None,
            } => {
                write!(f, "the kernel refused {op}: {source}")
            }
            Self::Malformed(what) => write!(f, "malformed netlink reply: {what}"),
            Self::InvalidArgument(what) => f.write_str(what),
            Self::NoSuchLink { ifname } => write!(f, "no interface named {ifname:?}"),
            Self::Unreachable { gateway } => write!(
                f,
                "gateway {gateway} is not on any interface's connected prefix; \
                 add an address in its subnet or name the interface"
            ),
            Self::Ambiguous { gateway, ifnames } => write!(
                f,
                "gateway {gateway} is on the connected prefix of several interfaces ({}); \
                 name the interface",
                ifnames.join(", ")
            ),
            Self::WorkerPanicked => f.write_str("the namespace worker thread panicked"),
        }
    }
}

impl std::error::Error for NetnsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::BadNamespace { source, .. }
            | Self::Os { source, .. }
            | Self::Kernel { source, .. } => Some(source),
            _ => None,
        }
    }
}
