//! The teardown of a whole record (`braid_delegate::teardown`) for the engine: which entries
//! go and in which order, and how a failure names its attachment, the rules the shim's DEL
//! replay follows.

use braid_cni::CniError;
use braid_delegate::teardown;
use pyo3::prelude::*;

/// The indices of a record's entries (given by their `positions`) in the order a DEL tears
/// them down (`braid_delegate::teardown::order`): every one, the last in plan order first.
#[pyfunction]
#[pyo3(signature = (*, positions))]
fn teardown_order(positions: Vec<u64>) -> Vec<usize> {
    teardown::order(&positions)
}

/// The error `(code, msg, details)` of an attachment named `name` whose DEL failed with
/// `(code, msg, details)` (`braid_delegate::teardown::del_failed`).
#[pyfunction]
#[pyo3(signature = (*, name, code, msg, details))]
fn del_failed(name: &str, code: u32, msg: String, details: String) -> (u32, String, String) {
    let failed = teardown::del_failed(name, &CniError::new(code, msg).with_details(details));
    (failed.code, failed.msg, failed.details)
}

/// Adds this module's names to its submodule of `braid._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(teardown_order, m)?)?;
    m.add_function(wrap_pyfunction!(del_failed, m)?)?;
    Ok(())
}
