//! Plugin lookup (CNI spec, "Parameters": `CNI_PATH`): a plugin type is a plain file name, and
//! the plugin is the first regular file of that name, in the order of the directories, that
//! has an execute bit. A file of that name without one is no plugin: the lookup stops there
//! and says so (code 103), rather than run a file of the same name further on that the operator
//! did not mean.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use braid_cni::{codes, CniError};

/// A plugin found: the index of its directory, its path and the identity of the file (device,
/// inode, modification time in nanoseconds, size), which a VERSION cache keys on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub index: usize,
    pub path: PathBuf,
    pub identity: (u64, u64, i128, u64),
}

/// Whether `plugin_type` is a plain file name, which can name nothing but a file inside a
/// plugin directory: not empty, not `.` or `..`, without `/` or NUL. Every other character is
/// part of a file name on Linux (`\` and `a..b` included). The one rule of plugin types:
/// `braid.nad.syntax` asks it through `braid._native`.
pub fn is_plain_name(plugin_type: &str) -> bool {
    !matches!(plugin_type, "" | "." | "..") && !plugin_type.contains(['/', '\0'])
}

/// The plugin types braid never runs as a delegate: its own executables (the `braid` front,
/// the full shim `braid-full`, `braid-thin`) and the known meta-plugins (Multus thin `multus`,
/// thick `multus-shim`). A meta-plugin delegates again with configuration of its own: run as a
/// delegate, it takes its trusted paths from a tenant's NAD and runs whatever they name, as
/// root. Types are file names, so the comparison is exact.
pub const META_PLUGIN_TYPES: [&str; 5] =
    ["braid", "braid-full", "braid-thin", "multus", "multus-shim"];

/// Whether `plugin_type` is one braid never delegates to ([`META_PLUGIN_TYPES`]).
pub fn is_meta_plugin(plugin_type: &str) -> bool {
    META_PLUGIN_TYPES.contains(&plugin_type)
}

/// Code 7 for a delegate of a type braid never runs; `source` says where it came from.
pub fn meta_plugin_refused(plugin_type: &str, source: &str) -> CniError {
    CniError::config(format!(
        "{source}: plugin type {plugin_type:?} is braid or another meta-plugin, which is never \
         a delegate (one of {META_PLUGIN_TYPES:?}); refused"
    ))
}

/// Code 7 for a plugin type that is not a plain file name.
pub fn not_plain(plugin_type: &str) -> CniError {
    CniError::config(format!(
        "plugin type {plugin_type:?} is not a plain file name; a plugin type must name an \
         executable inside CNI_PATH"
    ))
}

/// The directories plugins are looked for in, in order: `binDir`, then the entries of the
/// runtime's `CNI_PATH`, empty and repeated entries dropped. The engine, the shim's DEL replay,
/// `braidctl attach` and `braidctl doctor` all search these.
pub fn search_dirs(bin_dir: &str, cni_path: &str) -> Vec<String> {
    crate::delegates::unique_dirs(std::iter::once(bin_dir).chain(cni_path.split(':')))
}

/// Finds `plugin_type` in `dirs`. `seen`, when given, holds for each directory the path at
/// which this process reaches that directory's `plugin_type` (the node's root seen from a
/// container); the path returned is always the one under `dirs`.
pub fn find(
    plugin_type: &str,
    dirs: &[String],
    seen: Option<&[String]>,
) -> Result<Found, CniError> {
    if !is_plain_name(plugin_type) {
        return Err(not_plain(plugin_type));
    }
    for (index, dir) in dirs.iter().enumerate() {
        let path = Path::new(dir).join(plugin_type);
        let looked_at = match seen.and_then(|seen| seen.get(index)) {
            Some(local) => PathBuf::from(local),
            None => path.clone(),
        };
        let Ok(meta) = fs::metadata(&looked_at) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        if meta.mode() & 0o111 == 0 {
            return Err(CniError::new(
                codes::PLUGIN_NOT_FOUND,
                format!(
                    "plugin {} is not executable; fix its permissions (chmod +x)",
                    path.display()
                ),
            ));
        }
        let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        return Ok(Found {
            index,
            path,
            identity: (meta.dev(), meta.ino(), mtime, meta.size()),
        });
    }
    Err(CniError::new(
        codes::PLUGIN_NOT_FOUND,
        format!("failed to find plugin {plugin_type:?} in path {dirs:?}"),
    )
    .with_details("set CNI_PATH to the directories holding the CNI plugins"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("braid-lookup-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("a")).unwrap();
        fs::create_dir_all(dir.join("b")).unwrap();
        dir
    }

    fn plugin(path: &Path, mode: u32) {
        fs::write(path, b"#!/bin/sh\n").unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn meta_plugins_are_recognised_exactly() {
        for meta in META_PLUGIN_TYPES {
            assert!(is_meta_plugin(meta), "{meta}");
            let err = meta_plugin_refused(meta, "NAD ns/x");
            assert_eq!(err.code, codes::INVALID_CONFIG);
            assert!(err.msg.starts_with("NAD ns/x: plugin type"), "{err}");
            assert!(err.msg.contains(&format!("{meta:?}")), "{err}");
        }
        for plain in [
            "bridge", "macvlan", "Braid", "braid ", "braidx", "multus2", "", "thin",
        ] {
            assert!(!is_meta_plugin(plain), "{plain:?}");
        }
    }

    #[test]
    fn names_that_could_leave_the_directories_are_refused() {
        for bad in ["", ".", "..", "a/b", "../x", "/", "a\0b"] {
            assert!(!is_plain_name(bad), "{bad:?}");
            let err = find(bad, &["/usr/lib/cni".into()], None).unwrap_err();
            assert_eq!(err.code, codes::INVALID_CONFIG, "{bad:?}");
        }
        // File names all the same: nothing in them leaves the directory.
        for plain in ["x..y", "..a", "a.", "a\\b", "br idge", "\u{e9}"] {
            assert!(is_plain_name(plain), "{plain:?}");
        }
    }

    #[test]
    fn the_first_executable_regular_file_is_the_plugin() {
        let dir = scratch("first");
        let dirs = vec![
            dir.join("a").display().to_string(),
            dir.join("b").display().to_string(),
        ];
        fs::create_dir(dir.join("a").join("p")).unwrap(); // a directory is passed over
        plugin(&dir.join("b").join("p"), 0o755);
        let found = find("p", &dirs, None).unwrap();
        assert_eq!((found.index, found.path), (1, dir.join("b").join("p")));
        let err = find("q", &dirs, None).unwrap_err();
        assert_eq!(err.code, codes::PLUGIN_NOT_FOUND);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_without_an_execute_bit_is_no_plugin() {
        let dir = scratch("noexec");
        let dirs = vec![
            dir.join("a").display().to_string(),
            dir.join("b").display().to_string(),
        ];
        plugin(&dir.join("a").join("p"), 0o644);
        plugin(&dir.join("b").join("p"), 0o755);
        let err = find("p", &dirs, None).unwrap_err();
        assert_eq!(err.code, codes::PLUGIN_NOT_FOUND);
        assert!(err.msg.contains("is not executable"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn seen_paths_are_looked_at_and_the_node_path_returned() {
        let dir = scratch("seen");
        plugin(&dir.join("a").join("p"), 0o755);
        let seen = vec![dir.join("a").join("p").display().to_string()];
        let found = find("p", &["/opt/cni/bin".into()], Some(&seen)).unwrap();
        assert_eq!(found.path, Path::new("/opt/cni/bin/p"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn search_dirs_are_bin_dir_then_cni_path_without_empty_or_repeated_entries() {
        assert_eq!(
            search_dirs("/opt/cni/bin", ":/usr/lib/cni::/opt/cni/bin:/x"),
            ["/opt/cni/bin", "/usr/lib/cni", "/x"]
        );
        assert_eq!(search_dirs("", ""), Vec::<String>::new());
    }
}
