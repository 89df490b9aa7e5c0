//! `braid-full`: the compiled CNI entrypoint behind the `braid` front (`braid-front`). It
//! answers VERSION (and `--version`: braid's version and build) itself and forwards every other verb to the per-node daemon
//! (`docs/protocol.md`), printing exactly the daemon's answer. The paths it trusts (the
//! daemon's socket, `cniDir`, `binDir`, the readiness file) come from the node file beside it,
//! not from stdin (`braid_wire::trust`).
//! Every wait is bounded (`braid_wire::answer`). DEL never depends on the daemon: when it is
//! unreachable, silent for a few seconds or unable to serve the DEL, the shim replays the
//! container's attachment record itself (`replay`). With `readinessindicatorfile` set, a DEL
//! first waits for the cluster default network, as the engine does (`readiness`).
//!
//! Nothing but the one JSON result or error ever reaches stdout; a panic becomes a code-999
//! error JSON.
//!
//! The entry point is a plain C `main` (`no_main`): the Rust runtime's start-up (a stack-guard
//! probe that reads `/proc/self/maps`, the stack-overflow signal handlers) is skipped, which
//! takes about 0.06 ms off every CNI call. Arguments and the environment work as usual
//! (glibc hands them to std); SIGPIPE is ignored here as the runtime would have done.
#![cfg_attr(not(test), no_main)]
// Test builds have libtest's main, so what only `main` reaches looks unused there.
#![cfg_attr(test, allow(dead_code))]

mod daemon;
mod readiness;
mod replay;
mod settings;
mod unroute;

#[cfg(not(test))]
use std::ffi::{c_char, c_int};
use std::io::Write;
use std::path::Path;

use braid_cni::wire::{CniEnv, CniResponse, Request};
use braid_cni::{codes, version, CniError};
use braid_wire::answer;
use braid_wire::readiness::{READINESS_POLL, READINESS_TIMEOUT};

use daemon::NoAnswer;
use settings::Settings;

/// What to print and the exit status, or an error with the version to render it at.
type Outcome = Result<CniResponse, (CniError, String)>;

fn success(stdout: Vec<u8>) -> CniResponse {
    CniResponse {
        exit_code: 0,
        stdout,
    }
}

fn run() -> Outcome {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == braid_wire::version::VERSION_ARG)
    {
        return Ok(success(
            braid_wire::version::version_line("braid-full").into_bytes(),
        ));
    }
    let env = CniEnv::from_lookup(|name| std::env::var(name).ok());
    let unversioned = |err: CniError| (err, String::new());
    match env.command.as_str() {
        "VERSION" => return Ok(success(braid_wire::version::version_output())),
        "ADD" | "DEL" | "CHECK" | "GC" | "STATUS" => {}
        "" => {
            return Err(unversioned(CniError::new(
                codes::INVALID_ENVIRONMENT,
                "CNI_COMMAND is not set",
            )))
        }
        other => {
            return Err(unversioned(CniError::new(
                codes::INVALID_ENVIRONMENT,
                format!("unknown CNI_COMMAND: {other}"),
            )))
        }
    }
    let stdin = settings::read_stdin(std::io::stdin().lock()).map_err(unversioned)?;
    let settings = settings::parse(&stdin).map_err(unversioned)?;
    let version = settings.cni_version.clone();
    let versioned = |err: CniError| (err, version.clone());
    let settings = settings::trusted(settings).map_err(versioned)?;
    if env.command == "DEL" {
        delete(&env, stdin, &settings).map_err(versioned)
    } else {
        forward(env, stdin, &settings).map_err(versioned)
    }
}

/// ADD, CHECK, GC, STATUS: the daemon's answer, waiting up to `daemonWaitSeconds` to reach it
/// and then up to [`answer::answer_wait`] for its answer.
fn forward(env: CniEnv, stdin: Vec<u8>, settings: &Settings) -> Result<CniResponse, CniError> {
    let socket = daemon::socket_path(Path::new(&settings.socket_dir));
    let outgoing = daemon::request_frame(&Request::Cni { env, stdin })?;
    let stream = daemon::connect_waiting(&socket, settings.daemon_wait)
        .map_err(|err| daemon::unreachable(&socket, settings.daemon_wait, &err))?;
    let wait = answer::answer_wait(settings);
    daemon::exchange(stream, &outgoing, wait).map_err(|failure| match failure {
        NoAnswer::Silent => answer::no_answer(&socket.display().to_string(), wait),
        NoAnswer::Broken(err) => err,
    })
}

/// DEL: the daemon's answer when it gives one that stands within [`answer::DEL_ANSWER_WAIT`],
/// else the record replayed here. Started with [`answer::REPLAY_ARG`] (by the front, which
/// asked already), it replays at once. Either waits first for the readiness indicator file
/// (NPWG spec section 6.1.2), before the container's lock is taken: code 11 when it does not
/// appear within [`READINESS_TIMEOUT`], nothing torn down.
fn delete(env: &CniEnv, stdin: Vec<u8>, settings: &Settings) -> Result<CniResponse, CniError> {
    readiness::wait_ready(&settings.readiness_file, READINESS_TIMEOUT, READINESS_POLL)?;
    let asked = std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == answer::REPLAY_ARG);
    if !asked {
        if let Some(response) = ask_daemon(env, stdin, settings) {
            return Ok(response);
        }
    }
    replay::delete(env, settings).map(|()| success(Vec::new()))
}

/// The daemon's answer to a DEL, unless it is unreachable, silent, broken off or refused
/// (`answer::del_answer_refused`); why not goes to stderr.
fn ask_daemon(env: &CniEnv, stdin: Vec<u8>, settings: &Settings) -> Option<CniResponse> {
    let socket = daemon::socket_path(Path::new(&settings.socket_dir));
    let request = Request::Cni {
        env: env.clone(),
        stdin,
    };
    let outgoing = match daemon::request_frame(&request) {
        Ok(outgoing) => outgoing,
        Err(err) => {
            eprintln!("braid: DEL cannot be sent to the daemon ({err}); replaying");
            return None;
        }
    };
    let stream = daemon::connect(&socket, daemon::CONNECT_TIMEOUT).ok()?;
    let wait = answer::DEL_ANSWER_WAIT;
    let why = match daemon::exchange(stream, &outgoing, wait) {
        Ok(response) => match answer::del_answer_refused(&response) {
            None => return Some(response),
            Some(why) => why,
        },
        Err(NoAnswer::Silent) => format!("no answer within {} s", wait.as_secs_f64()),
        Err(NoAnswer::Broken(err)) => err.to_string(),
    };
    eprintln!("braid: DEL through the daemon failed ({why}); replaying");
    None
}

fn emit(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

fn entry() -> u8 {
    std::panic::set_hook(Box::new(|info| eprintln!("braid: {info}")));
    match std::panic::catch_unwind(run) {
        Ok(Ok(response)) => {
            emit(&response.stdout);
            response.exit_code
        }
        Ok(Err((err, cni_version))) => {
            emit(&err.to_json(&cni_version));
            1
        }
        Err(_) => {
            emit(&CniError::new(codes::INTERNAL, "braid panicked").to_json(version::CURRENT));
            1
        }
    }
}

/// The process entry point (see the module documentation); test builds get libtest's.
#[cfg(not(test))]
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread exists. A closed
    // stdout or a delegate that stops reading its stdin then gives EPIPE, not a kill.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    c_int::from(entry())
}
