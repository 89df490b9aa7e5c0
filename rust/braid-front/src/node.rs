//! The front's trusted paths (`braid_wire::trust`, the rule the full shim applies too): the
//! node file beside the front, read without following a link, else stdin's paths checked
//! component by component with `stat(2)`.

use alloc::string::String;
use alloc::vec::Vec;

use braid_wire::settings::Settings;
use braid_wire::trust::{self, NodeFile, Owner, MAX_NODE_FILE_BYTES, NODE_FILE_NAME};
use braid_wire::CniError;

use crate::{describe, parent, sys};

const ENOENT: isize = 2;
const ELOOP: isize = 40;

/// `settings` with their trusted paths, or the error with the version to render it at.
pub fn trusted(settings: Settings) -> Result<Settings, (CniError, String)> {
    let version = settings.cni_version.clone();
    let mut own = [0_u8; 4096];
    let len = sys::readlink(b"/proc/self/exe\0", &mut own);
    let dir = if len > 0 {
        parent(&own[..len.unsigned_abs()])
    } else {
        None
    };
    let (node, shown) = match dir {
        Some(dir) => {
            let mut path = dir.to_vec();
            path.extend_from_slice(b"/");
            path.extend_from_slice(NODE_FILE_NAME.as_bytes());
            let shown = String::from_utf8_lossy(&path).into_owned();
            path.push(0);
            (read_node_file(&path), shown)
        }
        None => (Ok(None), String::new()),
    };
    trust::trusted(settings, node, &shown, stat).map_err(|err| (err, version))
}

fn stat(path: &str) -> Option<Owner> {
    let mut text = Vec::with_capacity(path.len() + 1);
    text.extend_from_slice(path.as_bytes());
    text.push(0);
    sys::stat_owner(&text).map(|(uid, mode)| Owner { uid, mode })
}

/// The node file at the NUL-terminated `path`, as `braid_delegate::trust::read_node_file`
/// reads it in the full shim.
fn read_node_file(path: &[u8]) -> NodeFile {
    let fd = match sys::open_no_follow(path) {
        Ok(fd) => fd,
        Err(errno) if errno == -ENOENT => return Ok(None),
        Err(errno) if errno == -ELOOP => return Err(String::from("it is a symbolic link")),
        Err(errno) => return Err(describe(errno)),
    };
    let read = read_owned(fd);
    sys::close(fd);
    read.map(Some)
}

fn read_owned(fd: i32) -> Result<(Vec<u8>, Owner), String> {
    let (uid, mode) = sys::fstat_owner(fd).map_err(describe)?;
    let owner = Owner { uid, mode };
    let mut data = Vec::new();
    if mode & 0o170_000 != 0o100_000 {
        return Ok((data, owner)); // not a regular file: the rule refuses it
    }
    let mut chunk = [0_u8; 4096];
    while data.len() <= MAX_NODE_FILE_BYTES {
        match sys::read(fd, &mut chunk) {
            0 => break,
            got if got < 0 => return Err(describe(got)),
            got => data.extend_from_slice(&chunk[..got.unsigned_abs()]),
        }
    }
    Ok((data, owner))
}
