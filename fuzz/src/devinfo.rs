//! The device-information directory of a container (`braid_delegate::devinfo`): the DEL, and the
//! shim's replay of it without the daemon, removes the directory an attachment's capability
//! arguments name (`CNIDeviceInfoFile`) and the one under the configured `deviceInfoDir`. Both
//! are hostile text (a record on disk, braid's configuration), so whatever they name, the
//! directory taken is `<absolute dir>/cni/<container ID>`: no `.`, `..` or empty level, the
//! container ID its last level and a plain name, the file's own directory.
use std::ffi::OsStr;
use std::path::Path;

use braid_delegate::devinfo;
use serde_json::Value;

/// Checks [`devinfo::directory_of`] and [`devinfo::configured_directory`] on `data`: the
/// container ID up to the first NUL byte, then the capability arguments (also read as a
/// `deviceInfoDir`).
pub fn check(data: &[u8]) {
    let (id, args) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(id) = std::str::from_utf8(id) else {
        return;
    };
    if let Some(dir) = devinfo::directory_of(args, id) {
        check_dir(&dir, id);
        let args: Value = serde_json::from_slice(args).expect("directory_of parsed it");
        let file = args[devinfo::CAPABILITY].as_str().expect("a path");
        assert_eq!(
            Path::new(file).parent(),
            Some(dir.as_path()),
            "not the file's directory"
        );
    }
    let base = String::from_utf8_lossy(args);
    if let Some(dir) = devinfo::configured_directory(&base, id) {
        check_dir(&dir, id);
        let expected = format!("{}/cni/{id}", base.trim_end_matches('/'));
        assert_eq!(
            dir.to_str(),
            Some(expected.as_str()),
            "not under deviceInfoDir"
        );
    }
}

fn check_dir(dir: &Path, id: &str) {
    let text = dir.to_str().expect("taken from text");
    assert!(text.starts_with('/'), "{text}: not absolute");
    for part in text.split('/').skip(1) {
        assert!(!matches!(part, "" | "." | ".."), "{text}: level {part:?}");
    }
    assert!(
        !id.is_empty() && !id.contains('/'),
        "{id:?}: no plain container ID"
    );
    assert_eq!(
        dir.file_name(),
        Some(OsStr::new(id)),
        "{text}: not the container's"
    );
    let above = dir.parent().and_then(Path::file_name);
    assert_eq!(
        above,
        Some(OsStr::new("cni")),
        "{text}: not in a cni directory"
    );
}
