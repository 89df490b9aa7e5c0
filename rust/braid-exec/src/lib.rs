//! Executing one CNI plugin (the CNI specification's protocol: environment and stdin in, one
//! result on stdout) without a thread per pipe: the plugin is started in a process group of
//! its own (`launch`: a shared-memory `clone`, as `posix_spawn` does, entering a network
//! namespace or a root directory first when asked), then its stdin is written and its stdout
//! and stderr read on the calling thread with `poll(2)`, its exit seen through a pidfd, within
//! a deadline at which the whole group is killed.
//!
//! Starting and feeding are two steps ([`spawn`], then [`Plugin::communicate`]) so a caller
//! can do what must precede the plugin's first byte of input (braid's durable plan) while the
//! plugin starts up; a plugin can act on nothing before it has read its configuration.
//!
//! Once the plugin itself has exited, a descendant still holding its pipes is given
//! [`Limits::exit_grace`] of silence before reading stops. The plugin inherits nothing but its
//! three pipes: every descriptor Rust and Python open is close-on-exec, and before each start
//! every descriptor above 2 is marked close-on-exec too (`close_range(2)`), so one the process
//! itself inherited without the flag does not reach the plugin either.

use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

mod launch;

/// The largest input [`spawn_fed`] gives at the start (a pipe is grown up to this for it).
pub const MAX_FED: usize = 1 << 20;
/// How often a plugin whose binary is being written (`ETXTBSY`) is tried again, and the pause.
pub const ETXTBSY_RETRIES: u32 = 5;
pub const ETXTBSY_DELAY: Duration = Duration::from_millis(50);
/// The most written or read in one system call.
const CHUNK: usize = 1 << 16;
/// Without a pidfd (kernels before 5.3), how often the plugin's exit is checked.
const EXIT_POLL: Duration = Duration::from_millis(5);

/// What a finished plugin produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The exit code, or minus the signal that killed it (as Python's `returncode`).
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why [`Plugin::communicate`] produced no [`Output`]; the plugin's group has been killed.
#[derive(Debug)]
pub enum Failure {
    /// The deadline passed first.
    TimedOut,
    /// Its stdout grew past [`Limits::max_stdout`].
    StdoutTooLarge,
    /// A system call on its pipes failed.
    Io(io::Error),
}

/// The bounds of one execution.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// When to give up and kill the group; `None`: never.
    pub deadline: Option<Instant>,
    /// Silence allowed on the pipes once the plugin itself has exited.
    pub exit_grace: Duration,
    /// The most stdout accepted.
    pub max_stdout: usize,
}

/// A started plugin, not yet sent a byte.
///
/// Dropped before it was reaped (neither [`Plugin::communicate`] nor [`Plugin::kill`] ran to
/// the end, e.g. on a panic), its group is killed and it is reaped: no plugin outlives its
/// handle, and none is left a zombie.
#[derive(Debug)]
pub struct Plugin {
    pid: libc::pid_t,
    stdin: Option<File>,
    stdout: Option<File>,
    stderr: Option<File>,
    reaped: bool,
    /// The exit code, once reaped while its pipes were still being read.
    exit: Option<i32>,
}

impl Drop for Plugin {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
        }
    }
}

/// What a plugin's process enters before it executes its binary: a network namespace and a
/// root directory, each a descriptor open for as long as the start runs (`setns` and
/// `chroot` run in the child, before `execve`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Within {
    /// A network namespace (`setns(CLONE_NEWNET)`), where host-side devices land.
    pub netns: Option<RawFd>,
    /// A directory that becomes the plugin's root (`fchdir` then `chroot(".")`): the node's
    /// root filesystem seen from a container, so the plugin finds the node's tools, files
    /// and sockets. The binary's path is resolved inside it.
    pub root: Option<RawFd>,
}

impl Within {
    /// Nothing entered: the plugin runs where the caller does.
    pub const HERE: Self = Self {
        netns: None,
        root: None,
    };
}

/// Starts `path` with exactly `env`, in a process group of its own, its three standard streams
/// piped, after entering what `within` names. A binary being written (`ETXTBSY`) is tried
/// again a few times.
pub fn spawn(path: &Path, env: &[(String, String)], within: Within) -> io::Result<Plugin> {
    start(path, env, within, None)
}

/// Starts `path` as [`spawn`] does with its stdin already holding all of `input` and closed,
/// when `input` fits a pipe's buffer (64 KiB, grown up to [`MAX_FED`] when needed); returns
/// the plugin and how much of `input` it was given: all of it, or nothing (then
/// [`Plugin::communicate`] writes it).
///
/// A plugin given its input this way reads its configuration as soon as it runs, whether or
/// not the caller is on a CPU by then: a caller that had run for a while before the start
/// waits for one behind the plugin's own start-up (a Go runtime's threads), measured at
/// 1.3 ms in braid's daemon, and a plugin waiting on an empty stdin waits that long too.
pub fn spawn_fed(
    path: &Path,
    env: &[(String, String)],
    within: Within,
    input: &[u8],
) -> io::Result<(Plugin, usize)> {
    match filled_pipe(input)? {
        Some(read_end) => Ok((start(path, env, within, Some(&read_end))?, input.len())),
        None => Ok((spawn(path, env, within)?, 0)),
    }
}

/// A pipe holding all of `input`, its write end closed: the read end, or `None` when `input`
/// does not fit its buffer.
fn filled_pipe(input: &[u8]) -> io::Result<Option<OwnedFd>> {
    if input.len() > MAX_FED {
        return Ok(None);
    }
    let mut ends = [0 as RawFd; 2];
    // SAFETY: pipe2(2) writes two new descriptors into `ends`, owned from here on.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and belong to nothing else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    if pipe_capacity(&write_end, input.len()) < input.len() {
        return Ok(None);
    }
    // The pipe is empty and holds `input`: the write completes without blocking.
    let mut writer = std::fs::File::from(write_end);
    writer.write_all(input)?;
    drop(writer);
    Ok(Some(read_end))
}

/// The capacity of the pipe `fd`, grown towards `wanted` when smaller (growing can be refused:
/// `/proc/sys/fs/pipe-max-size` for an unprivileged process).
fn pipe_capacity(fd: &OwnedFd, wanted: usize) -> usize {
    // SAFETY: fcntl(2) F_GETPIPE_SZ on a pipe this process owns.
    let size = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) };
    let size = usize::try_from(size).unwrap_or(0);
    if size >= wanted {
        return size;
    }
    let Ok(wanted) = libc::c_int::try_from(wanted) else {
        return size;
    };
    // SAFETY: fcntl(2) F_SETPIPE_SZ on the same pipe, empty; it answers the new capacity.
    let grown = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, wanted) };
    usize::try_from(grown).unwrap_or(size)
}

/// [`spawn`], or [`spawn_fed`] when `stdin` is the read end of a filled pipe.
fn start(
    path: &Path,
    env: &[(String, String)],
    within: Within,
    stdin: Option<&OwnedFd>,
) -> io::Result<Plugin> {
    close_inherited_on_exec();
    let mut attempt = 0;
    loop {
        match launch::launch(path, env, within, stdin) {
            Err(err) if err.raw_os_error() == Some(libc::ETXTBSY) && attempt < ETXTBSY_RETRIES => {
                attempt += 1;
                thread::sleep(ETXTBSY_DELAY);
            }
            Err(err) => return Err(err),
            Ok(started) => {
                return Ok(Plugin {
                    pid: started.pid,
                    stdin: started.stdin,
                    stdout: Some(started.stdout),
                    stderr: Some(started.stderr),
                    reaped: false,
                    exit: None,
                })
            }
        }
    }
}

/// The exit code in a `waitpid` status, or minus the signal that killed the process.
fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        -libc::WTERMSIG(status)
    } else {
        -1
    }
}

impl Plugin {
    /// The plugin's process id (also its process group's).
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// The exit code if the plugin has exited (it is then reaped), without waiting.
    fn try_wait(&mut self) -> io::Result<Option<i32>> {
        self.wait_with(libc::WNOHANG)
    }

    /// Whether the plugin has exited (reaped, its code kept for [`Plugin::reap`]).
    fn exited_yet(&mut self) -> io::Result<bool> {
        if self.exit.is_none() {
            self.exit = self.try_wait()?;
        }
        Ok(self.exit.is_some())
    }

    fn wait_with(&mut self, flags: libc::c_int) -> io::Result<Option<i32>> {
        loop {
            let mut status = 0;
            // SAFETY: waitpid(2) on this plugin's own process, which only this handle reaps.
            let found = unsafe { libc::waitpid(self.pid, &raw mut status, flags) };
            if found == self.pid {
                return Ok(Some(exit_code(status)));
            }
            if found == 0 {
                return Ok(None);
            }
            let err = io::Error::last_os_error();
            if err.kind() != ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    /// Writes `stdin`, reads stdout and stderr until both close (or the grace after the
    /// plugin's exit runs out) and reaps it. On a failure the group is killed and reaped.
    pub fn communicate(mut self, stdin: &[u8], limits: Limits) -> Result<Output, Failure> {
        let outcome = self.exchange(stdin, limits);
        match outcome {
            Ok((stdout, stderr)) => match self.reap(limits.deadline) {
                Ok(Some(code)) => Ok(Output {
                    code,
                    stdout,
                    stderr,
                }),
                Ok(None) => {
                    self.kill();
                    Err(Failure::TimedOut)
                }
                Err(err) => {
                    self.kill();
                    Err(Failure::Io(err))
                }
            },
            Err(failure) => {
                self.kill();
                Err(failure)
            }
        }
    }

    /// Writes what the pipe takes of `input` now, without waiting (all of it when it fits the
    /// pipe's buffer, 64 KiB on Linux; stdin is then closed); returns how much was taken, so
    /// that [`Plugin::communicate`] is given the rest. The plugin can start its work while the
    /// caller does something else before collecting its output.
    pub fn feed_now(&mut self, input: &[u8]) -> io::Result<usize> {
        let Some(pipe) = self.stdin.as_ref() else {
            return Ok(0);
        };
        set_nonblocking(pipe.as_raw_fd())?;
        let mut left = input;
        while self.stdin.is_some() {
            let rest = match self.feed(left) {
                Ok(rest) => rest,
                Err(Failure::Io(err)) => return Err(err),
                Err(_) => break,
            };
            if rest.len() == left.len() && !rest.is_empty() {
                break; // the pipe is full
            }
            left = rest;
        }
        Ok(input.len() - left.len())
    }

    /// SIGKILLs the plugin's whole group and reaps the plugin.
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        kill_group(self.id());
        self.stdin = None;
        if self.exit.is_none() {
            let _ = self.wait_with(0);
        }
        self.reaped = true;
    }

    fn exchange(&mut self, input: &[u8], limits: Limits) -> Result<(Vec<u8>, Vec<u8>), Failure> {
        let pidfd = pidfd_open(self.id());
        let mut pending = input;
        if pending.is_empty() {
            self.stdin = None;
        }
        for fd in [
            self.stdin.as_ref().map(AsRawFd::as_raw_fd),
            self.stdout.as_ref().map(AsRawFd::as_raw_fd),
            self.stderr.as_ref().map(AsRawFd::as_raw_fd),
        ]
        .into_iter()
        .flatten()
        {
            set_nonblocking(fd).map_err(Failure::Io)?;
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut exited = false;
        while self.stdin.is_some() || self.stdout.is_some() || self.stderr.is_some() {
            let mut wait = match limits.deadline {
                None => None,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(Failure::TimedOut);
                    }
                    Some(left)
                }
            };
            if !exited && pidfd.is_none() {
                exited = self.exited_yet().map_err(Failure::Io)?;
                if !exited {
                    wait = Some(wait.map_or(EXIT_POLL, |w| w.min(EXIT_POLL)));
                }
            }
            if exited {
                wait = Some(wait.map_or(limits.exit_grace, |w| w.min(limits.exit_grace)));
            }
            let mut fds = Vec::with_capacity(4);
            let slots = Slots::register(
                &mut fds,
                self.stdin.as_ref().map(AsFd::as_fd),
                self.stdout.as_ref().map(AsFd::as_fd),
                self.stderr.as_ref().map(AsFd::as_fd),
                if exited {
                    None
                } else {
                    pidfd.as_ref().map(AsFd::as_fd)
                },
            );
            let ready = poll(&mut fds, wait).map_err(Failure::Io)?;
            if ready == 0 {
                if exited {
                    break; // a descendant holds the pipes: stop reading
                }
                continue; // the deadline is checked at the top
            }
            if slots.stdin.is_some_and(|i| fds[i].revents != 0) {
                pending = self.feed(pending)?;
            }
            if slots.stdout.is_some_and(|i| fds[i].revents != 0)
                && drain(&mut self.stdout, &mut out)?
            {
                self.stdout = None;
            }
            if out.len() > limits.max_stdout {
                return Err(Failure::StdoutTooLarge);
            }
            if slots.stderr.is_some_and(|i| fds[i].revents != 0)
                && drain(&mut self.stderr, &mut err)?
            {
                self.stderr = None;
            }
            // Stderr is only copied to the caller's: the first `max_stdout` bytes are kept and
            // the rest is read and dropped, so a chatty plugin never blocks nor fills memory.
            err.truncate(limits.max_stdout);
            if slots.exit.is_some_and(|i| fds[i].revents != 0) {
                exited = true;
            }
        }
        Ok((out, err))
    }

    /// Writes what it can of `pending`; closes stdin once all is written or the plugin stopped
    /// reading (its exit status will tell).
    fn feed<'a>(&mut self, pending: &'a [u8]) -> Result<&'a [u8], Failure> {
        let Some(pipe) = self.stdin.as_mut() else {
            return Ok(pending);
        };
        let left = match pipe.write(&pending[..pending.len().min(CHUNK)]) {
            Ok(written) => &pending[written..],
            Err(err) if err.kind() == ErrorKind::WouldBlock => pending,
            Err(err) if err.kind() == ErrorKind::BrokenPipe => &pending[pending.len()..],
            Err(err) => return Err(Failure::Io(err)),
        };
        if left.is_empty() {
            self.stdin = None;
        }
        Ok(left)
    }

    /// The exit code once the plugin has exited, waiting for it until `deadline`; `None` when
    /// the deadline passed first.
    fn reap(&mut self, deadline: Option<Instant>) -> io::Result<Option<i32>> {
        loop {
            if self.exited_yet()? {
                self.reaped = true;
                return Ok(self.exit);
            }
            let pause = match deadline {
                None => EXIT_POLL,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    left.min(EXIT_POLL)
                }
            };
            match pidfd_open(self.id()) {
                Some(pidfd) => {
                    let mut fds = [pollfd(pidfd.as_fd(), libc::POLLIN)];
                    poll(&mut fds, Some(pause))?;
                }
                None => thread::sleep(pause),
            }
        }
    }
}

/// Which entries of the poll set are which stream.
#[derive(Debug, Default)]
struct Slots {
    stdin: Option<usize>,
    stdout: Option<usize>,
    stderr: Option<usize>,
    exit: Option<usize>,
}

impl Slots {
    fn register(
        fds: &mut Vec<libc::pollfd>,
        stdin: Option<BorrowedFd<'_>>,
        stdout: Option<BorrowedFd<'_>>,
        stderr: Option<BorrowedFd<'_>>,
        exit: Option<BorrowedFd<'_>>,
    ) -> Self {
        let mut add = |fd: Option<BorrowedFd<'_>>, events: libc::c_short| {
            fd.map(|fd| {
                fds.push(pollfd(fd, events));
                fds.len() - 1
            })
        };
        Self {
            stdin: add(stdin, libc::POLLOUT),
            stdout: add(stdout, libc::POLLIN),
            stderr: add(stderr, libc::POLLIN),
            exit: add(exit, libc::POLLIN),
        }
    }
}

/// Reads what is there; true once the pipe reached its end.
fn drain<R: Read>(pipe: &mut Option<R>, into: &mut Vec<u8>) -> Result<bool, Failure> {
    let Some(reader) = pipe.as_mut() else {
        return Ok(true);
    };
    loop {
        let start = into.len();
        into.resize(start + CHUNK, 0);
        let read = reader.read(&mut into[start..]);
        into.truncate(start + *read.as_ref().unwrap_or(&0));
        match read {
            Ok(0) => return Ok(true),
            Ok(_) => {}
            Err(err) if err.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) => return Err(Failure::Io(err)),
        }
    }
}

fn pollfd(fd: BorrowedFd<'_>, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }
}

/// `poll(2)` over `fds` for at most `wait` (forever when `None`); EINTR counts as nothing
/// ready.
fn poll(fds: &mut [libc::pollfd], wait: Option<Duration>) -> io::Result<usize> {
    let timeout = wait.map_or(-1, |w| {
        // Rounded up: a timeout of less than a millisecond must not become a busy loop.
        let millis = w.as_nanos().div_ceil(1_000_000);
        libc::c_int::try_from(millis).unwrap_or(libc::c_int::MAX)
    });
    let count = libc::nfds_t::try_from(fds.len()).unwrap_or(0);
    // SAFETY: `fds` is a valid, exclusively borrowed array of `count` pollfd structures.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), count, timeout) };
    if ready < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == ErrorKind::Interrupted {
            Ok(0)
        } else {
            Err(err)
        };
    }
    Ok(usize::try_from(ready).unwrap_or(0))
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl(2) on a descriptor this process owns (one of the plugin's pipes), reading
    // then setting its status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Marks every descriptor above 2 close-on-exec (one `close_range(2)` call; on kernels before
/// 5.11, each descriptor listed in `/proc/self/fd`). Descriptors opened by Rust or Python have
/// the flag already; this catches those the process inherited without it.
fn close_inherited_on_exec() {
    // SAFETY: close_range(2) with CLOSE_RANGE_CLOEXEC closes nothing; it only sets the
    // close-on-exec flag of the descriptors in the range.
    let done = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3_u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if done == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        if fd > 2 {
            // SAFETY: fcntl(2) on a descriptor number: at worst EBADF for one the listing's own
            // directory handle had, which is ignored.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

/// A pidfd of the child `pid` (readable once it exits), or `None` where the kernel has none.
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = RawFd::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: `fd` was just returned by pidfd_open and is owned by nobody else. The kernel
    // makes pidfds close-on-exec.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Kills every process of the plugin's group (its delegated helpers too).
pub fn kill_group(group: u32) {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return;
    };
    // SAFETY: killpg only sends a signal; the group id is the plugin's own (`process_group(0)`
    // made it the group leader), so no unrelated process is targeted.
    unsafe {
        libc::killpg(group, libc::SIGKILL);
    }
}

/// Runs `path` start to finish (`spawn`, then `communicate`).
pub fn run(
    path: &Path,
    env: &[(String, String)],
    stdin: &[u8],
    limits: Limits,
) -> Result<Output, RunFailure> {
    let plugin = spawn(path, env, Within::HERE).map_err(RunFailure::Spawn)?;
    plugin.communicate(stdin, limits).map_err(RunFailure::Run)
}

/// Why [`run`] produced no [`Output`].
#[derive(Debug)]
pub enum RunFailure {
    /// The plugin could not be started.
    Spawn(io::Error),
    /// It was started but failed as [`Failure`] says.
    Run(Failure),
}

pub mod sequence;

#[cfg(test)]
mod tests;
