//! The `braid` front: the CNI executable the runtime starts for every call, without a C
//! library.
//!
//! Starting a program linked with glibc costs its start-up (about 80 `cpuid` instructions to size
//! the caches, each one a trap to the hypervisor in a virtual machine: 0.45 ms of the 0.6 ms a
//! static glibc program takes to run at all on braid's test machine, against 0.15 ms for one
//! without). The front does what almost every call needs and nothing else: it answers VERSION
//! (and `--version`, with braid's version and build: `braid_wire::version`), reads stdin and
//! braid's settings (its trusted paths from the node, `node`), sends the request to the daemon
//! (`docs/protocol.md`) and prints its answer, every byte built by `braid-wire` exactly as the
//! full shim builds it. Whatever else a call needs (the daemon not accepting at once:
//! waiting for it or, for DEL, replaying the record; a DEL whose readiness indicator file does not
//! exist yet: waiting for it; an unknown command) is handed over to `braid-full`, the full shim
//! next to it, by `execve` with the same arguments and environment and the stdin already read.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

mod exchange;
mod node;
pub mod sys;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use braid_wire::answer;
use braid_wire::settings::{self, MAX_STDIN_BYTES};
use braid_wire::version::{version_line, version_output, VERSION_ARG};
use braid_wire::wire::{encode_request, frame, CniEnv, CniResponse, Request, SOCKET_NAME};
use braid_wire::{codes, CniError};

/// The full shim's file name, looked for next to the front.
pub const FULL_NAME: &str = "braid-full";
use exchange::{exchange, NoAnswer, CONNECT_TIMEOUT_MS};

/// The process's arguments and environment, as the kernel laid them out on its first stack.
#[derive(Debug, Clone, Copy)]
pub struct Process {
    argv: *const *const u8,
    envp: *const *const u8,
}

impl Process {
    /// The process described by its initial stack pointer.
    ///
    /// # Safety
    /// `stack` must point at `argc`, followed by the `argv` and `envp` arrays, as the kernel
    /// leaves them at a program's entry.
    #[allow(unsafe_code)]
    pub unsafe fn from_stack(stack: *const usize) -> Self {
        // SAFETY: the layout the caller vouches for: argc, argv[argc], NULL, envp..., NULL.
        unsafe {
            let count = *stack;
            let argv = stack.add(1).cast::<*const u8>();
            Self {
                argv,
                envp: argv.add(count + 1),
            }
        }
    }

    /// Whether the first argument is `arg` (libcni starts a plugin with none).
    #[allow(unsafe_code)]
    pub fn first_arg_is(&self, arg: &str) -> bool {
        // SAFETY: `argv` is NULL-terminated: argv[0] is there (maybe NULL), argv[1] read only
        // when argv[0] is not NULL.
        unsafe {
            if (*self.argv).is_null() {
                return false;
            }
            let first = *self.argv.add(1);
            !first.is_null() && c_bytes(first) == arg.as_bytes()
        }
    }

    /// The first value of variable `name`, as `std::env::var` reads it (`None` when unset or
    /// not UTF-8).
    #[allow(unsafe_code)]
    pub fn var(&self, name: &str) -> Option<String> {
        let mut entry = self.envp;
        loop {
            // SAFETY: `envp` is NULL-terminated; each entry a NUL-terminated string.
            let text = unsafe { *entry };
            if text.is_null() {
                return None;
            }
            // SAFETY: as above.
            let bytes = unsafe { c_bytes(text) };
            if let Some(value) = bytes
                .strip_prefix(name.as_bytes())
                .and_then(|rest| rest.strip_prefix(b"="))
            {
                return core::str::from_utf8(value).ok().map(String::from);
            }
            // SAFETY: not past the terminating NULL yet.
            entry = unsafe { entry.add(1) };
        }
    }
}

/// The bytes of a NUL-terminated string, without the NUL.
///
/// # Safety
/// `text` must point at a NUL-terminated string that outlives the slice.
#[allow(unsafe_code)]
unsafe fn c_bytes<'a>(text: *const u8) -> &'a [u8] {
    let mut len = 0;
    // SAFETY: reading up to and including the NUL the caller vouches for.
    unsafe {
        while *text.add(len) != 0 {
            len += 1;
        }
        core::slice::from_raw_parts(text, len)
    }
}

/// Runs one CNI call and exits; hands the call over to `braid-full` when it needs more.
pub fn run(process: Process) -> ! {
    sys::ignore_sigpipe();
    if process.first_arg_is(VERSION_ARG) {
        emit(version_line("braid").as_bytes());
        sys::exit(0)
    }
    let env = CniEnv::from_lookup(|name| process.var(name));
    match env.command.as_str() {
        "VERSION" => {
            emit(&version_output());
            sys::exit(0)
        }
        "ADD" | "DEL" | "CHECK" | "GC" | "STATUS" => {}
        _ => hand_over(process, None, "", None),
    }
    let stdin = match read_stdin() {
        Ok(stdin) => stdin,
        Err(errno) => fail(
            &CniError::new(
                codes::IO_FAILURE,
                format!("cannot read stdin: {}", describe(errno)),
            ),
            "",
        ),
    };
    if stdin.len() > MAX_STDIN_BYTES {
        fail(&settings::stdin_too_large(), "");
    }
    let settings = match settings::parse(&stdin) {
        Ok(settings) => settings,
        Err(err) => fail(&err, ""),
    };
    let settings = match node::trusted(settings) {
        Ok(settings) => settings,
        Err((err, version)) => fail(&err, &version),
    };
    let is_del = env.command == "DEL";
    let version = settings.cni_version.clone();
    if is_del && !settings.readiness_file.is_empty() && !file_exists(&settings.readiness_file) {
        // The cluster default network is not ready: braid-full waits for it (NPWG spec
        // section 6.1.2) before it asks the daemon or replays.
        hand_over(process, Some(&stdin), &version, None)
    }
    let Ok(outgoing) = frame(&encode_request(&Request::Cni {
        env,
        stdin: stdin.clone(),
    })) else {
        hand_over(process, Some(&stdin), &version, None)
    };
    let mut socket = Vec::with_capacity(settings.socket_dir.len() + SOCKET_NAME.len() + 2);
    socket.extend_from_slice(settings.socket_dir.as_bytes());
    if !socket.ends_with(b"/") {
        socket.push(b'/');
    }
    socket.extend_from_slice(SOCKET_NAME.as_bytes());
    socket.push(0);
    let Ok(fd) = sys::connect_unix(&socket, CONNECT_TIMEOUT_MS) else {
        // Not accepting now: braid-full waits for the daemon, or replays a DEL.
        hand_over(process, Some(&stdin), &version, None)
    };
    let wait = if is_del {
        answer::DEL_ANSWER_WAIT
    } else {
        answer::answer_wait(&settings)
    };
    let result = exchange(fd, &outgoing, wait);
    sys::close(fd);
    let call = Call {
        process,
        stdin: &stdin,
        version: &version,
    };
    if is_del {
        finish_del(&call, result, wait)
    }
    match result {
        Ok(response) => {
            emit(&response.stdout);
            sys::exit(i32::from(response.exit_code))
        }
        Err(NoAnswer::Silent) => {
            let shown = String::from_utf8_lossy(&socket[..socket.len() - 1]);
            fail(&answer::no_answer(&shown, wait), &version)
        }
        Err(NoAnswer::Broken(err)) => fail(&err, &version),
    }
}

/// Whether `path` names an existing file: `stat(2)` of it succeeds, as for `Path::exists`
/// in `braid-full`.
fn file_exists(path: &str) -> bool {
    let mut text = Vec::with_capacity(path.len() + 1);
    text.extend_from_slice(path.as_bytes());
    text.push(0);
    sys::stat_ok(&text)
}

/// A call the daemon was asked: what a hand-over to `braid-full` needs.
struct Call<'a> {
    process: Process,
    stdin: &'a [u8],
    version: &'a str,
}

/// A DEL's end: the daemon's answer when it stands, else `braid-full` replays the record (at
/// once when the daemon was silent or refused the DEL; when the connection broke off, after
/// asking the daemon once more).
fn finish_del(call: &Call<'_>, result: Result<CniResponse, NoAnswer>, wait: Duration) -> ! {
    let (why, arg) = match result {
        Ok(response) => match answer::del_answer_refused(&response) {
            None => {
                emit(&response.stdout);
                sys::exit(i32::from(response.exit_code))
            }
            Some(why) => (why, Some(answer::REPLAY_ARG)),
        },
        Err(NoAnswer::Silent) => (
            format!("no answer within {} s", wait.as_secs_f64()),
            Some(answer::REPLAY_ARG),
        ),
        Err(NoAnswer::Broken(err)) => (format!("{err}"), None),
    };
    note(&format!(
        "braid: DEL through the daemon failed ({why}); handing it to {FULL_NAME}\n"
    ));
    hand_over(call.process, Some(call.stdin), call.version, arg)
}

/// Stdin whole, up to one byte more than [`MAX_STDIN_BYTES`]; `-errno` on a failed read.
fn read_stdin() -> Result<Vec<u8>, isize> {
    let mut data = Vec::new();
    let mut chunk = [0_u8; 16 * 1024];
    while data.len() <= MAX_STDIN_BYTES {
        match sys::read(sys::STDIN, &mut chunk) {
            0 => break,
            got if got < 0 => return Err(got),
            got => data.extend_from_slice(&chunk[..got.unsigned_abs()]),
        }
    }
    Ok(data)
}

/// An errno as std's `io::Error` displays it (its text for the ones a CNI call can meet).
pub fn describe(ret: isize) -> String {
    let errno = ret.unsigned_abs();
    let text = match errno {
        0 => return String::from("no progress (0 bytes)"),
        2 => "No such file or directory",
        4 => "Interrupted system call",
        5 => "Input/output error",
        11 => "Resource temporarily unavailable",
        13 => "Permission denied",
        32 => "Broken pipe",
        104 => "Connection reset by peer",
        110 => "Connection timed out",
        111 => "Connection refused",
        _ => return format!("os error {errno}"),
    };
    format!("{text} (os error {errno})")
}

/// Prints `err` as the CNI error JSON at `version` and exits 1.
fn fail(err: &CniError, version: &str) -> ! {
    emit(&err.to_json(version));
    sys::exit(1)
}

/// Writes all of `bytes` to stdout (a closed stdout loses them: nothing else can be done).
pub fn emit(bytes: &[u8]) {
    write_all(sys::STDOUT, bytes);
}

fn note(text: &str) {
    write_all(sys::STDERR, text.as_bytes());
}

fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let wrote = sys::write(fd, bytes);
        if wrote <= 0 {
            return;
        }
        bytes = &bytes[wrote.unsigned_abs()..];
    }
}

/// Executes `braid-full` in place of this process, with the same arguments (or, given `arg`,
/// the same first argument and `arg`) and environment and `stdin` (the bytes already read) as
/// its stdin; exits with a CNI error when it cannot.
fn hand_over(process: Process, stdin: Option<&[u8]>, version: &str, arg: Option<&str>) -> ! {
    if let Some(data) = stdin {
        if let Err(errno) = sys::replace_stdin(data) {
            fail(
                &CniError::new(
                    codes::INTERNAL,
                    format!(
                        "braid cannot hand the call to {FULL_NAME}: no memory file for its stdin"
                    ),
                )
                .with_details(describe(errno)),
                version,
            );
        }
    }
    let mut own_arg = Vec::new();
    let mut argv = Vec::new();
    if let Some(arg) = arg {
        own_arg.extend_from_slice(arg.as_bytes());
        own_arg.push(0);
        // SAFETY: `argv` is the process's own NULL-terminated array: its first entry exists.
        #[allow(unsafe_code)]
        let first = unsafe { *process.argv };
        let first = if first.is_null() {
            c"braid".as_ptr().cast()
        } else {
            first
        };
        argv = alloc::vec![first, own_arg.as_ptr(), core::ptr::null()];
    }
    let argv_ptr = if argv.is_empty() {
        process.argv
    } else {
        argv.as_ptr()
    };
    let mut tried = Vec::new();
    for dir in candidate_dirs(&process) {
        let mut path = dir;
        path.extend_from_slice(b"/");
        path.extend_from_slice(FULL_NAME.as_bytes());
        path.push(0);
        // SAFETY: `path` is NUL-terminated; envp is this process's own, argv too or built
        // above of NUL-terminated strings that outlive the call, NULL-terminated.
        #[allow(unsafe_code)]
        let errno = unsafe { sys::execve(&path, argv_ptr, process.envp) };
        path.pop();
        tried.push(format!(
            "{}: {}",
            String::from_utf8_lossy(&path),
            describe(errno)
        ));
    }
    fail(
        &CniError::new(
            codes::INTERNAL,
            format!(
                "braid cannot run {FULL_NAME}, the part of braid's shim that waits for the \
                 daemon and tears a DEL down without it: install it next to braid (braidctl \
                 install copies both)"
            ),
        )
        .with_details(tried.join("; ")),
        version,
    )
}

/// Where `braid-full` is looked for: the front's own directory, then each `CNI_PATH` entry.
fn candidate_dirs(process: &Process) -> Vec<Vec<u8>> {
    let mut dirs = Vec::new();
    let mut own = [0_u8; 4096];
    let len = sys::readlink(b"/proc/self/exe\0", &mut own);
    if len > 0 {
        if let Some(dir) = parent(&own[..len.unsigned_abs()]) {
            dirs.push(dir.to_vec());
        }
    }
    for dir in process.var("CNI_PATH").unwrap_or_default().split(':') {
        if !dir.is_empty() && !dirs.iter().any(|known| known == dir.as_bytes()) {
            dirs.push(dir.as_bytes().to_vec());
        }
    }
    dirs
}

/// The directory part of an absolute path (`/` for a file at the root).
pub fn parent(path: &[u8]) -> Option<&[u8]> {
    let slash = path.iter().rposition(|&b| b == b'/')?;
    Some(if slash == 0 { b"/" } else { &path[..slash] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_texts_read_as_std_displays_them() {
        assert_eq!(describe(-32), "Broken pipe (os error 32)");
        assert_eq!(describe(-104), "Connection reset by peer (os error 104)");
        assert_eq!(describe(-75), "os error 75");
    }

    #[test]
    fn the_parent_of_a_path() {
        assert_eq!(
            parent(b"/opt/cni/bin/braid"),
            Some(b"/opt/cni/bin".as_slice())
        );
        assert_eq!(parent(b"/braid"), Some(b"/".as_slice()));
        assert_eq!(parent(b"braid"), None);
    }

    #[test]
    #[allow(unsafe_code)]
    fn variables_are_read_from_the_initial_stack_layout() {
        let strings: Vec<Vec<u8>> = [
            "braid",
            "CNI_COMMAND=ADD",
            "CNI_PATHS=no",
            "CNI_PATH=/a:/b",
            "CNI_PATH=/second",
            "BAD=\u{e9}",
        ]
        .iter()
        .map(|s| {
            let mut v = s.as_bytes().to_vec();
            v.push(0);
            v
        })
        .collect();
        let mut bad = b"LATIN=\xe9\0".to_vec();
        let mut stack: Vec<usize> = vec![1, strings[0].as_ptr() as usize, 0];
        for s in &strings[1..] {
            stack.push(s.as_ptr() as usize);
        }
        stack.push(bad.as_mut_ptr() as usize);
        stack.push(0);
        // SAFETY: `stack` is laid out as the kernel lays out a new program's stack.
        let process = unsafe { Process::from_stack(stack.as_ptr()) };
        assert_eq!(process.var("CNI_COMMAND").as_deref(), Some("ADD"));
        assert_eq!(
            process.var("CNI_PATH").as_deref(),
            Some("/a:/b"),
            "the first one"
        );
        assert_eq!(process.var("BAD").as_deref(), Some("\u{e9}"));
        assert_eq!(process.var("LATIN"), None, "not UTF-8");
        assert_eq!(process.var("CNI_NETNS"), None);
        assert_eq!(process.var("braid"), None, "arguments are not variables");
    }
}
