//! Starting a plugin's process the way `posix_spawn` does, and with what `posix_spawn` cannot
//! do: entering a network namespace and a root directory first.
//!
//! The child is made with `clone(CLONE_VM | CLONE_VFORK)`: it runs on a stack of its own in the
//! caller's memory while the caller is suspended, until it executes the plugin or fails. Nothing
//! of the caller's memory is copied, so the start costs the same whatever the caller's size
//! (a `fork` of a 50 MB Python daemon costs milliseconds: its page tables are copied and every
//! page it then writes faults). The child calls only async-signal-safe functions and allocates
//! nothing; the caller blocks every signal around the `clone`, and the child sets every handled
//! signal back to its default before unblocking them, so no handler of the caller's ever runs
//! in the child.
//!
//! A plugin does not outlive the process that started it: the child asks for `SIGKILL` when
//! its parent dies (`PR_SET_PDEATHSIG`, kept across `execve` for the plugins braid runs: it is
//! cleared only for set-user-ID, set-group-ID or file-capability binaries), so a daemon killed
//! in the middle of an ADD leaves no delegate to finish it after the runtime's DEL. The
//! kernel's "parent" here is the *thread* that called `clone`: the plugin is killed when that
//! thread ends, even if the process goes on. braid starts plugins only from threads that
//! outlive them: the thread that then waits for the plugin, or braid's helper threads (started
//! once, never ended). A caller must not start one from a thread that ends while the plugin
//! runs. A parent that died before the request was made is caught by comparing `getppid()`
//! with the caller's pid taken before the `clone`: the child then exits without running the
//! plugin. Only the plugin itself gets the signal: a helper it started (an IPAM plugin) and
//! left running is the plugin's to stop.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::Within;

/// The child's stack: it makes a few system calls and nothing else.
const STACK_BYTES: usize = 64 * 1024;

/// A started process: its id and the caller's ends of its standard streams.
#[derive(Debug)]
pub(crate) struct Launched {
    pub pid: libc::pid_t,
    /// `None` when the plugin was given a pipe already holding its input.
    pub stdin: Option<File>,
    pub stdout: File,
    pub stderr: File,
}

/// What the child reads, prepared by the caller (no allocation happens in the child).
struct ChildPlan {
    path: CString,
    argv: [*const libc::c_char; 2],
    envp: Vec<*const libc::c_char>,
    within: Within,
    /// The descriptors that become the child's 0, 1 and 2.
    streams: [RawFd; 3],
    /// The caller's process id, taken before the `clone`: the child's parent while it lives.
    parent: libc::pid_t,
    /// Set by the child when it fails before `execve` succeeds (the caller reads it once the
    /// child has exec'd or exited: the memory is shared).
    errno: libc::c_int,
}

fn nul_free(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut ends = [0 as RawFd; 2];
    // SAFETY: pipe2(2) writes two new descriptors into `ends`, owned from here on.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just created and belong to nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) })
}

/// Starts `path` with exactly `env` in a process group of its own, after entering what
/// `within` names; its stdin is `stdin` when given (a pipe holding its whole input), else a
/// new pipe. Returns the execution's error (`ENOENT`, `EACCES`, `ETXTBSY`, a `setns` or
/// `chroot` failure...) as an `io::Error`.
pub(crate) fn launch(
    path: &Path,
    env: &[(String, String)],
    within: Within,
    stdin: Option<&OwnedFd>,
) -> io::Result<Launched> {
    let program = nul_free(path.as_os_str().as_bytes())?;
    let variables = env
        .iter()
        .map(|(k, v)| nul_free(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<io::Result<Vec<_>>>()?;
    let (child_in, parent_in) = if stdin.is_some() {
        (None, None)
    } else {
        let (read, write) = pipe()?;
        (Some(read), Some(write))
    };
    let (parent_out, child_out) = pipe()?;
    let (parent_err, child_err) = pipe()?;
    let stdin_fd = stdin.map_or_else(
        || child_in.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        AsRawFd::as_raw_fd,
    );
    let mut envp: Vec<*const libc::c_char> = variables.iter().map(|v| v.as_ptr()).collect();
    envp.push(std::ptr::null());
    let mut plan = ChildPlan {
        argv: [program.as_ptr(), std::ptr::null()],
        path: program,
        envp,
        within,
        streams: [stdin_fd, child_out.as_raw_fd(), child_err.as_raw_fd()],
        // SAFETY: getpid(2) cannot fail.
        parent: unsafe { libc::getpid() },
        errno: 0,
    };
    let pid = clone_child(&mut plan)?;
    if plan.errno != 0 {
        reap(pid);
        return Err(io::Error::from_raw_os_error(plan.errno));
    }
    drop((child_in, child_out, child_err));
    Ok(Launched {
        pid,
        stdin: parent_in.map(File::from),
        stdout: File::from(parent_out),
        stderr: File::from(parent_err),
    })
}

/// Waits for a child that failed before its `execve` (it has exited: `CLONE_VFORK`).
fn reap(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: waitpid(2) on our own child, which has already exited.
    while unsafe { libc::waitpid(pid, &raw mut status, 0) } < 0 {
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

fn clone_child(plan: &mut ChildPlan) -> io::Result<libc::pid_t> {
    let mut stack = vec![0_u8; STACK_BYTES];
    // The stack grows down from its end, aligned to 16 bytes as the ABI wants.
    let top = stack.as_mut_ptr().wrapping_add(STACK_BYTES);
    let top = top.wrapping_sub(top as usize % 16);
    // SAFETY: sigfillset/pthread_sigmask on local sets; every signal is blocked in this thread
    // while the child shares its memory, and the old mask is restored below.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
    }
    // SAFETY: the child runs `child_main` on `stack` (alive until clone returns: CLONE_VFORK
    // suspends this thread until the child has exec'd or exited) with `plan`, which outlives
    // it too; it touches nothing else of this process's memory but errno.
    let pid = unsafe {
        libc::clone(
            child_main,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_mut(plan).cast(),
        )
    };
    let err = io::Error::last_os_error();
    // SAFETY: restores this thread's mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, std::ptr::null_mut()) };
    drop(stack);
    if pid < 0 {
        return Err(err);
    }
    Ok(pid)
}

/// The child, between `clone` and `execve`. Async-signal-safe calls only; no allocation.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildPlan` the suspended caller passed; nothing else uses it now.
    let plan = unsafe { &mut *arg.cast::<ChildPlan>() };
    // SAFETY: every call below is async-signal-safe and only affects this child: it has its
    // own signal handlers (no CLONE_SIGHAND), mask, root, namespaces and descriptor table
    // (no CLONE_FILES, no CLONE_FS).
    unsafe {
        // Killed with the thread that started it (the module's documentation says why); if
        // that happened already, `getppid` names another process and the plugin never runs.
        let signal = libc::c_ulong::from(libc::SIGKILL.unsigned_abs());
        if libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0) != 0 {
            return fail(plan);
        }
        if libc::getppid() != plan.parent {
            libc::_exit(127);
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        for signal in 1..libc::SIGRTMAX() {
            if libc::sigaction(signal, std::ptr::null(), &raw mut action) == 0
                && action.sa_sigaction != libc::SIG_DFL
                && (action.sa_sigaction != libc::SIG_IGN
                    || signal == libc::SIGPIPE
                    || signal == libc::SIGXFSZ)
            {
                // A handler of the caller's, or the caller's own ignoring of SIGPIPE and
                // SIGXFSZ (which Python and Rust set): the plugin gets the defaults.
                action.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &raw const action, std::ptr::null_mut());
            }
        }
        if let Some(fd) = plan.within.netns {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return fail(plan);
            }
        }
        if let Some(fd) = plan.within.root {
            if libc::fchdir(fd) != 0 || libc::chroot(c".".as_ptr()) != 0 {
                return fail(plan);
            }
        }
        if libc::setpgid(0, 0) != 0 {
            return fail(plan);
        }
        for (target, &fd) in (0..).zip(plan.streams.iter()) {
            let moved = if fd == target {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, target)
            };
            if moved < 0 {
                return fail(plan);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
        libc::execve(plan.path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        fail(plan)
    }
}

/// Records the child's errno for the caller and exits the child.
unsafe fn fail(plan: &mut ChildPlan) -> libc::c_int {
    // SAFETY: reading errno and _exit(2) are async-signal-safe.
    unsafe {
        plan.errno = *libc::__errno_location();
        if plan.errno == 0 {
            plan.errno = libc::EIO;
        }
        libc::_exit(127)
    }
}
