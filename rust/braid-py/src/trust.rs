//! The shim's trusted paths (`braid_wire::trust`) for braid's Python: `braid-thin` and the
//! daemon read `daemonSocketDir`, `cniDir`, `binDir` and `readinessindicatorfile` by the
//! same rule as the shim.

use std::path::Path;

use braid_cni::settings::Settings;
use braid_cni::trust;
use braid_delegate::trust::{stat_owner, trusted_settings};
use pyo3::prelude::*;

use crate::to_py_err;

/// The four paths `(socket_dir, cni_dir, bin_dir, readiness_file)` to use: the node file's at
/// `node_file` when it exists, else the ones given once they pass the ownership check; the
/// shim's `CniError` (code 7) otherwise.
#[pyfunction]
#[pyo3(signature = (*, socket_dir, cni_dir, bin_dir, readiness_file, node_file))]
fn trusted_paths(
    py: Python<'_>,
    socket_dir: String,
    cni_dir: String,
    bin_dir: String,
    readiness_file: String,
    node_file: &str,
) -> PyResult<(String, String, String, String)> {
    let given = Settings {
        cni_version: String::new(),
        socket_dir,
        cni_dir,
        bin_dir,
        daemon_wait: std::time::Duration::ZERO,
        plugin_timeout: std::time::Duration::ZERO,
        readiness_file,
    };
    let settings = py
        .detach(|| trusted_settings(given, Path::new(node_file)))
        .map_err(|e| to_py_err(py, e))?;
    Ok((
        settings.socket_dir,
        settings.cni_dir,
        settings.bin_dir,
        settings.readiness_file,
    ))
}

/// Code 7 unless every existing component of `path` is root's and closed to group and others
/// (`braid_wire::trust::check_closed`); `key` names where the path came from.
#[pyfunction]
#[pyo3(signature = (*, key, path))]
fn check_closed_path(py: Python<'_>, key: &str, path: &str) -> PyResult<()> {
    py.detach(|| trust::check_closed(key, path, &mut stat_owner))
        .map_err(|e| to_py_err(py, e))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trusted_paths, m)?)?;
    m.add_function(wrap_pyfunction!(check_closed_path, m)?)?;
    m.add("NODE_FILE_NAME", trust::NODE_FILE_NAME)?;
    m.add("NODE_PATH_KEYS", trust::PATH_KEYS.to_vec())?;
    Ok(())
}
