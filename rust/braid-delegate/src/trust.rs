//! The shim's trusted paths read from this node (`braid_wire::trust`, the rule): the node file
//! opened without following a link, and `stat(2)` of each component of a path stdin names.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use braid_cni::settings::Settings;
use braid_cni::trust::{self, NodeFile, Owner, MAX_NODE_FILE_BYTES, NODE_FILE_NAME};
use braid_cni::CniError;

/// The node file beside this process's executable (`/proc/self/exe`); `None` when the
/// executable cannot be found.
pub fn node_file_beside_executable() -> Option<PathBuf> {
    let exe = fs::read_link("/proc/self/exe").ok()?;
    Some(exe.parent()?.join(NODE_FILE_NAME))
}

/// `settings` with their trusted paths from the node file at `node_file` (absent: stdin's,
/// checked), `braid_wire::trust::trusted`.
pub fn trusted_settings(settings: Settings, node_file: &Path) -> Result<Settings, CniError> {
    let shown = node_file.display().to_string();
    trust::trusted(settings, read_node_file(node_file), &shown, stat_owner)
}

/// What `stat(2)` says of `path` (links followed); `None` when it cannot be reached.
pub fn stat_owner(path: &str) -> Option<Owner> {
    fs::metadata(path).ok().map(|meta| Owner {
        uid: meta.uid(),
        mode: meta.mode(),
    })
}

/// The node file's bytes and its owner, opened without following a link; `None` when there
/// is none.
pub fn read_node_file(path: &Path) -> NodeFile {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(String::from("it is a symbolic link"))
        }
        Err(err) => return Err(err.to_string()),
    };
    let meta = file.metadata().map_err(|err| err.to_string())?;
    let owner = Owner {
        uid: meta.uid(),
        mode: meta.mode(),
    };
    if !meta.is_file() {
        return Ok(Some((Vec::new(), owner))); // the rule refuses it
    }
    let mut data = Vec::new();
    let limit = u64::try_from(MAX_NODE_FILE_BYTES).unwrap_or(u64::MAX) + 1;
    file.take(limit)
        .read_to_end(&mut data)
        .map_err(|err| err.to_string())?;
    Ok(Some((data, owner)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("braid-trust-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn a_linked_node_file_is_refused_and_a_missing_one_is_none() {
        let dir = scratch("link");
        let real = dir.join("real.json");
        fs::write(&real, br#"{"cniDir": "/c"}"#).unwrap();
        std::os::unix::fs::symlink(&real, dir.join(NODE_FILE_NAME)).unwrap();
        let err = read_node_file(&dir.join(NODE_FILE_NAME)).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(read_node_file(&dir.join("absent.json")), Ok(None));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_node_file_gives_the_paths_and_an_open_one_is_code_7() {
        let dir = scratch("file");
        let node = dir.join(NODE_FILE_NAME);
        fs::write(&node, br#"{"cniDir": "/c", "binDir": "/b"}"#).unwrap();
        fs::set_permissions(&node, fs::Permissions::from_mode(0o644)).unwrap();
        if fs::metadata(&node).unwrap().uid() != 0 {
            return fs::remove_dir_all(&dir).unwrap(); // only root's files are trusted
        }
        let stdin = braid_cni::settings::parse(br#"{"type": "braid", "binDir": "/x"}"#).unwrap();
        let settings = trusted_settings(stdin.clone(), &node).unwrap();
        assert_eq!(
            (settings.cni_dir.as_str(), settings.bin_dir.as_str()),
            ("/c", "/b")
        );
        fs::set_permissions(&node, fs::Permissions::from_mode(0o666)).unwrap();
        let err = trusted_settings(stdin, &node).unwrap_err();
        assert_eq!(err.code, braid_cni::codes::INVALID_CONFIG);
        assert!(err.msg.contains("writable by group or others"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
