//! The identifiers of an attachment: libcni's rules for the container id, the network name and
//! the interface name (`pkg/utils`: `ValidateContainerID`, `ValidateNetworkName`,
//! `ValidateInterfaceName`), with two additions of braid's:
//!
//! - a container id names braid's files (`records/<id>.json`), and a file name holds at most
//!   255 bytes on Linux, so an id is at most [`MAX_CONTAINER_ID_BYTES`] bytes;
//! - an interface name may not hold `%`: the kernel takes such a name as a template
//!   (`eth%d` becomes `eth0`), so the interface would not have the name every later call
//!   (DEL, CHECK) asks for.
//!
//! Each function answers why a value is refused (`None`: accepted); the caller says what the
//! value was and picks the code (4 for the environment, 7 for a configuration).

use crate::error::{codes, CniError};

/// The longest container id: `<id>.json` must fit a 255-byte file name.
pub const MAX_CONTAINER_ID_BYTES: usize = 255 - ".json".len();
/// The longest interface name (the kernel's `IFNAMSIZ` less its terminating NUL).
pub const MAX_INTERFACE_NAME_BYTES: usize = 15;

/// libcni's `[a-zA-Z0-9][a-zA-Z0-9_.\-]*`.
fn is_identifier(value: &str) -> bool {
    let mut chars = value.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Whether `id` is too long to name a record. No ADD of such an id gets as far as writing its
/// record (it is refused first), so a DEL of it has nothing to tear down.
pub fn names_no_record(id: &str) -> bool {
    id.len() > MAX_CONTAINER_ID_BYTES
}

/// Why `id` cannot be a container id.
pub fn container_id_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        return Some("is empty".into());
    }
    if !is_identifier(id) {
        return Some(
            "may only hold letters, digits, '_', '.' and '-', and starts with a letter or digit"
                .into(),
        );
    }
    if names_no_record(id) {
        return Some(format!(
            "is {} bytes long; at most {MAX_CONTAINER_ID_BYTES} are accepted",
            id.len()
        ));
    }
    None
}

/// `CNI_CONTAINERID` of a `command` call checked: code 3 when it is missing, code 4 when it
/// cannot be a container id. A DEL of an id too long to name a record is accepted: no ADD of
/// it got as far as attaching anything, so there is nothing to tear down.
pub fn check_container_id(command: &str, id: &str) -> Result<(), CniError> {
    if id.is_empty() {
        return Err(CniError::new(
            codes::UNKNOWN_CONTAINER,
            format!("CNI_CONTAINERID is required for {command}"),
        ));
    }
    if command == "DEL" && names_no_record(id) {
        return Ok(());
    }
    match container_id_problem(id) {
        None => Ok(()),
        Some(problem) => Err(CniError::new(
            codes::INVALID_ENVIRONMENT,
            format!("CNI_CONTAINERID {id:?} {problem}"),
        )),
    }
}

/// Why `name` cannot be a network name.
pub fn network_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if is_identifier(name) {
        None
    } else {
        Some("may only hold letters, digits, '_', '.' and '-', and starts with a letter or digit")
    }
}

/// Why `name` cannot be an interface name.
pub fn interface_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.len() > MAX_INTERFACE_NAME_BYTES {
        Some("is longer than 15 bytes")
    } else if name == "." || name == ".." {
        Some("may not be '.' or '..'")
    } else if name
        .chars()
        .any(|c| matches!(c, '/' | ':' | '%') || c.is_whitespace())
    {
        Some("may not contain '/', ':', '%' or whitespace")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_follow_libcni_and_fit_a_file_name() {
        for good in ["abc-1_2.3", "A", "0.x"] {
            assert_eq!(container_id_problem(good), None, "{good}");
        }
        let longest = "a".repeat(MAX_CONTAINER_ID_BYTES);
        assert_eq!(container_id_problem(&longest), None);
        assert!(container_id_problem(&format!("{longest}b"))
            .unwrap()
            .contains("at most 250"));
        assert_eq!(container_id_problem("").as_deref(), Some("is empty"));
        for bad in ["../x", "a/b", "-a", "a b", ".a", "é", "a%d", "a\0"] {
            assert!(container_id_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn a_call_needs_a_container_id_that_names_files() {
        assert!(check_container_id("ADD", "abc-1_2.3").is_ok());
        let missing = check_container_id("CHECK", "").unwrap_err();
        assert_eq!(missing.code, codes::UNKNOWN_CONTAINER);
        assert_eq!(missing.msg, "CNI_CONTAINERID is required for CHECK");
        for bad in ["../x", "a/b", "-a", "a b"] {
            let err = check_container_id("DEL", bad).unwrap_err();
            assert_eq!(err.code, codes::INVALID_ENVIRONMENT, "{bad}");
        }
        let too_long = "a".repeat(MAX_CONTAINER_ID_BYTES + 1);
        assert!(check_container_id("DEL", &too_long).is_ok());
        let err = check_container_id("ADD", &too_long).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ENVIRONMENT);
    }

    #[test]
    fn network_names_follow_libcni() {
        assert_eq!(network_name_problem("braid-net_1.0"), None);
        for bad in ["", "../x", "a b", "-a", "_a", ".", "a/b", "net%"] {
            assert!(network_name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn interface_names_follow_the_kernel_and_refuse_templates() {
        for good in ["eth0", "net1", &"a".repeat(15), "éééééee"] {
            assert_eq!(interface_name_problem(good), None, "{good}");
        }
        for (bad, why) in [
            ("", "empty"),
            (&*"a".repeat(16), "longer"),
            ("éééééééé", "longer"),
            (".", "'.'"),
            ("..", "'..'"),
            ("eth/0", "'/'"),
            ("eth:0", "':'"),
            ("eth%d", "'%'"),
            ("%", "'%'"),
            ("eth 0", "whitespace"),
            ("eth\u{a0}0", "whitespace"),
        ] {
            let found = interface_name_problem(bad).unwrap_or_default();
            assert!(found.contains(why), "{bad:?}: {found}");
        }
    }
}
