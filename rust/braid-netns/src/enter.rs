//! The one primitive that enters a network namespace.
//!
//! A dedicated thread is created for each call: it `setns`es into the namespace, does the
//! work (typically opening a netlink socket and talking to the kernel) and then ends. It is
//! never a caller's thread and never returns to a pool, so it need not switch back.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread;

use crate::error::NetnsError;

fn bad_namespace(path: &str, source: io::Error) -> NetnsError {
    NetnsError::BadNamespace {
        path: path.to_owned(),
        source,
    }
}

/// Opens a namespace file; opening changes nothing in the calling thread.
fn open_namespace(path: &str) -> Result<OwnedFd, NetnsError> {
    let c_path = CString::new(path)
        .map_err(|_| bad_namespace(path, io::Error::from(io::ErrorKind::InvalidInput)))?;
    // SAFETY: `c_path` is a valid NUL-terminated string; the result is checked.
    let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(bad_namespace(path, io::Error::last_os_error()));
    }
    // SAFETY: `raw` is a descriptor we just opened and nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Moves the calling thread into the network namespace `ns`. Only ever called on a thread
/// created by [`in_namespace`].
fn enter(ns: &OwnedFd, path: &str) -> Result<(), NetnsError> {
    // SAFETY: `ns` is an open descriptor; `setns` only changes this thread's namespace.
    let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EINVAL) {
        // What `path` opens is not a network namespace (a plain file, another kind of ns).
        return Err(bad_namespace(path, err));
    }
    Err(NetnsError::Os {
        op: "setns(CLONE_NEWNET)",
        source: err,
    })
}

/// Runs `work` on a new thread inside the network namespace at `path` and returns its result.
///
/// The calling thread's namespace never changes.
pub fn in_namespace<T, F>(path: &str, work: F) -> Result<T, NetnsError>
where
    T: Send,
    F: FnOnce() -> Result<T, NetnsError> + Send,
{
    let ns = open_namespace(path)?;
    thread::scope(|scope| {
        let worker = thread::Builder::new()
            .name("braid-netns".to_owned())
            .spawn_scoped(scope, move || {
                enter(&ns, path)?;
                drop(ns);
                work()
            })
            .map_err(|source| NetnsError::Os {
                op: "spawning the namespace thread",
                source,
            })?;
        worker.join().unwrap_or(Err(NetnsError::WorkerPanicked))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_namespace_fails_before_any_thread_runs_the_work() {
        let err = in_namespace("/nonexistent/netns", || Ok(1)).unwrap_err();
        assert!(err.is_bad_namespace());
        assert_eq!(err.errno(), Some(libc::ENOENT));
        assert!(err.to_string().contains("/nonexistent/netns"));
        assert!(in_namespace("bad\0path", || Ok(()))
            .unwrap_err()
            .is_bad_namespace());
    }
}
