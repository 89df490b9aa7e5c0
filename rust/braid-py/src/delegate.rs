//! `braid_delegate`'s rules for the runtime `braid.cni`: plugin lookup, a plugin's
//! environment, exit judging and the VERSION answer, the result cache's paths and format, the container's lock files, a
//! list's DEL stdins, version ordering.

use std::io;
use std::path::Path;
use std::time::Duration;

use braid_cni::version;
use braid_cni::wait_duration;
use braid_delegate::delegates::{call_variables, cni_path, Call, VERSION_ENV};
use braid_delegate::judge::NoOutput;
use braid_delegate::spares::{self, Held};
use braid_delegate::{cache, judge, lock, lookup, teardown, EXIT_GRACE, MAX_STDOUT_BYTES};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::to_py_err;

/// The plugin `plugin_type` in `dirs`: `(index of its directory, device, inode, mtime in ns,
/// size)`. `seen`: where this process reaches each directory's file (the node's root).
#[pyfunction]
#[pyo3(signature = (*, plugin_type, dirs, seen=None))]
fn find_plugin(
    py: Python<'_>,
    plugin_type: &str,
    dirs: Vec<String>,
    seen: Option<Vec<String>>,
) -> PyResult<(usize, u64, u64, i128, u64)> {
    let found = lookup::find(plugin_type, &dirs, seen.as_deref()).map_err(|e| to_py_err(py, e))?;
    let (dev, ino, mtime, size) = found.identity;
    Ok((found.index, dev, ino, mtime, size))
}

/// Whether `plugin_type` is braid's own or a known meta-plugin, which braid never runs as a
/// delegate (`braid_delegate::lookup::META_PLUGIN_TYPES`).
#[pyfunction]
#[pyo3(signature = (*, plugin_type))]
fn is_meta_plugin(plugin_type: &str) -> bool {
    lookup::is_meta_plugin(plugin_type)
}

/// Whether `plugin_type` is a plain file name (`braid_delegate::lookup::is_plain_name`): the
/// one rule of plugin types. Text that is not UTF-8 (a lone surrogate) is no file name.
#[pyfunction]
#[pyo3(signature = (*, plugin_type))]
fn is_plain_plugin_type(plugin_type: &Bound<'_, PyString>) -> bool {
    plugin_type.to_str().is_ok_and(lookup::is_plain_name)
}

/// A plugin's environment for one call: a copy of `environ` with the six CNI variables of the
/// call over it (`braid_delegate::delegates::call_variables`, `CNI_PATH` from `plugin_dirs` by
/// `cni_path`), the shim's rule. A variable that is not UTF-8 is left out when the plugin is
/// started (`braid_delegate::delegates::plugin_env`).
#[pyfunction]
#[pyo3(signature = (*, environ, command, container_id, netns, ifname, args, plugin_dirs))]
fn plugin_env<'py>(
    environ: &Bound<'py, PyDict>,
    command: &str,
    container_id: &str,
    netns: &str,
    ifname: &str,
    args: &str,
    plugin_dirs: Vec<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let path = cni_path(&plugin_dirs);
    let call = Call {
        command,
        container_id,
        netns,
        ifname,
        args,
    };
    overlay(environ, &call_variables(call, &path))
}

/// A VERSION call's environment: a copy of `environ` with `VERSION_ENV` over it (libcni sends
/// `dummy` for the netns, ifname and path).
#[pyfunction]
#[pyo3(signature = (*, environ))]
fn version_env<'py>(environ: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    overlay(environ, &VERSION_ENV)
}

/// The six variables' names as Python strings, made once (each set then reuses its hash).
static NAMES: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();

fn overlay<'py>(
    environ: &Bound<'py, PyDict>,
    set: &[(&str, &str)],
) -> PyResult<Bound<'py, PyDict>> {
    let py = environ.py();
    let names = NAMES.get_or_init(py, || {
        VERSION_ENV
            .iter()
            .map(|(name, _)| PyString::intern(py, name).unbind())
            .collect()
    });
    let env = environ.copy()?;
    for (name, value) in set {
        match names.iter().find(|known| known.bind(py) == name) {
            Some(known) => env.set_item(known.bind(py), value)?,
            None => env.set_item(name, value)?,
        }
    }
    Ok(env)
}

/// `None` for exit 0; else the plugin's error as `(code, msg, details, plugin_msg)`.
#[pyfunction]
#[pyo3(signature = (*, returncode, stdout, stderr, plugin_type))]
fn judge_exit(
    returncode: i32,
    stdout: &[u8],
    stderr: &[u8],
    plugin_type: &str,
) -> Option<(u32, String, String, String)> {
    judge::judge_exit(returncode, stdout, stderr, plugin_type)
        .err()
        .map(|f| (f.error.code, f.error.msg, f.error.details, f.plugin_msg))
}

/// The error `(code, msg, details)` of a plugin at `path` that produced no output: `kind` is
/// `timeout` (after `timeout` seconds), `overflow`, `io` or `spawn` (with the `errno`, else
/// `text`).
#[pyfunction]
#[pyo3(signature = (*, kind, path, timeout=None, errno=0, text=""))]
fn no_output_error(
    kind: &str,
    path: &str,
    timeout: Option<f64>,
    errno: i32,
    text: &str,
) -> PyResult<(u32, String, String)> {
    let err = if errno == 0 {
        io::Error::other(text.to_owned())
    } else {
        io::Error::from_raw_os_error(errno)
    };
    let why = match kind {
        "timeout" => NoOutput::TimedOut(timeout.map(wait_duration)),
        "overflow" => NoOutput::StdoutTooLarge(MAX_STDOUT_BYTES),
        "io" => NoOutput::Exchange(&err),
        "spawn" => NoOutput::Start(&err),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown kind of plugin failure {other:?}"
            )))
        }
    };
    let error = judge::no_output_error(Path::new(path), &why);
    Ok((error.code, error.msg, error.details))
}

/// The `supportedVersions` of a plugin's VERSION answer (0.1.0 for one older than VERSION).
#[pyfunction]
#[pyo3(signature = (*, returncode, stdout, stderr, plugin_type))]
fn supported_versions(
    py: Python<'_>,
    returncode: i32,
    stdout: &[u8],
    stderr: &[u8],
    plugin_type: &str,
) -> PyResult<Vec<String>> {
    judge::supported_versions(returncode, stdout, stderr, plugin_type).map_err(|e| to_py_err(py, e))
}

/// The result cache entry's path of an attachment under `cache_dir`.
#[pyfunction]
#[pyo3(signature = (*, cache_dir, network, container_id, ifname))]
fn cache_entry_path(
    py: Python<'_>,
    cache_dir: &str,
    network: &str,
    container_id: &str,
    ifname: &str,
) -> PyResult<String> {
    cache::entry_path(Path::new(cache_dir), network, container_id, ifname)
        .map(|path| path.display().to_string())
        .map_err(|e| to_py_err(py, e))
}

/// What a cache file's bytes hold: `(legacy, result)`, `legacy` for a bare result, `result`
/// `None` for an entry without one; code 6 if corrupt.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn cached_result(py: Python<'_>, data: &[u8]) -> PyResult<(bool, Option<Py<PyBytes>>)> {
    cache::decode(data)
        .map(|c| (c.legacy, c.result.map(|r| PyBytes::new(py, &r).unbind())))
        .map_err(|e| to_py_err(py, e))
}

/// A network list's DEL stdins, last plugin first, and why `prev_result` was left out of
/// them (`None` when it was not).
#[pyfunction]
#[pyo3(signature = (*, network_list, plugins, cni_version, capability_args=None, args_cni=None, prev_result=None))]
fn del_stdins(
    py: Python<'_>,
    network_list: &[u8],
    plugins: usize,
    cni_version: &str,
    capability_args: Option<&[u8]>,
    args_cni: Option<&[u8]>,
    prev_result: Option<&[u8]>,
) -> PyResult<(Vec<Py<PyBytes>>, Option<String>)> {
    let built = teardown::del_stdins(&teardown::DelInputs {
        network_list,
        plugins,
        cni_version,
        capability_args,
        args_cni,
        prev_result,
    })
    .map_err(|e| to_py_err(py, e))?;
    let stdins = built
        .stdins
        .iter()
        .map(|stdin| PyBytes::new(py, stdin).unbind())
        .collect();
    Ok((stdins, built.dropped.map(|err| err.to_string())))
}

/// The name of the lock file guarding `container_id`.
#[pyfunction]
#[pyo3(signature = (*, container_id))]
fn container_lock_name(container_id: &str) -> String {
    lock::container_lock_name(container_id)
}

/// Locks taken under a lock directory (`lock_container`, `lock_gc`), held until `release`
/// (or until collected).
#[pyclass(module = "braid._native.delegate")]
#[derive(Debug)]
pub struct HeldLock {
    held: Option<lock::Held>,
}

#[pymethods]
impl HeldLock {
    /// Releases the locks (closing their files); again does nothing.
    fn release(&mut self) {
        self.held = None;
    }
}

/// `wait` seconds as the lock's bound: `None` waits until the lock is free.
fn lock_wait(wait: Option<f64>) -> Option<Duration> {
    wait.map(wait_duration)
}

/// The container's lock under the lock directory `dir` (GC shared, its own file exclusive),
/// waited for without the GIL: until free, or up to `wait` seconds (then `TimeoutError`).
/// `OSError` when the directory or a lock file cannot be made or opened (a link is refused).
#[pyfunction]
#[pyo3(signature = (*, dir, container_id, wait=None))]
fn lock_container(
    py: Python<'_>,
    dir: &str,
    container_id: &str,
    wait: Option<f64>,
) -> PyResult<HeldLock> {
    let wait = lock_wait(wait);
    let held = py.detach(|| lock::container(Path::new(dir), container_id, wait))?;
    Ok(HeldLock { held: Some(held) })
}

/// The GC lock under the lock directory `dir`, exclusive; `wait` and errors as for
/// `lock_container`.
#[pyfunction]
#[pyo3(signature = (*, dir, wait=None))]
fn lock_gc(py: Python<'_>, dir: &str, wait: Option<f64>) -> PyResult<HeldLock> {
    let wait = lock_wait(wait);
    let held = py.detach(|| lock::gc(Path::new(dir), wait))?;
    Ok(HeldLock { held: Some(held) })
}

/// What a spare file's first bytes hold: `("blank", size)`, `("record", container id)` or
/// `("foreign", why)`.
fn held_pair(py: Python<'_>, held: Held) -> PyResult<(&'static str, Py<PyAny>)> {
    Ok(match held {
        Held::Blank { size } => ("blank", size.into_pyobject(py)?.into_any().unbind()),
        Held::Record { container_id, .. } => (
            "record",
            container_id.into_pyobject(py)?.into_any().unbind(),
        ),
        Held::Foreign(why) => ("foreign", why.into_pyobject(py)?.into_any().unbind()),
    })
}

/// A spare file found: `(path, name, kind, value)`.
type FoundSpare = (String, String, &'static str, Py<PyAny>);

/// What `data` (a spare file's first bytes) holds, as `held_pair`.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn spare_held(py: Python<'_>, data: &[u8]) -> PyResult<(&'static str, Py<PyAny>)> {
    held_pair(py, spares::classify(data))
}

/// Every regular file under the spare directory `dir`, in name order: `(path, name, kind,
/// value)`, `kind` and `value` as `spare_held`'s, or `("unreadable", why)`. Empty when `dir`
/// is missing; `OSError` when it cannot be listed.
#[pyfunction]
#[pyo3(signature = (*, dir))]
fn discover_spares(py: Python<'_>, dir: &str) -> PyResult<Vec<FoundSpare>> {
    let found = py.detach(|| spares::discover(Path::new(dir)))?;
    found
        .into_iter()
        .map(|found| {
            let path = found.path.display().to_string();
            let (kind, value) = match found.held {
                Ok(held) => held_pair(py, held)?,
                Err(err) => (
                    "unreadable",
                    err.to_string().into_pyobject(py)?.into_any().unbind(),
                ),
            };
            Ok((path, found.name, kind, value))
        })
        .collect()
}

/// braid's settings in a conf or conflist as the shim reads them (`braid_wire::settings`),
/// under their keys (`daemonWaitSeconds` and `pluginTimeout` in seconds); the shim's
/// `CniError` otherwise.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn shim_settings<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let settings = braid_cni::settings::parse(data).map_err(|e| to_py_err(py, e))?;
    let found = PyDict::new(py);
    found.set_item("cniVersion", settings.cni_version)?;
    found.set_item("daemonSocketDir", settings.socket_dir)?;
    found.set_item("cniDir", settings.cni_dir)?;
    found.set_item("binDir", settings.bin_dir)?;
    found.set_item("daemonWaitSeconds", settings.daemon_wait.as_secs_f64())?;
    found.set_item("pluginTimeout", settings.plugin_timeout.as_secs_f64())?;
    found.set_item("readinessindicatorfile", settings.readiness_file)?;
    Ok(found)
}

/// Whether `version` (`""` is 0.1.0) parses and is at least `minimum`.
#[pyfunction]
#[pyo3(signature = (*, version, minimum))]
fn version_at_least(version: &str, minimum: &str) -> bool {
    version::at_least(version, minimum)
}

/// The plugin directories: `bin_dir`, then `cni_path`'s entries, without empty or repeated
/// ones (`braid_delegate::lookup::search_dirs`).
#[pyfunction]
#[pyo3(signature = (*, bin_dir, cni_path))]
fn plugin_search_dirs(bin_dir: &str, cni_path: &str) -> Vec<String> {
    lookup::search_dirs(bin_dir, cni_path)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plugin_search_dirs, m)?)?;
    m.add_function(wrap_pyfunction!(find_plugin, m)?)?;
    m.add_function(wrap_pyfunction!(is_meta_plugin, m)?)?;
    m.add_function(wrap_pyfunction!(is_plain_plugin_type, m)?)?;
    m.add_function(wrap_pyfunction!(plugin_env, m)?)?;
    m.add_function(wrap_pyfunction!(version_env, m)?)?;
    m.add_function(wrap_pyfunction!(judge_exit, m)?)?;
    m.add_function(wrap_pyfunction!(supported_versions, m)?)?;
    m.add_function(wrap_pyfunction!(no_output_error, m)?)?;
    m.add_function(wrap_pyfunction!(cache_entry_path, m)?)?;
    m.add_function(wrap_pyfunction!(cached_result, m)?)?;
    m.add_function(wrap_pyfunction!(del_stdins, m)?)?;
    m.add_function(wrap_pyfunction!(container_lock_name, m)?)?;
    m.add_function(wrap_pyfunction!(lock_container, m)?)?;
    m.add_function(wrap_pyfunction!(lock_gc, m)?)?;
    m.add_class::<HeldLock>()?;
    m.add_function(wrap_pyfunction!(spare_held, m)?)?;
    m.add_function(wrap_pyfunction!(discover_spares, m)?)?;
    m.add_function(wrap_pyfunction!(shim_settings, m)?)?;
    m.add("SPARE_SIZE", spares::SPARE_SIZE)?;
    m.add("SPARE_SUFFIX", spares::SPARE_SUFFIX)?;
    m.add_function(wrap_pyfunction!(version_at_least, m)?)?;
    m.add("MAX_STDOUT_BYTES", MAX_STDOUT_BYTES)?;
    m.add("EXIT_GRACE_SECONDS", EXIT_GRACE.as_secs_f64())?;
    m.add("GC_LOCK_NAME", lock::GC_LOCK_NAME)?;
    m.add("VERSION_STDIN", PyBytes::new(m.py(), judge::VERSION_STDIN))?;
    m.add("CACHE_KIND", cache::CACHE_KIND)?;
    m.add("MAX_CACHE_ENTRY_BYTES", cache::MAX_ENTRY_BYTES)?;
    Ok(())
}
