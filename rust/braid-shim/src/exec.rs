//! Executing one plugin binary (reference §1.1, §7 "Timeouts / process handling"): its own
//! process group, stdin written and stdout/stderr drained concurrently, and a deadline at
//! which the whole group is killed.

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

/// The most stdout or stderr kept from a plugin.
const MAX_OUTPUT_BYTES: u64 = 1 << 20;
const ETXTBSY_RETRIES: u32 = 5;
const ETXTBSY_DELAY: Duration = Duration::from_millis(50);

/// What a finished plugin produced.
#[derive(Debug)]
pub struct Output {
    /// The exit status (a plugin killed by a signal has none).
    pub status: ExitStatus,
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
}

/// Why a plugin produced no [`Output`].
#[derive(Debug)]
pub enum Failure {
    /// It could not be started.
    Spawn(io::Error),
    /// It (or a process holding its pipes) outlived the deadline; its group was killed.
    TimedOut,
}

enum Event {
    Exited(io::Result<ExitStatus>),
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
}

/// Runs `path` with `env` added to ours and `stdin`, within `timeout`.
pub fn run(
    path: &Path,
    env: &[(&str, &str)],
    stdin: &[u8],
    timeout: Duration,
) -> Result<Output, Failure> {
    let deadline = Instant::now() + timeout;
    let mut child = spawn(path, env).map_err(Failure::Spawn)?;
    let group = child.id();
    let (tx, rx) = mpsc::channel();
    feed_stdin(&mut child, stdin.to_vec());
    drain(child.stdout.take(), tx.clone(), Event::Stdout);
    drain(child.stderr.take(), tx.clone(), Event::Stderr);
    thread::spawn(move || {
        let _ = tx.send(Event::Exited(child.wait()));
    });
    collect(&rx, deadline).ok_or_else(|| {
        kill_group(group);
        Failure::TimedOut
    })
}

fn spawn(path: &Path, env: &[(&str, &str)]) -> io::Result<Child> {
    let mut attempt = 0;
    loop {
        let spawned = Command::new(path)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn();
        match spawned {
            Err(err) if err.raw_os_error() == Some(libc::ETXTBSY) && attempt < ETXTBSY_RETRIES => {
                attempt += 1;
                thread::sleep(ETXTBSY_DELAY);
            }
            other => return other,
        }
    }
}

/// Writes stdin from its own thread (a plugin may not read it before writing its output).
fn feed_stdin(child: &mut Child, data: Vec<u8>) {
    if let Some(mut pipe) = child.stdin.take() {
        thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
}

trait Pipe: Read + Send + 'static {}
impl Pipe for ChildStdout {}
impl Pipe for ChildStderr {}

fn drain<P: Pipe>(pipe: Option<P>, tx: Sender<Event>, wrap: fn(Vec<u8>) -> Event) {
    let Some(pipe) = pipe else {
        let _ = tx.send(wrap(Vec::new()));
        return;
    };
    thread::spawn(move || {
        let mut data = Vec::new();
        let mut limited = pipe.take(MAX_OUTPUT_BYTES);
        let _ = limited.read_to_end(&mut data);
        // Keep draining past the limit so the plugin never blocks on a full pipe.
        let _ = io::copy(&mut limited.into_inner(), &mut io::sink());
        let _ = tx.send(wrap(data));
    });
}

/// The output once the plugin exited and both pipes closed; `None` at the deadline.
fn collect(rx: &Receiver<Event>, deadline: Instant) -> Option<Output> {
    let (mut status, mut stdout, mut stderr) = (None, None, None);
    while status.is_none() || stdout.is_none() || stderr.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::Exited(Ok(code))) => status = Some(code),
            Ok(Event::Stdout(data)) => stdout = Some(data),
            Ok(Event::Stderr(data)) => stderr = Some(data),
            Ok(Event::Exited(Err(_)))
            | Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
        }
    }
    Some(Output {
        status: status?,
        stdout: stdout?,
        stderr: stderr?,
    })
}

/// Kills every process of the plugin's group (its delegated helpers too).
#[allow(unsafe_code)]
fn kill_group(group: u32) {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return;
    };
    // SAFETY: killpg only sends a signal; the group id is the one the plugin was started with
    // (`process_group(0)` made it the group leader), so no unrelated process is targeted.
    unsafe {
        libc::killpg(group, libc::SIGKILL);
    }
}
