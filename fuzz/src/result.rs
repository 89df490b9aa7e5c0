//! CNI results of every version from 0.1.0 to 1.1.0 and their conversion
//! (`braid_cni::result`): refusals carry the codes libcni's callers see (1, 6,
//! 100, 101), a parsed result is canonical (parsing it again changes nothing), a conversion
//! says the version it was asked for and re-parses unchanged as that version, and conversion
//! inside a family (0.1.0/0.2.0, 0.3.x/0.4.0, 1.x) is lossless both ways, as libcni's
//! converters are. Also the plugin answers around a result: VERSION output and error objects.
use braid_cni::{codes, result, version};

use crate::{assert_code, json};

const PARSE_REFUSED: &[u32] = &[
    codes::PLUGIN_FAILURE,
    codes::DECODE_FAILURE,
    codes::INCOMPATIBLE_VERSION,
];
const CONVERT_REFUSED: &[u32] = &[
    codes::DECODE_FAILURE,
    codes::INCOMPATIBLE_VERSION,
    codes::CONVERSION_REFUSED,
];
const FAMILIES: [&[&str]; 3] = [
    &["0.1.0", "0.2.0"],
    &["0.3.0", "0.3.1", "0.4.0"],
    &["1.0.0", "1.1.0"],
];

/// Checks parsing, conversion and the plugin's other answers on `data` (a plugin's stdout).
pub fn check(data: &[u8]) {
    others(data);
    // The first byte picks the configuration's version the plugin output is labelled with
    // when it names none, as libcni does (issue #895).
    let config_version = match data.first() {
        Some(byte) => version::ALL[usize::from(*byte) % version::ALL.len()],
        None => "",
    };
    let canonical = match result::parse_plugin_output(data, config_version) {
        Ok(canonical) => canonical,
        Err(err) => {
            assert_code(&err, PARSE_REFUSED, "parse_plugin_output");
            return converted_raw(data);
        }
    };
    let own = result::result_version(&canonical).expect("a parsed result has a known version");
    assert_eq!(
        result::parse_plugin_output(&canonical, config_version).as_ref(),
        Ok(&canonical),
        "a parsed result is not canonical"
    );
    for target in version::ALL {
        conversion(&canonical, &own, target);
    }
    converted_raw(data);
}

/// Converting the raw bytes either refuses with a code or yields a result of the target.
fn converted_raw(data: &[u8]) {
    for target in ["", "0.1.0", "0.4.0", "1.1.0", "2.0.0"] {
        match result::convert(data, target) {
            Ok(out) => {
                let labelled = if target.is_empty() { "0.1.0" } else { target };
                if out != data {
                    assert_eq!(result::result_version(&out).as_deref(), Ok(labelled));
                }
            }
            Err(err) => assert_code(&err, CONVERT_REFUSED, "convert"),
        }
    }
}

fn conversion(canonical: &[u8], own: &str, target: &str) {
    let out = match result::convert(canonical, target) {
        Ok(out) => out,
        Err(err) => {
            assert_code(
                &err,
                &[codes::CONVERSION_REFUSED],
                "convert of a valid result",
            );
            return;
        }
    };
    assert_eq!(result::result_version(&out).as_deref(), Ok(target));
    let reparsed = result::parse_plugin_output(&out, target).expect("a converted result parses");
    assert_eq!(
        json(&reparsed),
        json(&out),
        "a converted result is not canonical"
    );
    let same_family = FAMILIES
        .iter()
        .any(|family| family.contains(&own) && family.contains(&target));
    if same_family {
        let back = result::convert(&out, own).expect("converting back inside the family");
        assert_eq!(
            json(&back),
            json(canonical),
            "{own} -> {target} -> {own} is not lossless"
        );
    }
}

/// VERSION output and error objects: refusals with their codes, nothing else.
fn others(data: &[u8]) {
    match version::parse_version_output(data) {
        Ok(versions) => assert!(!versions.is_empty()),
        Err(err) => assert_code(&err, &[codes::DECODE_FAILURE], "parse_version_output"),
    }
    if let Err(err) = result::parse_error_object(data) {
        assert_code(&err, &[codes::PLUGIN_FAILURE], "parse_error_object");
    }
}
