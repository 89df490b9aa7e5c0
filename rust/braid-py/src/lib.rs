//! pyo3 glue: `braid._native`, one submodule per crate that answers. Bytes and strings in,
//! bytes and strings out; keyword-only arguments; every `CniError` becomes
//! `braid.errors.CniError` in one place ([`to_py_err`]).

// pyo3 extracts Python lists into owned vectors; taking them by value is how it hands them over.
#![allow(clippy::needless_pass_by_value)]

mod cni;
mod delegate;
mod devinfo;
mod durable;
mod exec;
mod helpers;
mod netns;
mod record;
mod routing;
mod teardown;
mod trust;

use braid_cni::CniError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyType};

static CNI_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Converts a core error into `braid.errors.CniError(code, msg, details)`.
pub(crate) fn to_py_err(py: Python<'_>, err: CniError) -> PyErr {
    let class = CNI_ERROR.import(py, "braid.errors", "CniError");
    match class {
        Ok(cls) => match cls.call1((err.code, err.msg, err.details)) {
            Ok(obj) => PyErr::from_value(obj),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// `data` as Python `bytes`.
pub(crate) fn bytes(py: Python<'_>, data: &[u8]) -> Py<PyBytes> {
    PyBytes::new(py, data).unbind()
}

/// The names answered by `braid_delegate`: lookup, environment, judging, cache, locks,
/// spares, device info, teardown, durable writes and the shim's trusted settings.
fn register_delegate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    delegate::register(m)?;
    devinfo::register(m)?;
    durable::register(m)?;
    teardown::register(m)?;
    trust::register(m)
}

/// Adds the submodule `braid._native.<name>` filled by `fill`. It is also entered in
/// `sys.modules` under its dotted name, which `from braid._native.<name> import x` needs (an
/// extension module is no package: the import system finds submodules only there).
fn add_submodule(
    parent: &Bound<'_, PyModule>,
    name: &str,
    fill: fn(&Bound<'_, PyModule>) -> PyResult<()>,
) -> PyResult<()> {
    let py = parent.py();
    let sub = PyModule::new(py, name)?;
    fill(&sub)?;
    parent.add_submodule(&sub)?;
    let dotted = format!("braid._native.{name}");
    sub.setattr("__name__", &dotted)?;
    py.import("sys")?.getattr("modules")?.set_item(dotted, &sub)
}

/// `braid._native`: one submodule per crate that answers (`cni`, `delegate`, `exec`,
/// `netns`) and `record`, the attachment record of `braid_cni::record`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_submodule(m, "cni", cni::register)?;
    add_submodule(m, "delegate", register_delegate)?;
    add_submodule(m, "exec", exec::register)?;
    add_submodule(m, "netns", netns::register)?;
    add_submodule(m, "record", record::register)
}
