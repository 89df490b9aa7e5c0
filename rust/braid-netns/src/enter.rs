//! The two primitives that enter a network namespace.
//!
//! [`socket_in_namespace`] gives a netlink socket of the namespace, which is all the netlink
//! requests of this crate need (a socket keeps the namespace it was created in): the calling
//! thread enters the namespace for the one `socket()` call and goes back at once; nothing else
//! runs on it in between, and a thread that cannot go back aborts the process rather than stay.
//! [`in_namespace`] runs arbitrary work on a dedicated thread created for the call: it
//! `setns`es into the namespace, does the work and then ends. It is never a caller's thread
//! and never returns to a pool, so it need not switch back.

use std::cell::RefCell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread;

use crate::error::NetnsError;
use crate::socket::NetlinkSocket;

thread_local! {
    /// The calling thread's own network namespace, opened at its first
    /// [`socket_in_namespace`] (a thread leaves it only inside that call, which brings it back).
    static HOME: RefCell<Option<OwnedFd>> = const { RefCell::new(None) };
}

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

/// Moves the calling thread into the network namespace `ns`: on a thread created by
/// [`in_namespace`], or for the one `socket()` call of [`socket_in_namespace`].
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

/// A netlink route socket of the network namespace at `path`, made by the calling thread
/// inside that namespace; the thread is back in its own namespace when this returns.
///
/// Going back cannot fail short of a kernel out of memory; if it does, the process aborts:
/// a thread left in a pod's namespace would make every later request act there.
pub fn socket_in_namespace(path: &str) -> Result<NetlinkSocket, NetnsError> {
    let target = open_namespace(path)?;
    HOME.with(|home| {
        let mut home = home.borrow_mut();
        if home.is_none() {
            // Without /proc the thread could not find its way back: a thread of its own.
            match open_namespace("/proc/thread-self/ns/net") {
                Ok(own) => *home = Some(own),
                Err(_) => return in_namespace(path, NetlinkSocket::open),
            }
        }
        let Some(own) = home.as_ref() else {
            return in_namespace(path, NetlinkSocket::open);
        };
        enter(&target, path)?;
        let socket = NetlinkSocket::open();
        // SAFETY: `own` is an open descriptor of this thread's own namespace.
        if unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            let err = io::Error::last_os_error();
            eprintln!("braid: a thread cannot return to its network namespace ({err}); aborting");
            std::process::abort();
        }
        socket
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

    #[test]
    fn missing_namespace_fails_before_the_thread_moves() {
        let err = socket_in_namespace("/nonexistent/netns").unwrap_err();
        assert!(err.is_bad_namespace());
        assert_eq!(err.errno(), Some(libc::ENOENT));
    }
}
