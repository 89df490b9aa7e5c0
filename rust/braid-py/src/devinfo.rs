//! The removal of a container's device-information files (`braid_delegate::devinfo`) for the
//! engine: the directories are the ones its attachment record names, removed by the rule the
//! shim's DEL replay follows (levels from `deviceInfoDir` down never followed when a link).

use std::path::Path;

use braid_cni::record;
use braid_delegate::devinfo;
use pyo3::prelude::*;

use crate::exec::os_error;

/// The container's device-information directories: `<device_info_dir>/cni/<container_id>`
/// (`braid_delegate::devinfo::configured_directory`), then those the record `data` names
/// (`braid_delegate::devinfo::directories`, of the entries that still decode when it is
/// damaged).
#[pyfunction]
#[pyo3(signature = (*, data, container_id, device_info_dir))]
fn device_info_dirs(
    py: Python<'_>,
    data: &[u8],
    container_id: &str,
    device_info_dir: &str,
) -> Vec<String> {
    py.detach(|| {
        let entries = match record::decode(data, container_id) {
            Ok(decoded) => decoded.attachments,
            Err(damaged) => damaged.salvaged,
        };
        let configured = devinfo::configured_directory(device_info_dir, container_id);
        devinfo::directories_with(&entries, container_id, configured.into_iter().collect())
            .iter()
            .map(|dir| dir.to_string_lossy().into_owned())
            .collect()
    })
}

/// Removes the device-information directory `directory` (one of `device_info_dirs`) and the
/// files and links in it (`braid_delegate::devinfo::remove_directory_reached`); `above`: where
/// this process reaches the directory above `deviceInfoDir`. Raises `OSError` naming what
/// stayed.
#[pyfunction]
#[pyo3(signature = (*, directory, above=None))]
fn remove_device_info_dir(py: Python<'_>, directory: &str, above: Option<&str>) -> PyResult<()> {
    py.detach(|| devinfo::remove_directory_reached(Path::new(directory), above.map(Path::new)))
        .map_err(|err| os_error(&err))
}

/// Adds this module's names to its submodule of `braid._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(device_info_dirs, m)?)?;
    m.add_function(wrap_pyfunction!(remove_device_info_dir, m)?)?;
    Ok(())
}
