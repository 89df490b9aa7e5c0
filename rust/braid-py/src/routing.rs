//! Glue for `braid_netns::source_routing`, in the submodule `braid._native.netns`: one
//! interface's source routing (its table, its rules and its metric) installed, removed and
//! checked in a pod's namespace. The GIL is released around every kernel call.

use braid_cni::{codes, CniError};
use braid_netns::{source_routing, NetnsError, SourceRouting};
use pyo3::prelude::*;

use crate::netns::netns_err;

/// Converts an error of `what`: input that the plan refuses (the delegate's result) or an
/// interface that is not there is the delegate's failure; the rest as `netns_err` says.
fn routing_err(py: Python<'_>, netns: &str, what: &str, err: &NetnsError) -> PyErr {
    if matches!(
        err,
        NetnsError::InvalidArgument(_) | NetnsError::NoSuchLink { .. }
    ) {
        let msg = format!("{what} in network namespace {netns:?} failed: {err}");
        return super::to_py_err(py, CniError::new(codes::PLUGIN_FAILURE, msg));
    }
    netns_err(py, netns, what, err)
}

/// Runs `work` (a kernel call) with the GIL released; its error converts as `routing_err`.
fn detached<T: Send>(
    py: Python<'_>,
    netns: &str,
    what: &str,
    work: impl FnOnce() -> Result<T, NetnsError> + Send,
) -> PyResult<T> {
    py.detach(work)
        .map_err(|e| routing_err(py, netns, what, &e))
}

fn planned(
    py: Python<'_>,
    netns: &str,
    ifname: &str,
    addresses: &[String],
    routes: &[(String, Option<String>)],
) -> PyResult<SourceRouting> {
    source_routing::plan(addresses, routes).map_err(|e| {
        routing_err(
            py,
            netns,
            &format!("planning source routing for {ifname:?}"),
            &e,
        )
    })
}

/// Installs the source routing of `ifname`: its table (connected routes of `addresses`, then
/// `routes` as `(destination/len, gateway or None)`), one rule per address, and `metric` on
/// its main-table gateway routes. Returns the table.
#[pyfunction]
#[pyo3(signature = (*, netns, ifname, addresses, routes, metric=None))]
fn apply_source_routing(
    py: Python<'_>,
    netns: &str,
    ifname: &str,
    addresses: Vec<String>,
    routes: Vec<(String, Option<String>)>,
    metric: Option<u32>,
) -> PyResult<u32> {
    let routing = planned(py, netns, ifname, &addresses, &routes)?;
    let what = format!("installing source routing for {ifname:?}");
    detached(py, netns, &what, || {
        source_routing::apply(netns, ifname, &routing, metric)
    })
}

/// Removes the rules and table routes of `ifname`, and rules left pointing to empty tables of
/// braid's range. Idempotent.
#[pyfunction]
#[pyo3(signature = (*, netns, ifname))]
fn clear_source_routing(py: Python<'_>, netns: &str, ifname: &str) -> PyResult<()> {
    py.detach(|| source_routing::clear(netns, ifname))
        .map_err(|e| {
            netns_err(
                py,
                netns,
                &format!("removing source routing of {ifname:?}"),
                &e,
            )
        })
}

/// What is missing of the source routing of `ifname` (one sentence each; empty: all there).
#[pyfunction]
#[pyo3(signature = (*, netns, ifname, addresses, routes, metric=None))]
fn check_source_routing(
    py: Python<'_>,
    netns: &str,
    ifname: &str,
    addresses: Vec<String>,
    routes: Vec<(String, Option<String>)>,
    metric: Option<u32>,
) -> PyResult<Vec<String>> {
    let routing = planned(py, netns, ifname, &addresses, &routes)?;
    let what = format!("checking source routing of {ifname:?}");
    detached(py, netns, &what, || {
        source_routing::check(netns, ifname, &routing, metric)
    })
}

/// Adds this module's names to `braid._native.netns`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(apply_source_routing, m)?)?;
    m.add_function(wrap_pyfunction!(clear_source_routing, m)?)?;
    m.add_function(wrap_pyfunction!(check_source_routing, m)?)?;
    m.add(
        "SOURCE_ROUTING_RULE_PRIORITY",
        source_routing::RULE_PRIORITY,
    )?;
    Ok(())
}
