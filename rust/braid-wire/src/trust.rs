//! Where the shim's trusted paths come from (`docs/configuration.md`, "The node file").
//!
//! `daemonSocketDir`, `cniDir`, `binDir` and `readinessindicatorfile` decide which daemon the
//! shim talks to, which records a DEL replays and which executables it runs, as root. Stdin is
//! no authority for them: a runtime passes the node's conflist, but a delegating plugin (or a
//! NAD naming braid as its delegate) passes whatever a tenant wrote. So:
//!
//! - the node file [`NODE_FILE_NAME`], beside the shim executable (what `braidctl install` and
//!   the daemon write there, root-owned, not writable by group or others), gives them when it
//!   exists, whatever stdin says;
//! - without it, a path stdin names is used only when every existing component of it (links
//!   followed) is owned by root and not writable by group or others; an ancestor that has the
//!   sticky bit (`/tmp`) may be writable, the last existing component never. Else code 7,
//!   naming the key and the path.
//!
//! The rule is pure here (the caller passes what `stat(2)` says), so the `braid` front, the
//! full shim and braid's Python (through `braid._native`) apply the same one.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

use crate::error::CniError;
use crate::settings::Settings;

/// The node file's name, in the directory of the shim executable.
pub const NODE_FILE_NAME: &str = "braid-node.json";
/// The largest node file read; a larger one is refused.
pub const MAX_NODE_FILE_BYTES: usize = 64 * 1024;

/// The keys the node file decides, with the shim's defaults.
pub const PATH_KEYS: [(&str, &str); 4] = [
    ("daemonSocketDir", "/run/braid"),
    ("cniDir", "/var/lib/cni/braid"),
    ("binDir", "/opt/cni/bin"),
    ("readinessindicatorfile", ""),
];

/// The owner and mode (`st_mode`, file type bits included) of a file, as `stat(2)` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub mode: u32,
}

const S_IFMT: u32 = 0o170_000;
const S_IFREG: u32 = 0o100_000;
const STICKY: u32 = 0o1000;
const GROUP_OR_OTHERS_WRITE: u32 = 0o022;

/// What the node file gave, or `None` when there is none; `Err` when it exists but cannot be
/// read (its text says why).
pub type NodeFile = Result<Option<(Vec<u8>, Owner)>, String>;

/// `settings` with its trusted paths from the node file when there is one, else checked as
/// stdin named them (see the module documentation). `stat` answers for a path what `stat(2)`
/// says, `None` when it does not exist (or cannot be reached).
pub fn trusted(
    mut settings: Settings,
    node: NodeFile,
    shown: &str,
    mut stat: impl FnMut(&str) -> Option<Owner>,
) -> Result<Settings, CniError> {
    match node {
        Err(why) => Err(CniError::config(format!(
            "braid's node file {shown} cannot be read: {why}"
        ))),
        Ok(Some((data, owner))) => {
            if let Some(why) = node_file_problem(owner) {
                return Err(CniError::config(format!(
                    "braid's node file {shown} {why}; refused"
                )));
            }
            apply_node(&mut settings, &data, shown)?;
            Ok(settings)
        }
        Ok(None) => {
            for (key, path) in [
                ("daemonSocketDir", &settings.socket_dir),
                ("cniDir", &settings.cni_dir),
                ("binDir", &settings.bin_dir),
                ("readinessindicatorfile", &settings.readiness_file),
            ] {
                if !path.is_empty() {
                    check_closed(key, path, &mut stat)?;
                }
            }
            Ok(settings)
        }
    }
}

/// Why a node file with this owner and mode is not to be trusted, if it is not.
pub fn node_file_problem(owner: Owner) -> Option<String> {
    if owner.mode & S_IFMT != S_IFREG {
        return Some(String::from("is not a regular file"));
    }
    closed_problem(owner, false)
}

fn closed_problem(owner: Owner, sticky_allowed: bool) -> Option<String> {
    if owner.uid != 0 {
        return Some(format!("is owned by uid {}, not root", owner.uid));
    }
    let open = owner.mode & GROUP_OR_OTHERS_WRITE != 0;
    if open && !(sticky_allowed && owner.mode & STICKY != 0) {
        return Some(format!(
            "is writable by group or others (mode {:o})",
            owner.mode & 0o7777
        ));
    }
    None
}

/// The node file's paths over `settings`' (a key it leaves out or sets to null or "" is the
/// default, as on stdin).
fn apply_node(settings: &mut Settings, data: &[u8], shown: &str) -> Result<(), CniError> {
    let bad = |why: &str| CniError::config(format!("braid's node file {shown}: {why}"));
    if data.len() > MAX_NODE_FILE_BYTES {
        return Err(bad("larger than 64 KiB"));
    }
    let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(data) else {
        return Err(bad("not a JSON object"));
    };
    let mut values: Vec<String> = Vec::new();
    for (key, default) in PATH_KEYS {
        let value = match doc.get(key) {
            None | Some(Value::Null) => default,
            Some(Value::String(text)) if text.is_empty() => default,
            Some(Value::String(text)) => text.as_str(),
            Some(_) => return Err(bad(&format!("key `{key}` must be a string"))),
        };
        if value.contains('\0') || !(value.is_empty() || value.starts_with('/')) {
            return Err(bad(&format!(
                "key `{key}` must be an absolute path without NUL bytes"
            )));
        }
        values.push(String::from(value));
    }
    let mut values = values.into_iter();
    let mut next = || values.next().unwrap_or_default();
    settings.socket_dir = next();
    settings.cni_dir = next();
    settings.bin_dir = next();
    settings.readiness_file = next();
    Ok(())
}

/// Code 7 unless every existing component of `path` is owned by root and closed to group and
/// others (a sticky ancestor excepted); `key` names where the path came from.
pub fn check_closed(
    key: &str,
    path: &str,
    stat: &mut impl FnMut(&str) -> Option<Owner>,
) -> Result<(), CniError> {
    let refuse = |why: &str| {
        CniError::config(format!(
            "braid configuration: key `{key}` names {path:?}, which {why}; without braid's node \
             file, a path on stdin must be owned by root and closed to group and others, every \
             directory above it too (run braidctl install to write the node file)"
        ))
    };
    if !path.starts_with('/') {
        return Err(refuse("is not an absolute path"));
    }
    if path.split('/').any(|part| part == "..") {
        return Err(refuse("has a `..` component"));
    }
    let mut found: Vec<(String, Owner)> = Vec::new();
    if let Some(root) = stat("/") {
        found.push((String::from("/"), root));
    }
    let mut prefix = String::new();
    for part in path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
    {
        prefix.push('/');
        prefix.push_str(part);
        match stat(&prefix) {
            Some(owner) => found.push((prefix.clone(), owner)),
            None => break,
        }
    }
    let last = found.len().saturating_sub(1);
    for (index, (at, owner)) in found.iter().enumerate() {
        if let Some(why) = closed_problem(*owner, index < last) {
            let which = if at.as_str() == path.trim_end_matches('/') {
                String::new()
            } else {
                format!("has {at:?}, which ")
            };
            return Err(refuse(&format!("{which}{why}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use crate::settings::parse;
    use alloc::collections::BTreeMap;

    const DIR: u32 = 0o040_000;
    const FILE: u32 = 0o100_000;

    /// A path, its owner's uid and its mode.
    type Entry = (&'static str, u32, u32);

    fn tree(entries: &[Entry]) -> BTreeMap<String, Owner> {
        entries
            .iter()
            .map(|&(path, uid, mode)| (String::from(path), Owner { uid, mode }))
            .collect()
    }

    fn check(entries: &[Entry], path: &str) -> Result<(), CniError> {
        let tree = tree(entries);
        check_closed("cniDir", path, &mut |p: &str| tree.get(p).copied())
    }

    #[test]
    fn closed_root_paths_pass_and_a_missing_tail_is_fine() {
        let node = [
            ("/", 0, DIR | 0o755),
            ("/var", 0, DIR | 0o755),
            ("/var/lib", 0, DIR | 0o700),
        ];
        assert_eq!(check(&node, "/var/lib"), Ok(()));
        assert_eq!(check(&node, "/var/lib/cni/braid"), Ok(()));
        assert_eq!(check(&node, "/var/lib/./"), Ok(()));
    }

    #[test]
    fn a_sticky_ancestor_may_be_open_but_not_the_last_existing_component() {
        let tmp = [
            ("/", 0, DIR | 0o755),
            ("/tmp", 0, DIR | 0o1777),
            ("/tmp/braid", 0, DIR | 0o700),
        ];
        assert_eq!(check(&tmp, "/tmp/braid/records"), Ok(()));
        let err = check(&tmp, "/tmp/other").unwrap_err();
        assert_eq!(err.code, codes::INVALID_CONFIG);
        assert!(err.msg.contains("has \"/tmp\", which is writable"), "{err}");
    }

    #[test]
    fn open_or_foreign_components_are_code_7_naming_key_and_path() {
        let cases: [(&[Entry], &str); 4] = [
            (&[("/", 0, DIR | 0o755), ("/x", 0, DIR | 0o777)], "/x"),
            (&[("/", 0, DIR | 0o755), ("/x", 1000, DIR | 0o700)], "/x/y"),
            (
                &[
                    ("/", 0, DIR | 0o755),
                    ("/x", 0, DIR | 0o1777),
                    ("/x/y", 0, DIR | 0o775),
                ],
                "/x/y/z",
            ),
            (&[("/", 0, DIR | 0o755), ("/x", 0, DIR | 0o757)], "/x/y"),
        ];
        for (entries, path) in cases {
            let err = check(entries, path).unwrap_err();
            assert_eq!(err.code, codes::INVALID_CONFIG, "{path}");
            assert!(err.msg.contains("key `cniDir`"), "{err}");
            assert!(err.msg.contains(&format!("{path:?}")), "{err}");
        }
        for path in ["relative/dir", "/var/../tmp"] {
            assert_eq!(check(&[], path).unwrap_err().code, codes::INVALID_CONFIG);
        }
    }

    fn stdin_settings() -> Settings {
        parse(br#"{"type": "braid", "cniDir": "/tenant", "binDir": "/tenant/bin"}"#).unwrap()
    }

    #[test]
    fn the_node_file_decides_whatever_stdin_says() {
        let owner = Owner {
            uid: 0,
            mode: FILE | 0o644,
        };
        let data = br#"{"cniDir": "/var/lib/cni/braid", "daemonSocketDir": "/run/b"}"#.to_vec();
        let nothing_looked_at = |p: &str| -> Option<Owner> { panic!("stat {p}") };
        let settings = trusted(
            stdin_settings(),
            Ok(Some((data, owner))),
            "n",
            nothing_looked_at,
        )
        .unwrap();
        assert_eq!(settings.cni_dir, "/var/lib/cni/braid");
        assert_eq!(settings.bin_dir, "/opt/cni/bin", "the default, not stdin's");
        assert_eq!(settings.socket_dir, "/run/b");
        assert_eq!(settings.readiness_file, "");
    }

    #[test]
    fn a_node_file_not_root_s_or_open_or_malformed_is_code_7() {
        let good = br#"{"cniDir": "/c"}"#.to_vec();
        let cases = [
            (
                good.clone(),
                Owner {
                    uid: 5,
                    mode: FILE | 0o644,
                },
            ),
            (
                good.clone(),
                Owner {
                    uid: 0,
                    mode: FILE | 0o666,
                },
            ),
            (
                good,
                Owner {
                    uid: 0,
                    mode: DIR | 0o755,
                },
            ),
            (
                br#"{"cniDir": 3}"#.to_vec(),
                Owner {
                    uid: 0,
                    mode: FILE | 0o644,
                },
            ),
            (
                br#"{"cniDir": "rel"}"#.to_vec(),
                Owner {
                    uid: 0,
                    mode: FILE | 0o644,
                },
            ),
            (
                b"[]".to_vec(),
                Owner {
                    uid: 0,
                    mode: FILE | 0o644,
                },
            ),
        ];
        for (data, owner) in cases {
            let err = trusted(stdin_settings(), Ok(Some((data, owner))), "n", |_| None);
            assert_eq!(err.unwrap_err().code, codes::INVALID_CONFIG, "{owner:?}");
        }
        let err = trusted(stdin_settings(), Err("a link".into()), "n", |_| None).unwrap_err();
        assert!(err.msg.contains("a link"), "{err}");
    }

    #[test]
    fn without_a_node_file_every_stdin_path_is_checked() {
        let open = tree(&[("/", 0, DIR | 0o755), ("/tenant", 1000, DIR | 0o777)]);
        let err = trusted(stdin_settings(), Ok(None), "n", |p: &str| {
            open.get(p).copied()
        })
        .unwrap_err();
        assert!(err.msg.contains("`daemonSocketDir`") || err.msg.contains("`cniDir`"));
        let closed = |_: &str| {
            Some(Owner {
                uid: 0,
                mode: DIR | 0o755,
            })
        };
        assert_eq!(
            trusted(stdin_settings(), Ok(None), "n", closed).unwrap(),
            stdin_settings()
        );
    }
}
