//! Glue for `braid-netns`, the submodule `braid._native.netns`: namespace ids, and routes and
//! links of a network namespace. The GIL is released around every kernel call; errors become
//! `braid.errors.CniError` (code 4 when the namespace path is at fault, 999 otherwise) with a
//! message naming the namespace and the interface.

use braid_cni::CniError;
use braid_netns::NetnsError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// CNI code for a bad `CNI_NETNS` (invalid environment).
const INVALID_ENVIRONMENT: u32 = 4;
/// braid's code for an internal failure.
const INTERNAL: u32 = 999;

/// Converts a namespace error of `what` (an operation, naming the interface when there is one).
pub(crate) fn netns_err(py: Python<'_>, netns: &str, what: &str, err: &NetnsError) -> PyErr {
    let code = if err.is_bad_namespace() {
        INVALID_ENVIRONMENT
    } else {
        INTERNAL
    };
    let msg = format!("{what} in network namespace {netns:?} failed: {err}");
    let details = err
        .errno()
        .map(|n| format!("errno {n}"))
        .unwrap_or_default();
    super::to_py_err(py, CniError::new(code, msg).with_details(details))
}

/// The main-table routes of both families, as JSON.
#[pyfunction]
#[pyo3(signature = (*, netns))]
fn list_routes(py: Python<'_>, netns: &str) -> PyResult<Py<PyBytes>> {
    let routes = py.detach(|| braid_netns::list_routes(netns));
    match routes {
        Ok(routes) => Ok(PyBytes::new(py, braid_netns::routes_json(&routes).as_bytes()).unbind()),
        Err(e) => Err(netns_err(py, netns, "listing routes", &e)),
    }
}

/// Makes `gateway` the only default route of `family` (4 or 6); the other family is untouched.
#[pyfunction]
#[pyo3(signature = (*, netns, family, gateway, ifname=None))]
fn set_default_route(
    py: Python<'_>,
    netns: &str,
    family: u8,
    gateway: &str,
    ifname: Option<&str>,
) -> PyResult<()> {
    py.detach(|| braid_netns::set_default_route(netns, family, gateway, ifname))
        .map_err(|e| {
            let via = ifname
                .map(|n| format!(" via interface {n:?}"))
                .unwrap_or_default();
            netns_err(
                py,
                netns,
                &format!("setting the IPv{family} default route to {gateway}{via}"),
                &e,
            )
        })
}

/// `(ifindex, MAC, MTU)` of the interface, or `None` when the namespace has no such interface.
#[pyfunction]
#[pyo3(signature = (*, netns, ifname))]
fn link_info(py: Python<'_>, netns: &str, ifname: &str) -> PyResult<Option<(u32, String, u32)>> {
    py.detach(|| braid_netns::link_info(netns, ifname))
        .map(|link| link.map(|l| (l.index, l.mac, l.mtu)))
        .map_err(|e| netns_err(py, netns, &format!("reading interface {ifname:?}"), &e))
}

/// The interface names of the namespace, in index order.
#[pyfunction]
#[pyo3(signature = (*, netns))]
fn list_links(py: Python<'_>, netns: &str) -> PyResult<Vec<String>> {
    py.detach(|| braid_netns::list_links(netns))
        .map_err(|e| netns_err(py, netns, "listing interfaces", &e))
}

/// `(st_dev, st_ino)` of a namespace path; `OSError` when it cannot be opened.
#[pyfunction]
#[pyo3(signature = (*, path))]
fn namespace_id(py: Python<'_>, path: &str) -> PyResult<(u64, u64)> {
    py.detach(|| braid_netns::namespace_id(path))
        .map_err(PyErr::from)
}

/// Adds this module's names to its submodule of `braid._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(namespace_id, m)?)?;
    m.add_function(wrap_pyfunction!(list_routes, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_route, m)?)?;
    m.add_function(wrap_pyfunction!(link_info, m)?)?;
    m.add_function(wrap_pyfunction!(list_links, m)?)?;
    crate::routing::register(m)
}
