//! The device-information files braid wrote for a container's attachments
//! (`docs/devices.md`): `<deviceInfoDir>/cni/<container ID>/<interface>-device.json`, each
//! handed to its delegate as the `CNIDeviceInfoFile` capability argument. Once the container's
//! attachments are torn down, their directory goes.
//!
//! The directory is taken from the attachments' capability arguments only where it is named
//! by the container ID and sits in a directory named `cni`. Its entries are removed by
//! descriptor (`/proc/self/fd`), never followed: a link is removed, not its target, and a
//! subdirectory is left (and with it the directory).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use braid_cni::record::Entry;
use serde_json::Value;

/// The capability argument that names an attachment's device-information file.
pub const CAPABILITY: &str = "CNIDeviceInfoFile";
/// The most entries looked at in a container's directory (braid writes one per attachment).
pub const MAX_ENTRIES: usize = 64;
/// The most distinct directories taken from one record.
const MAX_DIRECTORIES: usize = 4;

/// The container's device-information directories that `entries` name (usually none or one).
pub fn directories(entries: &[Entry], container_id: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let Some(dir) = entry
            .capability_args
            .as_deref()
            .and_then(|args| directory_of(args, container_id))
        else {
            continue;
        };
        if !found.contains(&dir) {
            if found.len() == MAX_DIRECTORIES {
                break;
            }
            found.push(dir);
        }
    }
    found
}

/// The directory of the `CNIDeviceInfoFile` in the capability arguments `args` (a JSON
/// object), if it is an absolute path without `.` or `..` whose directory is named
/// `container_id` and sits in one named `cni`.
pub fn directory_of(args: &[u8], container_id: &str) -> Option<PathBuf> {
    let args: Value = serde_json::from_slice(args).ok()?;
    let text = args.get(CAPABILITY)?.as_str()?;
    let plain = text.starts_with('/')
        && text
            .split('/')
            .skip(1)
            .all(|part| !matches!(part, "" | "." | ".."));
    let path = Path::new(text);
    let dir = path.parent()?;
    let named = dir.file_name()? == container_id
        && dir.parent()?.file_name()? == "cni"
        && path.file_name().is_some();
    (plain && named && !container_id.is_empty()).then(|| dir.to_path_buf())
}

/// Removes the files and links in `dir` (at most [`MAX_ENTRIES`]), then `dir`. No directory
/// is no error; neither `dir` nor anything in it is followed when it is a link. Every failure
/// is reported, in one error, once everything that could go has gone.
pub fn remove_directory(dir: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no directory"));
    };
    let parent = match open_dir(parent) {
        Ok(parent) => parent,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    let in_parent = by_descriptor(&parent).join(name);
    let own = match open_dir(&in_parent) {
        Ok(own) => own,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    let inside = by_descriptor(&own);
    let mut problems = Vec::new();
    for (count, entry) in fs::read_dir(&inside)?.enumerate() {
        if count == MAX_ENTRIES {
            problems.push(format!("more than {MAX_ENTRIES} entries"));
            break;
        }
        let entry = entry?;
        let kind = entry.file_type()?; // the entry's own type: a link is not followed
        if kind.is_dir() {
            problems.push(format!("{} is a directory", entry.file_name().display()));
            continue;
        }
        match fs::remove_file(inside.join(entry.file_name())) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => {
                problems.push(format!("{}: {err}", entry.file_name().display()));
            }
            _ => {}
        }
    }
    if !problems.is_empty() {
        return Err(io::Error::other(problems.join("; ")));
    }
    drop(own);
    match fs::remove_dir(&in_parent) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// `path` opened as a directory, unless it is a link.
fn open_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// The path that reaches the directory `dir` is open on, whatever its name now is.
fn by_descriptor(dir: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(path: &str) -> Vec<u8> {
        serde_json::json!({ CAPABILITY: path, "deviceID": "0000:03:00.1" })
            .to_string()
            .into_bytes()
    }

    #[test]
    fn only_a_directory_named_by_the_container_in_cni_is_taken() {
        let take = |path: &str| directory_of(&args(path), "ctr1");
        assert_eq!(
            take("/run/devinfo/cni/ctr1/net1-device.json"),
            Some(PathBuf::from("/run/devinfo/cni/ctr1"))
        );
        for path in [
            "/run/devinfo/cni/ctr2/net1-device.json",
            "/run/devinfo/dp/ctr1/net1-device.json",
            "/run/devinfo/cni/ctr1/../ctr1/net1-device.json",
            "/run/devinfo/cni/./ctr1/net1-device.json",
            "run/devinfo/cni/ctr1/net1-device.json",
            "/run/devinfo/cni/ctr1/net1/x.json",
            "/cni/ctr1",
            "/ctr1/x.json",
            "//run/devinfo/cni/ctr1/net1-device.json",
            "/run/devinfo/cni/ctr1/",
            "",
        ] {
            assert_eq!(take(path), None, "{path}");
        }
        assert_eq!(directory_of(br#"{"CNIDeviceInfoFile": 5}"#, "ctr1"), None);
        assert_eq!(directory_of(b"[1]", "ctr1"), None);
        assert_eq!(directory_of(b"not json", "ctr1"), None);
    }

    fn scratch(name: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("braid-devinfo-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("cni").join("ctr1")).unwrap();
        root
    }

    #[test]
    fn files_and_links_go_and_a_link_target_stays() {
        let root = scratch("links");
        let dir = root.join("cni").join("ctr1");
        let target = root.join("elsewhere.json");
        fs::write(&target, b"{}").unwrap();
        fs::write(dir.join("net1-device.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("net2-device.json")).unwrap();
        std::os::unix::fs::symlink(&root, dir.join("up")).unwrap();

        remove_directory(&dir).unwrap();

        assert!(!dir.exists());
        assert_eq!(fs::read(&target).unwrap(), b"{}");
        assert!(root.join("cni").is_dir());
        remove_directory(&dir).unwrap(); // gone already: nothing to do
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_link_in_place_of_the_directory_is_not_followed() {
        let root = scratch("dirlink");
        let dir = root.join("cni").join("ctr1");
        fs::remove_dir(&dir).unwrap();
        let real = root.join("real");
        fs::create_dir(&real).unwrap();
        fs::write(real.join("keep.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(&real, &dir).unwrap();

        assert!(remove_directory(&dir).is_err());

        assert_eq!(fs::read(real.join("keep.json")).unwrap(), b"{}");
        assert!(fs::symlink_metadata(&dir).unwrap().file_type().is_symlink());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_subdirectory_is_not_entered_and_keeps_the_directory() {
        let root = scratch("subdir");
        let dir = root.join("cni").join("ctr1");
        fs::create_dir(dir.join("sub")).unwrap();
        fs::write(dir.join("sub").join("keep.json"), b"{}").unwrap();
        fs::write(dir.join("net1-device.json"), b"{}").unwrap();

        let err = remove_directory(&dir).unwrap_err();

        assert!(err.to_string().contains("sub is a directory"), "{err}");
        assert!(!dir.join("net1-device.json").exists());
        assert_eq!(fs::read(dir.join("sub").join("keep.json")).unwrap(), b"{}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_work_is_bounded() {
        let root = scratch("bound");
        let dir = root.join("cni").join("ctr1");
        for n in 0..=MAX_ENTRIES {
            fs::write(dir.join(format!("f{n}")), b"").unwrap();
        }
        let err = remove_directory(&dir).unwrap_err();
        assert!(err.to_string().contains("more than 64"), "{err}");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&root).unwrap();
    }
}
