//! Glue for `braid-cni`, the submodule `braid._native.cni`: results, versions, configuration
//! lists, plugin stdin, `CNI_ARGS`, names and the error JSON.

use braid_cni::{args, config, inject, names, readiness, result, version, CniError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::{bytes, to_py_err};

/// Converts a CNI result to `to_version` with libcni's rules. A version that is not UTF-8
/// text (a lone surrogate) is no known version either: refused the same way (code 1).
#[pyfunction]
#[pyo3(signature = (*, data, to_version))]
fn convert_result(
    py: Python<'_>,
    data: &[u8],
    to_version: &Bound<'_, PyString>,
) -> PyResult<Py<PyBytes>> {
    result::convert(data, &to_version.to_string_lossy())
        .map(|v| bytes(py, &v))
        .map_err(|e| to_py_err(py, e))
}

/// Parses a plugin's ADD output for a configuration of `config_version`.
#[pyfunction]
#[pyo3(signature = (*, data, config_version))]
fn parse_plugin_result(py: Python<'_>, data: &[u8], config_version: &str) -> PyResult<Py<PyBytes>> {
    result::parse_plugin_output(data, config_version)
        .map(|v| bytes(py, &v))
        .map_err(|e| to_py_err(py, e))
}

/// The `cniVersion` of a result.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn result_version(py: Python<'_>, data: &[u8]) -> PyResult<String> {
    result::result_version(data).map_err(|e| to_py_err(py, e))
}

/// Decodes a plugin's error object into `(code, msg, details)`.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn parse_plugin_error(py: Python<'_>, data: &[u8]) -> PyResult<(u32, String, String)> {
    result::parse_error_object(data)
        .map(|e| (e.code, e.msg, e.details))
        .map_err(|e| to_py_err(py, e))
}

/// Decodes a plugin's VERSION output; returns its `supportedVersions`.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn parse_version_output(py: Python<'_>, data: &[u8]) -> PyResult<Vec<String>> {
    version::parse_version_output(data).map_err(|e| to_py_err(py, e))
}

/// libcni's selection of a list version from `cniVersion` and `cniVersions`.
#[pyfunction]
#[pyo3(signature = (*, cni_version, cni_versions))]
fn select_list_version(cni_version: &str, cni_versions: Vec<String>) -> String {
    version::select_list_version(cni_version, &cni_versions)
}

/// The highest version the list and every plugin support.
#[pyfunction]
#[pyo3(signature = (*, list_version, list_versions, plugin_versions))]
fn negotiate_version(
    py: Python<'_>,
    list_version: &str,
    list_versions: Vec<String>,
    plugin_versions: Vec<Vec<String>>,
) -> PyResult<String> {
    version::negotiate(list_version, &list_versions, &plugin_versions).map_err(|e| to_py_err(py, e))
}

/// Validates a conflist; returns its summary JSON.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn parse_network_list(py: Python<'_>, data: &[u8]) -> PyResult<Py<PyBytes>> {
    config::summarize(data)
        .map(|v| bytes(py, &v))
        .map_err(|e| to_py_err(py, e))
}

/// Up-converts a single-plugin conf into a conflist.
#[pyfunction]
#[pyo3(signature = (*, data))]
fn conf_to_list(py: Python<'_>, data: &[u8]) -> PyResult<Py<PyBytes>> {
    config::conf_to_list(data)
        .map(|v| bytes(py, &v))
        .map_err(|e| to_py_err(py, e))
}

/// Appends plugin objects to a conflist.
#[pyfunction]
#[pyo3(signature = (*, network_list, plugins))]
fn append_plugins(
    py: Python<'_>,
    network_list: &[u8],
    plugins: Vec<Vec<u8>>,
) -> PyResult<Py<PyBytes>> {
    let refs: Vec<&[u8]> = plugins.iter().map(Vec::as_slice).collect();
    config::append_plugins(network_list, &refs)
        .map(|v| bytes(py, &v))
        .map_err(|e| to_py_err(py, e))
}

/// Builds one plugin's stdin for one verb.
#[pyfunction]
#[pyo3(signature = (*, network_list, index, command, cni_version, capability_args=None, prev_result=None, valid_attachments=None, args_cni=None))]
#[allow(clippy::too_many_arguments)] // mirrors the keyword-only Python signature
fn plugin_stdin(
    py: Python<'_>,
    network_list: &[u8],
    index: usize,
    command: &str,
    cni_version: &str,
    capability_args: Option<&[u8]>,
    prev_result: Option<&[u8]>,
    valid_attachments: Option<&[u8]>,
    args_cni: Option<&[u8]>,
) -> PyResult<Py<PyBytes>> {
    let req = inject::StdinRequest {
        network_list,
        index,
        command,
        cni_version,
        capability_args,
        prev_result,
        valid_attachments,
        args_cni,
    };
    inject::plugin_stdin(&req)
        .map(|v| bytes(py, &v))
        .map_err(|e| to_py_err(py, e))
}

/// Joins `CNI_ARGS` pairs.
#[pyfunction]
#[pyo3(signature = (*, pairs))]
fn build_cni_args(pairs: Vec<(String, String)>) -> String {
    args::build(&pairs)
}

/// Splits `CNI_ARGS` like Go's `LoadArgs`.
#[pyfunction]
#[pyo3(signature = (*, value))]
fn parse_cni_args(py: Python<'_>, value: &str) -> PyResult<Vec<(String, String)>> {
    args::parse(value).map_err(|e| to_py_err(py, e))
}

/// Renders the CNI error JSON object. Text that is not UTF-8 (a lone surrogate, which is how
/// Python holds undecodable bytes from the environment) is rendered with U+FFFD in its place:
/// an error is always answered.
#[pyfunction]
#[pyo3(signature = (*, code, msg, details, cni_version))]
fn error_json(
    py: Python<'_>,
    code: u32,
    msg: &Bound<'_, PyString>,
    details: &Bound<'_, PyString>,
    cni_version: &Bound<'_, PyString>,
) -> Py<PyBytes> {
    let err = CniError::new(code, msg.to_string_lossy()).with_details(details.to_string_lossy());
    bytes(py, &err.to_json(&cni_version.to_string_lossy()))
}

/// Why a value from outside (`os.environ` holds undecodable bytes as lone surrogates) is
/// refused when it is not UTF-8 text.
const NOT_UTF8: &str = "is not valid UTF-8";

/// Why `value` cannot be a container id (`braid_cni::names`); `None` when it can.
#[pyfunction]
#[pyo3(signature = (*, value))]
fn container_id_problem(value: &Bound<'_, PyString>) -> Option<String> {
    value
        .to_str()
        .map_or_else(|_| Some(NOT_UTF8.to_owned()), names::container_id_problem)
}

/// `CNI_CONTAINERID` of a `command` call checked (`braid_cni::names::check_container_id`):
/// code 3 when missing, code 4 when it cannot be a container id (or is not UTF-8 text).
#[pyfunction]
#[pyo3(signature = (*, command, value))]
fn check_container_id(py: Python<'_>, command: &str, value: &Bound<'_, PyString>) -> PyResult<()> {
    let checked = match value.to_str() {
        Ok(id) => names::check_container_id(command, id),
        Err(_) => Err(CniError::new(
            braid_cni::codes::INVALID_ENVIRONMENT,
            format!("CNI_CONTAINERID {NOT_UTF8}"),
        )),
    };
    checked.map_err(|e| to_py_err(py, e))
}

/// Why `value` cannot be a network name (`braid_cni::names`); `None` when it can.
#[pyfunction]
#[pyo3(signature = (*, value))]
fn network_name_problem(value: &Bound<'_, PyString>) -> Option<&'static str> {
    value
        .to_str()
        .map_or(Some(NOT_UTF8), names::network_name_problem)
}

/// Why `value` cannot be an interface name (`braid_cni::names`); `None` when it can.
#[pyfunction]
#[pyo3(signature = (*, value))]
fn interface_name_problem(value: &Bound<'_, PyString>) -> Option<&'static str> {
    value
        .to_str()
        .map_or(Some(NOT_UTF8), names::interface_name_problem)
}

/// Adds this module's names to its submodule of `braid._native` (`braid._native.cni`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(convert_result, m)?)?;
    m.add_function(wrap_pyfunction!(parse_plugin_result, m)?)?;
    m.add_function(wrap_pyfunction!(result_version, m)?)?;
    m.add_function(wrap_pyfunction!(parse_plugin_error, m)?)?;
    m.add_function(wrap_pyfunction!(parse_version_output, m)?)?;
    m.add_function(wrap_pyfunction!(select_list_version, m)?)?;
    m.add_function(wrap_pyfunction!(negotiate_version, m)?)?;
    m.add_function(wrap_pyfunction!(parse_network_list, m)?)?;
    m.add_function(wrap_pyfunction!(conf_to_list, m)?)?;
    m.add_function(wrap_pyfunction!(append_plugins, m)?)?;
    m.add_function(wrap_pyfunction!(plugin_stdin, m)?)?;
    m.add_function(wrap_pyfunction!(build_cni_args, m)?)?;
    m.add_function(wrap_pyfunction!(parse_cni_args, m)?)?;
    m.add_function(wrap_pyfunction!(error_json, m)?)?;
    m.add_function(wrap_pyfunction!(container_id_problem, m)?)?;
    m.add_function(wrap_pyfunction!(check_container_id, m)?)?;
    m.add_function(wrap_pyfunction!(network_name_problem, m)?)?;
    m.add_function(wrap_pyfunction!(interface_name_problem, m)?)?;
    m.add("ERROR_CODES", braid_cni::codes::ALL.to_vec())?;
    m.add("CNI_VERSIONS", version::ALL.to_vec())?;
    m.add("CNI_CURRENT_VERSION", version::CURRENT)?;
    m.add("BRAID_VERSION", version::PACKAGE)?;
    m.add("BRAID_BUILD", version::BUILD)?;
    m.add("MAX_CONTAINER_ID_BYTES", names::MAX_CONTAINER_ID_BYTES)?;
    m.add(
        "READINESS_TIMEOUT_SECONDS",
        readiness::READINESS_TIMEOUT.as_secs_f64(),
    )?;
    m.add(
        "READINESS_POLL_SECONDS",
        readiness::READINESS_POLL.as_secs_f64(),
    )
}
