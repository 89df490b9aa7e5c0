//! Spare record files (`docs/attachment-record.md`, "Spare files"): what a file under
//! `<cniDir>/spares/` holds, found the same way by the daemon's recovery
//! (`braid.engine.spares`, through `braid._native`) and by the shim's DEL replay. A spare is
//! [`SPARE_SIZE`] bytes of spaces, a record written over its beginning, or neither (a torn
//! write, a stranger's file); what to do with each is the caller's.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use braid_cni::{names, record};

/// The size of a spare file: a record written over one is at most this long.
pub const SPARE_SIZE: usize = 16 * 1024;
/// The name ending of the spare files the daemon makes.
pub const SPARE_SUFFIX: &str = ".spare";

/// What the bytes of a file under `spares/` hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Spaces only (none at all included): `size` of them.
    Blank { size: usize },
    /// A record naming `container_id` (a valid one), with the file's bytes.
    Record { container_id: String, data: Vec<u8> },
    /// Neither, and why.
    Foreign(String),
}

/// What `data` (a file's first bytes, at most [`SPARE_SIZE`] + 1 of them) holds.
pub fn classify(data: &[u8]) -> Held {
    if data.len() > SPARE_SIZE {
        return Held::Foreign(format!("larger than a spare file ({SPARE_SIZE} bytes)"));
    }
    if data.iter().all(|&byte| byte == b' ') {
        return Held::Blank { size: data.len() };
    }
    let Some(container_id) = record::container_of(data) else {
        return Held::Foreign("not a record: no JSON object naming its container".to_owned());
    };
    if names::container_id_problem(&container_id).is_some() {
        return Held::Foreign(format!(
            "container id {container_id:?} cannot name a record"
        ));
    }
    Held::Record {
        container_id,
        data: data.to_vec(),
    }
}

/// One regular file under `spares/`: its path, its name, and what it holds (or why it could
/// not be read).
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub name: String,
    pub held: io::Result<Held>,
}

/// Every regular file under the spare directory `dir`, in name order (none when `dir` is
/// missing). Links and other kinds of files are passed over, never followed.
pub fn discover(dir: &Path) -> io::Result<Vec<Found>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let path = entry.path();
        let held = read_head(&path).map(|data| classify(&data));
        found.push(Found {
            path,
            name: entry.file_name().to_string_lossy().into_owned(),
            held,
        });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The spare under `dir` that holds the record of `container_id`, with its bytes: the last in
/// name order when several do, the one the daemon's recovery leaves in place (it puts them
/// back in that order). Files that cannot be read are passed over.
pub fn find(dir: &Path, container_id: &str) -> Option<(PathBuf, Vec<u8>)> {
    discover(dir)
        .ok()?
        .into_iter()
        .rev()
        .find_map(|found| match found.held {
            Ok(Held::Record {
                container_id: id,
                data,
            }) if id == container_id => Some((found.path, data)),
            _ => None,
        })
}

/// A file's first [`SPARE_SIZE`] + 1 bytes, never through a link.
fn read_head(path: &Path) -> io::Result<Vec<u8>> {
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let mut data = Vec::with_capacity(SPARE_SIZE + 1);
    let limit = u64::try_from(SPARE_SIZE + 1).unwrap_or(u64::MAX);
    file.take(limit).read_to_end(&mut data)?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden() -> serde_json::Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/spares/held.json"
        );
        serde_json::from_slice(&fs::read(path).expect("golden spares")).expect("json")
    }

    /// The bytes a golden case describes: `text`, padded with spaces to `pad` bytes.
    pub(crate) fn bytes_of(case: &serde_json::Value) -> Vec<u8> {
        let mut data = case["text"].as_str().expect("text").as_bytes().to_vec();
        let pad = case["pad"]
            .as_u64()
            .map_or(0, |pad| usize::try_from(pad).expect("pad"));
        if data.len() < pad {
            data.resize(pad, b' ');
        }
        data
    }

    #[test]
    fn what_a_spare_holds_matches_the_golden_cases() {
        let golden = golden();
        assert_eq!(golden["spareSize"].as_u64(), Some(SPARE_SIZE as u64));
        let cases = golden["cases"].as_array().expect("cases");
        assert!(cases.len() > 5);
        for case in cases {
            let data = bytes_of(case);
            let (kind, value) = match classify(&data) {
                Held::Blank { size } => ("blank", serde_json::json!(size)),
                Held::Record { container_id, .. } => ("record", serde_json::json!(container_id)),
                Held::Foreign(why) => ("foreign", serde_json::json!(why)),
            };
            assert_eq!(kind, case["kind"], "{}", case["name"]);
            assert_eq!(value, case["value"], "{}", case["name"]);
        }
    }

    #[test]
    fn discovery_reads_regular_files_in_name_order_and_follows_no_link() {
        let dir = std::env::temp_dir().join(format!("braid-spares-{}", std::process::id()));
        fs::create_dir_all(dir.join("sub")).expect("dir");
        let record = |id: &str| format!(r#"{{"containerId":"{id}"}}"#).into_bytes();
        fs::write(dir.join("b.spare"), record("c1")).expect("b");
        fs::write(dir.join("a.spare"), record("c1")).expect("a");
        fs::write(dir.join("c.spare"), vec![b' '; SPARE_SIZE]).expect("c");
        fs::write(dir.join("outside"), record("c2")).expect("outside");
        std::os::unix::fs::symlink(dir.join("outside"), dir.join("d.spare")).expect("link");
        let found = discover(&dir).expect("discover");
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a.spare", "b.spare", "c.spare", "outside"]);
        assert_eq!(
            found[2].held.as_ref().ok(),
            Some(&Held::Blank { size: SPARE_SIZE })
        );
        let (path, data) = find(&dir, "c1").expect("found");
        assert_eq!(path, dir.join("b.spare"), "the last in name order");
        assert_eq!(data, record("c1"));
        assert_eq!(find(&dir, "c2").map(|f| f.0), Some(dir.join("outside")));
        assert!(find(&dir, "c3").is_none());
        assert!(discover(&dir.join("missing")).expect("missing").is_empty());
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
