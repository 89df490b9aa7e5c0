//! The device-information files braid wrote for a container's attachments
//! (`docs/devices.md`): `<deviceInfoDir>/cni/<container ID>/<interface>-device.json`, each
//! handed to its delegate as the `CNIDeviceInfoFile` capability argument. Once the container's
//! attachments are torn down, their directory goes.
//!
//! The directory is taken from the attachments' capability arguments only where it is named
//! by the container ID and sits in a directory named `cni`. The directories above
//! `deviceInfoDir` are the node's and are followed as it names them; `deviceInfoDir`, `cni` and
//! the container's directory are each opened from the one above by descriptor
//! (`/proc/self/fd`) with `O_NOFOLLOW`, and one that is a link, not a directory, or not this
//! process's user's (root's) is refused, never followed. The entries are removed by
//! descriptor too: a link is removed, not its target, and a subdirectory is left (and with it
//! the directory).

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
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
    directories_with(entries, container_id, Vec::new())
}

/// [`directories`] after those `found` already holds (the [`configured_directory`]).
pub fn directories_with(
    entries: &[Entry],
    container_id: &str,
    mut found: Vec<PathBuf>,
) -> Vec<PathBuf> {
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
    directory_of_file(args.get(CAPABILITY)?.as_str()?, container_id)
}

/// The container's directory under the configured `device_info_dir`,
/// `<deviceInfoDir>/cni/<container ID>`, by the rule of [`directory_of`] (`None` when that
/// refuses it). The engine, which has braid's configuration, removes it as well as those its
/// record names: files written just before a crash that lost the record are found too.
pub fn configured_directory(device_info_dir: &str, container_id: &str) -> Option<PathBuf> {
    let base = device_info_dir.trim_end_matches('/');
    directory_of_file(&format!("{base}/cni/{container_id}/-"), container_id)
}

/// The directory of the device-information file `text`, by the rule of [`directory_of`].
fn directory_of_file(text: &str, container_id: &str) -> Option<PathBuf> {
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

/// Removes the files and links in `dir` (`<deviceInfoDir>/cni/<container ID>`; at most
/// [`MAX_ENTRIES`]), then `dir`. No directory is no error; no level from `deviceInfoDir` down
/// is followed when it is a link (nor is anything in `dir`), and one that is not a directory of
/// this process's user is refused. Every failure is reported, in one error, once everything
/// that could go has gone.
pub fn remove_directory(dir: &Path) -> io::Result<()> {
    remove_directory_reached(dir, None)
}

/// [`remove_directory`] for a process that reaches the node's directory above
/// `deviceInfoDir` elsewhere (`above`: the node's root seen from a container, links above
/// `deviceInfoDir` resolved as the node names them); `None`: where `dir` says.
pub fn remove_directory_reached(dir: &Path, above_seen: Option<&Path>) -> io::Result<()> {
    let no_directory = || io::Error::new(io::ErrorKind::InvalidInput, "no directory");
    let (Some(cni_dir), Some(own)) = (dir.parent(), dir.file_name()) else {
        return Err(no_directory());
    };
    let (Some(base_dir), Some(cni)) = (cni_dir.parent(), cni_dir.file_name()) else {
        return Err(no_directory());
    };
    let (Some(above), Some(base)) = (base_dir.parent(), base_dir.file_name()) else {
        return Err(no_directory());
    };
    let found = open_dir(above_seen.unwrap_or(above), 0)
        .and_then(|above| open_level(&above, base, dir))
        .and_then(|base| open_level(&base, cni, dir));
    let parent = match found {
        Ok(cni) => cni,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    let in_parent = by_descriptor(&parent).join(own);
    let own = match open_level(&parent, own, dir) {
        Ok(own) => own,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    remove_entries(&own)?;
    drop(own);
    match fs::remove_dir(&in_parent) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// Removes the files and links in the directory `own` is open on (at most [`MAX_ENTRIES`]).
fn remove_entries(own: &File) -> io::Result<()> {
    let inside = by_descriptor(own);
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
    if problems.is_empty() {
        Ok(())
    } else {
        Err(io::Error::other(problems.join("; ")))
    }
}

/// `name` in the directory `parent` is open on, opened as a directory without following a
/// link; refused (naming it as a level of `dir`) when it is a link, not a directory, or not
/// this process's user's.
fn open_level(parent: &File, name: &OsStr, dir: &Path) -> io::Result<File> {
    let refused = |why: &str| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} (a level of {}) {why}", name.display(), dir.display()),
        )
    };
    let level = match open_dir(&by_descriptor(parent).join(name), libc::O_NOFOLLOW) {
        Ok(level) => level,
        Err(err) if matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            return Err(refused(
                "is a link or not a directory: braid does not follow it",
            ));
        }
        Err(err) => return Err(err),
    };
    let meta = level.metadata()?;
    if !meta.is_dir() || meta.uid() != own_uid()? {
        return Err(refused("is not a directory of braid's user"));
    }
    Ok(level)
}

/// This process's effective user: the owner of its `/proc/self` (no `unsafe` for `geteuid`).
fn own_uid() -> io::Result<u32> {
    Ok(fs::metadata("/proc/self")?.uid())
}

/// `path` opened as a directory, with the open(2) flags `extra` (`O_NOFOLLOW`: not when its
/// last component is a link).
fn open_dir(path: &Path, extra: libc::c_int) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | extra | libc::O_CLOEXEC)
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
    fn the_configured_directory_follows_the_same_rule() {
        let dir = |base: &str, id: &str| configured_directory(base, id);
        assert_eq!(
            dir("/run/devinfo/", "ctr1"),
            Some(PathBuf::from("/run/devinfo/cni/ctr1"))
        );
        for (base, id) in [("/run/devinfo", ""), ("/run/devinfo", ".."), ("run", "c")] {
            assert_eq!(dir(base, id), None, "{base} {id}");
        }
        assert_eq!(dir("/run/../x", "ctr1"), None);
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
    fn a_link_at_any_level_from_device_info_dir_down_is_not_followed() {
        for (n, level) in ["", "cni", "cni/ctr1"].into_iter().enumerate() {
            let root = scratch(&format!("level{n}"));
            let devinfo = root.join("devinfo");
            let target = root.join("target");
            for tree in [&devinfo, &target] {
                fs::create_dir_all(tree.join("cni").join("ctr1")).unwrap();
                fs::write(
                    tree.join("cni").join("ctr1").join("net1-device.json"),
                    b"{}",
                )
                .unwrap();
            }
            let at = |tree: &Path| {
                if level.is_empty() {
                    tree.to_path_buf()
                } else {
                    tree.join(level)
                }
            };
            let (link, real) = (at(&devinfo), at(&target));
            fs::rename(&link, root.join("moved")).unwrap();
            std::os::unix::fs::symlink(&real, &link).unwrap();
            let dir = devinfo.join("cni").join("ctr1");

            let err = remove_directory(&dir).unwrap_err();

            assert!(err.to_string().contains("is a link"), "{level}: {err}");
            let kept = target.join("cni").join("ctr1").join("net1-device.json");
            assert_eq!(fs::read(&kept).unwrap(), b"{}", "{level}");
            assert!(fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            fs::remove_dir_all(&root).unwrap();
        }
    }

    #[test]
    fn a_level_that_is_a_file_or_not_this_users_is_refused() {
        let root = scratch("owner");
        let dir = root.join("cni").join("ctr1");
        fs::write(dir.join("net1-device.json"), b"{}").unwrap();
        if own_uid().unwrap() == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            let err = remove_directory(&dir).unwrap_err();
            assert!(
                err.to_string().contains("not a directory of braid's user"),
                "{err}"
            );
            assert!(dir.join("net1-device.json").exists());
        }
        fs::remove_dir_all(root.join("cni")).unwrap();
        fs::write(root.join("cni"), b"").unwrap();
        let err = remove_directory(&dir).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
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
