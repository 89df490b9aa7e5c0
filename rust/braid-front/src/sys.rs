//! The few Linux system calls the front makes, issued directly (x86-64): there is no C library
//! in the `braid` binary. Each returns the kernel's answer, a negative value being `-errno`.
#![allow(unsafe_code)]
// System call arguments and answers are machine words: descriptors, lengths and -errno pass
// through the registers as the kernel defines them, so these casts are the ABI, not accidents.
#![allow(
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation
)]

use core::arch::asm;

pub const STDIN: i32 = 0;
pub const STDOUT: i32 = 1;
pub const STDERR: i32 = 2;

pub const EINTR: isize = 4;
pub const EAGAIN: isize = 11;

const SYS_READ: usize = 0;
const SYS_WRITE: usize = 1;
const SYS_OPEN: usize = 2;
const SYS_CLOSE: usize = 3;
const SYS_FSTAT: usize = 5;
const SYS_LSEEK: usize = 8;
const SYS_MMAP: usize = 9;
const SYS_RT_SIGACTION: usize = 13;
const SYS_DUP2: usize = 33;
const SYS_SOCKET: usize = 41;
const SYS_CONNECT: usize = 42;
const SYS_SENDTO: usize = 44;
const SYS_SETSOCKOPT: usize = 54;
const SYS_EXECVE: usize = 59;
const SYS_READLINK: usize = 89;
const SYS_NEWFSTATAT: usize = 262;
const SYS_CLOCK_GETTIME: usize = 228;
const SYS_EXIT_GROUP: usize = 231;
const SYS_MEMFD_CREATE: usize = 319;

/// A system call with up to six arguments.
///
/// # Safety
/// The arguments must be what system call `number` expects: pointers valid for the lengths
/// given, for the duration of the call.
#[inline]
unsafe fn syscall(number: usize, args: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: the caller vouches for the arguments; the kernel clobbers rcx and r11 only.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") number as isize => ret,
            in("rdi") args[0],
            in("rsi") args[1],
            in("rdx") args[2],
            in("r10") args[3],
            in("r8") args[4],
            in("r9") args[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// `call` again for as long as it is interrupted by a signal (`EINTR`).
fn restarted(mut call: impl FnMut() -> isize) -> isize {
    loop {
        let ret = call();
        if ret != -EINTR {
            return ret;
        }
    }
}

/// `read(2)` into `buf`, retried on `EINTR`.
pub fn read(fd: i32, buf: &mut [u8]) -> isize {
    let (ptr, len) = (buf.as_mut_ptr() as usize, buf.len());
    // SAFETY: `buf` is valid for writes of its length.
    restarted(|| unsafe { syscall(SYS_READ, [fd as usize, ptr, len, 0, 0, 0]) })
}

/// `write(2)` of `buf`, retried on `EINTR`.
pub fn write(fd: i32, buf: &[u8]) -> isize {
    let (ptr, len) = (buf.as_ptr() as usize, buf.len());
    // SAFETY: `buf` is valid for reads of its length.
    restarted(|| unsafe { syscall(SYS_WRITE, [fd as usize, ptr, len, 0, 0, 0]) })
}

/// `send(2)` without `SIGPIPE` (`MSG_NOSIGNAL`), retried on `EINTR`.
pub fn send(fd: i32, buf: &[u8]) -> isize {
    const MSG_NOSIGNAL: usize = 0x4000;
    let (ptr, len) = (buf.as_ptr() as usize, buf.len());
    // SAFETY: `buf` is valid for reads of its length; no address is given.
    restarted(|| unsafe { syscall(SYS_SENDTO, [fd as usize, ptr, len, MSG_NOSIGNAL, 0, 0]) })
}

/// `close(2)`.
pub fn close(fd: i32) {
    // SAFETY: closing a descriptor takes no pointer.
    unsafe { syscall(SYS_CLOSE, [fd as usize, 0, 0, 0, 0, 0]) };
}

/// `exit_group(2)`.
pub fn exit(code: i32) -> ! {
    loop {
        // SAFETY: takes no pointer and does not return.
        unsafe { syscall(SYS_EXIT_GROUP, [code as usize, 0, 0, 0, 0, 0]) };
    }
}

/// Anonymous private read-write memory of `len` bytes; `None` when refused.
pub fn map(len: usize) -> Option<*mut u8> {
    const PROT_READ_WRITE: usize = 0x3;
    const MAP_PRIVATE_ANONYMOUS: usize = 0x22;
    // SAFETY: an anonymous mapping at an address the kernel picks touches no existing memory.
    let ret = unsafe {
        syscall(
            SYS_MMAP,
            [
                0,
                len,
                PROT_READ_WRITE,
                MAP_PRIVATE_ANONYMOUS,
                usize::MAX,
                0,
            ],
        )
    };
    if ret < 0 {
        None
    } else {
        Some(ret as *mut u8)
    }
}

/// Sets `SIGPIPE` to be ignored (as the Rust runtime does for the full shim): a closed stdout
/// then gives `EPIPE`, not the end of the process.
pub fn ignore_sigpipe() {
    const SIGPIPE: usize = 13;
    const SIG_IGN: usize = 1;
    // The kernel's `struct sigaction`: handler, flags, restorer, mask.
    let action: [usize; 4] = [SIG_IGN, 0, 0, 0];
    // SAFETY: `action` is a valid kernel sigaction for the call; the old one is not asked for.
    unsafe {
        syscall(
            SYS_RT_SIGACTION,
            [SIGPIPE, action.as_ptr() as usize, 0, 8, 0, 0],
        )
    };
}

/// A connected unix stream socket to `path` (a NUL-terminated byte path), close-on-exec, or
/// `-errno`; `connect` waits at most `timeout_ms` for a full listen backlog (`SO_SNDTIMEO`).
pub fn connect_unix(path: &[u8], timeout_ms: u64) -> Result<i32, isize> {
    const AF_UNIX: usize = 1;
    const SOCK_STREAM_CLOEXEC: usize = 1 | 0o2_000_000;
    let mut addr = [0_u8; 110];
    if path.len() > addr.len() - 2 {
        return Err(-36); // ENAMETOOLONG
    }
    addr[0] = AF_UNIX as u8;
    addr[2..2 + path.len()].copy_from_slice(path);
    // SAFETY: socket(2) takes no pointer.
    let fd = unsafe { syscall(SYS_SOCKET, [AF_UNIX, SOCK_STREAM_CLOEXEC, 0, 0, 0, 0]) };
    if fd < 0 {
        return Err(fd);
    }
    let fd = fd as i32;
    let set = set_timeout(fd, Timeout::Send, timeout_ms * 1000);
    // SAFETY: `addr` is a `struct sockaddr_un` holding the NUL-terminated path.
    let ret = if set < 0 {
        set
    } else {
        unsafe {
            syscall(
                SYS_CONNECT,
                [fd as usize, addr.as_ptr() as usize, 2 + path.len(), 0, 0, 0],
            )
        }
    };
    if ret < 0 {
        close(fd);
        return Err(ret);
    }
    Ok(fd)
}

/// Which of a socket's timeouts [`set_timeout`] sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// `SO_RCVTIMEO`: how long one `read` waits.
    Receive,
    /// `SO_SNDTIMEO`: how long one `send` (and a `connect` to a full backlog) waits.
    Send,
}

/// Sets one of a socket's timeouts to `micros` microseconds (0: none); 0 or `-errno`.
pub fn set_timeout(fd: i32, which: Timeout, micros: u64) -> isize {
    const SOL_SOCKET: usize = 1;
    let option: usize = match which {
        Timeout::Receive => 20, // SO_RCVTIMEO
        Timeout::Send => 21,    // SO_SNDTIMEO
    };
    let timeval: [i64; 2] = [(micros / 1_000_000) as i64, (micros % 1_000_000) as i64];
    // SAFETY: `timeval` is a valid `struct timeval` of 16 bytes.
    unsafe {
        syscall(
            SYS_SETSOCKOPT,
            [
                fd as usize,
                SOL_SOCKET,
                option,
                timeval.as_ptr() as usize,
                16,
                0,
            ],
        )
    }
}

/// Microseconds on the monotonic clock (`CLOCK_MONOTONIC`).
pub fn monotonic_micros() -> u64 {
    const CLOCK_MONOTONIC: usize = 1;
    let mut timespec: [i64; 2] = [0, 0];
    // SAFETY: `timespec` is a valid, writable `struct timespec` of 16 bytes.
    unsafe {
        syscall(
            SYS_CLOCK_GETTIME,
            [CLOCK_MONOTONIC, timespec.as_mut_ptr() as usize, 0, 0, 0, 0],
        )
    };
    (timespec[0] as u64) * 1_000_000 + (timespec[1] as u64) / 1000
}

/// Makes descriptor 0 a memory file (`memfd_create(2)`) holding `data`, read from its start
/// (what an `execve` hands the next program as its stdin); `-errno` when it cannot.
pub fn replace_stdin(data: &[u8]) -> Result<(), isize> {
    const MFD_CLOEXEC: usize = 1;
    let name = b"braid-stdin\0";
    // SAFETY: `name` is NUL-terminated.
    let fd = unsafe {
        syscall(
            SYS_MEMFD_CREATE,
            [name.as_ptr() as usize, MFD_CLOEXEC, 0, 0, 0, 0],
        )
    };
    if fd < 0 {
        return Err(fd);
    }
    let fd = fd as i32;
    let mut ret = 0;
    let mut left = data;
    while !left.is_empty() {
        let wrote = write(fd, left);
        if wrote <= 0 {
            ret = if wrote < 0 { wrote } else { -5 }; // EIO: the file took nothing
            break;
        }
        left = &left[wrote as usize..];
    }
    if ret == 0 {
        // SAFETY: lseek(2) and dup2(2) take no pointer (dup2 leaves 0 open across exec).
        ret = unsafe { syscall(SYS_LSEEK, [fd as usize, 0, 0, 0, 0, 0]) };
        if ret >= 0 {
            // SAFETY: as above.
            ret = unsafe { syscall(SYS_DUP2, [fd as usize, STDIN as usize, 0, 0, 0, 0]) };
        }
    }
    close(fd);
    if ret < 0 {
        Err(ret)
    } else {
        Ok(())
    }
}

/// `readlink(2)` of a NUL-terminated `path` into `buf`: the length, or `-errno`.
pub fn readlink(path: &[u8], buf: &mut [u8]) -> isize {
    // SAFETY: `path` is NUL-terminated and `buf` valid for writes of its length.
    unsafe {
        syscall(
            SYS_READLINK,
            [
                path.as_ptr() as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
                0,
                0,
                0,
            ],
        )
    }
}

/// Whether `stat(2)` of a NUL-terminated `path` succeeds (symbolic links followed).
pub fn stat_ok(path: &[u8]) -> bool {
    const AT_FDCWD: isize = -100;
    // The kernel's `struct stat` on x86-64: 144 bytes.
    let mut stat = [0_u64; 18];
    // SAFETY: `path` is NUL-terminated and `stat` a writable buffer of the kernel's size.
    let ret = unsafe {
        syscall(
            SYS_NEWFSTATAT,
            [
                AT_FDCWD as usize,
                path.as_ptr() as usize,
                stat.as_mut_ptr() as usize,
                0,
                0,
                0,
            ],
        )
    };
    ret == 0
}

/// `(st_uid, st_mode)` from the kernel's `struct stat` on x86-64 (144 bytes): `st_mode` and
/// `st_uid` are the two 32-bit halves of its fourth word.
fn owner_of(stat: &[u64; 18]) -> (u32, u32) {
    ((stat[3] >> 32) as u32, stat[3] as u32)
}

/// `(uid, mode)` of a NUL-terminated `path` by `stat(2)` (links followed); `None` on failure.
pub fn stat_owner(path: &[u8]) -> Option<(u32, u32)> {
    const AT_FDCWD: isize = -100;
    let mut stat = [0_u64; 18];
    // SAFETY: `path` is NUL-terminated and `stat` a writable buffer of the kernel's size.
    let ret = unsafe {
        syscall(
            SYS_NEWFSTATAT,
            [
                AT_FDCWD as usize,
                path.as_ptr() as usize,
                stat.as_mut_ptr() as usize,
                0,
                0,
                0,
            ],
        )
    };
    (ret == 0).then(|| owner_of(&stat))
}

/// `(uid, mode)` of an open descriptor by `fstat(2)`; `-errno` on failure.
pub fn fstat_owner(fd: i32) -> Result<(u32, u32), isize> {
    let mut stat = [0_u64; 18];
    // SAFETY: `stat` is a writable buffer of the kernel's size.
    let ret = unsafe {
        syscall(
            SYS_FSTAT,
            [fd as usize, stat.as_mut_ptr() as usize, 0, 0, 0, 0],
        )
    };
    if ret < 0 {
        Err(ret)
    } else {
        Ok(owner_of(&stat))
    }
}

/// Opens a NUL-terminated `path` for reading without following a link (`O_NOFOLLOW`, and
/// `O_NONBLOCK` so a FIFO cannot hold the call up): the descriptor, or `-errno`.
pub fn open_no_follow(path: &[u8]) -> Result<i32, isize> {
    const FLAGS: usize = 0o400_000 | 0o2_000_000 | 0o4000; // O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
                                                           // SAFETY: `path` is NUL-terminated.
    let ret =
        restarted(|| unsafe { syscall(SYS_OPEN, [path.as_ptr() as usize, FLAGS, 0, 0, 0, 0]) });
    if ret < 0 {
        Err(ret)
    } else {
        Ok(ret as i32)
    }
}

/// `execve(2)`: returns only on failure, with `-errno`.
///
/// # Safety
/// `path` must be NUL-terminated; `argv` and `envp` must be NULL-terminated arrays of
/// NUL-terminated strings (the process's own, from its initial stack, or built to last past
/// the call).
pub unsafe fn execve(path: &[u8], argv: *const *const u8, envp: *const *const u8) -> isize {
    // SAFETY: as the caller vouches.
    unsafe {
        syscall(
            SYS_EXECVE,
            [
                path.as_ptr() as usize,
                argv as usize,
                envp as usize,
                0,
                0,
                0,
            ],
        )
    }
}
