//! Plugin processes for `braid.cni.exec.ProcessExecutor` (`braid-exec`): started with
//! a shared-memory `clone` (as `posix_spawn` does) in a process group of their own, then fed and drained on the calling thread
//! with the GIL released, so a delegate's execution costs no Python per pipe event and lets
//! the daemon's other threads run meanwhile.

use std::io;
use std::path::Path;
use std::time::Instant;

use braid_cni::wait_duration;
use braid_delegate::delegates::plugin_env;
use braid_exec::sequence::{run_sequence as run_steps, Step, StepLimits, StepResult};
use braid_exec::{Failure, Limits, Plugin, Within};
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::helpers::Pending;

/// An `io::Error` as Python's `OSError`, with its errno when it has one.
pub fn os_error(err: &io::Error) -> PyErr {
    match err.raw_os_error() {
        Some(errno) => PyOSError::new_err((errno, err.to_string())),
        None => PyOSError::new_err(err.to_string()),
    }
}

/// A started plugin (`spawn_plugin`) that has not been sent a byte yet; dropped unused, it is
/// killed and reaped (`braid_exec::Plugin`).
#[pyclass(module = "braid._native.exec")]
#[derive(Debug)]
pub struct PluginProcess {
    plugin: Option<Plugin>,
    pid: u32,
    fed: usize,
}

#[pymethods]
impl PluginProcess {
    /// The plugin's process id, which is also its process group's.
    #[getter]
    fn pid(&self) -> u32 {
        self.pid
    }

    /// How many bytes of the `stdin` given to `spawn_plugin` the plugin had at its start (all
    /// of them, or none: `communicate` is then given them).
    #[getter]
    fn fed(&self) -> usize {
        self.fed
    }

    /// Writes `stdin` and collects the output: `("exited", code, stdout, stderr)` (a code
    /// below zero is the signal that killed it), or `("timeout" | "overflow", 0, b"", b"")`
    /// once the group has been killed at the deadline or for a stdout over `max_stdout`. A
    /// `timeout` beyond a billion seconds, infinity included, is held at that
    /// (`braid_cni::wait_duration`).
    #[pyo3(signature = (*, stdin, timeout, exit_grace, max_stdout))]
    fn communicate(
        &mut self,
        py: Python<'_>,
        stdin: &[u8],
        timeout: Option<f64>,
        exit_grace: f64,
        max_stdout: usize,
    ) -> PyResult<(&'static str, i32, Py<PyBytes>, Py<PyBytes>)> {
        let plugin = self
            .plugin
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the plugin was already run or killed"))?;
        let limits = Limits {
            deadline: timeout.map(|t| Instant::now() + wait_duration(t)),
            exit_grace: wait_duration(exit_grace),
            max_stdout,
        };
        let empty = || PyBytes::new(py, b"").unbind();
        match py.detach(|| plugin.communicate(stdin, limits)) {
            Ok(out) => Ok((
                "exited",
                out.code,
                PyBytes::new(py, &out.stdout).unbind(),
                PyBytes::new(py, &out.stderr).unbind(),
            )),
            Err(Failure::TimedOut) => Ok(("timeout", 0, empty(), empty())),
            Err(Failure::StdoutTooLarge) => Ok(("overflow", 0, empty(), empty())),
            Err(Failure::Io(err)) => Err(os_error(&err)),
        }
    }

    /// Writes what the pipe takes of `stdin` now, without waiting (all of it when it fits the
    /// pipe's buffer; stdin is then closed); returns how many bytes were taken:
    /// `communicate` is given the rest.
    fn feed(&mut self, stdin: &[u8]) -> PyResult<usize> {
        let plugin = self
            .plugin
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("the plugin was already run or killed"))?;
        plugin.feed_now(stdin).map_err(|err| os_error(&err))
    }

    /// SIGKILLs the plugin's group and reaps it (nothing when it already ran).
    fn kill(&mut self, py: Python<'_>) {
        if let Some(mut plugin) = self.plugin.take() {
            py.detach(move || plugin.kill());
        }
    }
}

/// A plugin's whole environment as Python hands it: `(name, value)` pairs.
type PyEnv<'py> = Vec<(Bound<'py, PyString>, Bound<'py, PyString>)>;

/// `env` as the plugin gets it (`braid_delegate::delegates::plugin_env`): a variable that is
/// not UTF-8 (Python holds undecodable bytes of the environment as lone surrogates) is left
/// out, as the shim leaves it out.
fn env_of(env: &[(Bound<'_, PyString>, Bound<'_, PyString>)]) -> Vec<(String, String)> {
    let text = |value: &Bound<'_, PyString>| value.to_str().ok().map(str::to_owned);
    plugin_env(
        env.iter().map(|(name, value)| (text(name), text(value))),
        &[],
    )
}

/// Starts the plugin at `path` with exactly `env` (entering the namespace open as `netns_fd`
/// and the root directory open as `root_fd` first, when given: `path` is then resolved inside
/// that root); an `OSError` with the `errno` of the failure otherwise (`ETXTBSY` is retried a
/// few times first). With `stdin`, the plugin starts with all of it in its stdin
/// when it fits a pipe (`fed` says whether it did; `braid_exec::spawn_fed`): for a plugin
/// started in its turn, with nothing to do before its first byte.
#[pyfunction]
#[pyo3(signature = (*, path, env, netns_fd=None, root_fd=None, stdin=None))]
fn spawn_plugin(
    py: Python<'_>,
    path: &str,
    env: PyEnv<'_>,
    netns_fd: Option<i32>,
    root_fd: Option<i32>,
    stdin: Option<&[u8]>,
) -> PyResult<PluginProcess> {
    let env = env_of(&env);
    let within = Within {
        netns: netns_fd,
        root: root_fd,
    };
    let (plugin, fed) = py
        .detach(|| match stdin {
            Some(input) => braid_exec::spawn_fed(Path::new(path), &env, within, input),
            None => braid_exec::spawn(Path::new(path), &env, within).map(|plugin| (plugin, 0)),
        })
        .map_err(|err| os_error(&err))?;
    Ok(PluginProcess {
        pid: plugin.id(),
        plugin: Some(plugin),
        fed,
    })
}

/// A plugin being started on one of braid's helper threads (`start_plugin`).
#[pyclass(module = "braid._native.exec")]
#[derive(Debug)]
pub struct StartingPlugin {
    pending: Pending<io::Result<Plugin>>,
}

#[pymethods]
impl StartingPlugin {
    /// The started plugin (waiting, the GIL released, for its start to end), or the `OSError`
    /// of its start; once only. A plugin never taken is killed and reaped when this goes.
    fn process(&self, py: Python<'_>) -> PyResult<PluginProcess> {
        let started = py.detach(|| match self.pending.wait() {
            Some(mut slot) => match slot.take() {
                Some(started) => Ok(started),
                None => Err(PyRuntimeError::new_err(
                    "the plugin was already taken, or its start panicked",
                )),
            },
            None => Err(PyRuntimeError::new_err(
                "the helper thread starting it failed",
            )),
        })?;
        let plugin = started.map_err(|err| os_error(&err))?;
        Ok(PluginProcess {
            pid: plugin.id(),
            plugin: Some(plugin),
            fed: 0,
        })
    }
}

/// `EXDEV` (Linux): what a helper in another network namespace than its caller answers.
const EXDEV: i32 = 18;

/// The network namespace of the calling thread (its inode), `None` when it cannot be told.
fn thread_netns() -> Option<u64> {
    std::fs::metadata("/proc/thread-self/ns/net")
        .ok()
        .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
}

/// `spawn_plugin` (without a namespace to enter; in the root directory open as `root_fd`,
/// which must stay open until the start is over, when given) on one of braid's helper
/// threads: returns at once, the plugin's start under way while the caller goes on. A plugin inherits the network
/// namespace of the thread that starts it: when the helper is not in the caller's (a caller
/// that moved its own thread elsewhere with `setns`), the start fails (`EXDEV`) and the caller
/// starts the plugin itself.
#[pyfunction]
#[pyo3(signature = (*, path, env, root_fd=None))]
fn start_plugin(path: &str, env: PyEnv<'_>, root_fd: Option<i32>) -> PyResult<StartingPlugin> {
    let path = path.to_owned();
    let env = env_of(&env);
    let callers = thread_netns();
    let pending = Pending::start(move || {
        if callers.is_none() || thread_netns() != callers {
            return Err(io::Error::from_raw_os_error(EXDEV));
        }
        let within = Within {
            netns: None,
            root: root_fd,
        };
        braid_exec::spawn(Path::new(&path), &env, within)
    })
    .ok_or_else(|| PyRuntimeError::new_err("braid's helper threads are gone"))?;
    Ok(StartingPlugin { pending })
}

/// One step of `run_sequence`: the plugin's path, its whole environment, its stdin and its
/// group (a failed step skips the rest of its group).
type SequenceStep<'py> = (String, PyEnv<'py>, Vec<u8>, usize);
/// What became of a step: `(kind, code, stdout, stderr, seconds)`; `kind` is `exited` (code:
/// the exit code, below zero a signal), `timeout` or `overflow` (the group killed), `io` or
/// `spawn` (code: the errno, stderr: its message), or `skipped`.
type SequenceOutcome = (&'static str, i32, Py<PyBytes>, Py<PyBytes>, f64);

/// Runs `steps` one after the other with the GIL released, each plugin started while the one
/// before it runs and given its stdin as soon as that one is done (`braid_exec::sequence`);
/// a step that does not exit 0 skips the rest of its group. Each step's deadline (`timeout`
/// seconds, held at a billion as `communicate`'s) counts from its turn. Each plugin enters
/// `netns_fd` and `root_fd` first, as `spawn_plugin`'s do.
#[pyfunction]
#[pyo3(signature = (*, steps, timeout, exit_grace, max_stdout, netns_fd=None, root_fd=None))]
fn run_sequence(
    py: Python<'_>,
    steps: Vec<SequenceStep<'_>>,
    timeout: Option<f64>,
    exit_grace: f64,
    max_stdout: usize,
    netns_fd: Option<i32>,
    root_fd: Option<i32>,
) -> Vec<SequenceOutcome> {
    let limits = StepLimits {
        timeout: timeout.map(wait_duration),
        exit_grace: wait_duration(exit_grace),
        max_stdout,
    };
    let steps: Vec<(String, Vec<_>, Vec<u8>, usize)> = steps
        .into_iter()
        .map(|(path, env, stdin, group)| (path, env_of(&env), stdin, group))
        .collect();
    let results = py.detach(|| {
        let borrowed: Vec<Step<'_>> = steps
            .iter()
            .map(|(path, env, stdin, group)| Step {
                path: Path::new(path),
                env,
                stdin,
                group: *group,
            })
            .collect();
        let within = Within {
            netns: netns_fd,
            root: root_fd,
        };
        run_steps(&borrowed, limits, within)
    });
    let bytes = |data: &[u8]| PyBytes::new(py, data).unbind();
    results
        .into_iter()
        .map(|result| match result {
            StepResult::Exited { output, seconds } => (
                "exited",
                output.code,
                bytes(&output.stdout),
                bytes(&output.stderr),
                seconds,
            ),
            StepResult::Failed { failure, seconds } => match failure {
                Failure::TimedOut => ("timeout", 0, bytes(b""), bytes(b""), seconds),
                Failure::StdoutTooLarge => ("overflow", 0, bytes(b""), bytes(b""), seconds),
                Failure::Io(err) => (
                    "io",
                    err.raw_os_error().unwrap_or(0),
                    bytes(b""),
                    bytes(err.to_string().as_bytes()),
                    seconds,
                ),
            },
            StepResult::NotStarted(err) => (
                "spawn",
                err.raw_os_error().unwrap_or(0),
                bytes(b""),
                bytes(err.to_string().as_bytes()),
                0.0,
            ),
            StepResult::Skipped => ("skipped", 0, bytes(b""), bytes(b""), 0.0),
        })
        .collect()
}

/// Adds this module's names to its submodule of `braid._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PluginProcess>()?;
    m.add_function(wrap_pyfunction!(spawn_plugin, m)?)?;
    m.add_class::<StartingPlugin>()?;
    m.add_function(wrap_pyfunction!(start_plugin, m)?)?;
    m.add_function(wrap_pyfunction!(run_sequence, m)?)?;
    Ok(())
}
