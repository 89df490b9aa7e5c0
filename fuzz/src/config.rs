//! Network configuration, conf and conflist (`braid_cni::config`, libcni's
//! `NetworkConfFromBytes` and `ConfFromBytes`): refusals are code 6 (not JSON) or 7 (invalid),
//! a conf up-converts to a valid list holding it verbatim, and appending keeps what was there.
use braid_cni::{codes, config};
use serde_json::Value;

use crate::{assert_code, json};

const REFUSED: &[u32] = &[codes::DECODE_FAILURE, codes::INVALID_CONFIG];
const PLUGIN: &[u8] = br#"{"type":"fuzz-appended","x":1.50}"#;

/// Checks summarize, `conf_to_list` and `append_plugins` on `data`.
pub fn check(data: &[u8]) {
    let summary = match config::summarize(data) {
        Ok(summary) => Some(json(&summary)),
        Err(err) => {
            assert_code(&err, REFUSED, "summarize");
            None
        }
    };
    if let Some(summary) = &summary {
        appended(data, summary);
    }
    match config::conf_to_list(data) {
        Ok(list) => {
            let listed = config::summarize(&list).expect("an up-converted conf is a valid list");
            let listed = json(&listed);
            assert_eq!(listed["plugins"].as_array().map(Vec::len), Some(1));
            assert_eq!(
                json(&list)["plugins"][0],
                json(data),
                "the conf is not kept verbatim"
            );
        }
        Err(err) => assert_code(&err, REFUSED, "conf_to_list"),
    }
}

/// A valid list with nothing appended is the same document; with one plugin appended it has
/// one plugin more and the same other keys.
fn appended(data: &[u8], summary: &Value) {
    let same = config::append_plugins(data, &[]).expect("appending nothing to a valid list");
    let had_plugins = summary["hasPlugins"] == Value::Bool(true);
    if had_plugins {
        assert_eq!(
            json(&same),
            json(data),
            "appending nothing changed the list"
        );
    }
    let Ok(more) = config::append_plugins(data, &[PLUGIN]) else {
        panic!("appending a valid plugin to a valid list failed");
    };
    let after = json(&config::summarize(&more).expect("the appended list is valid"));
    let count = |s: &Value| s["plugins"].as_array().map_or(0, Vec::len);
    assert_eq!(count(&after), count(summary) + 1);
    for key in [
        "name",
        "cniVersion",
        "cniVersions",
        "effectiveVersion",
        "disableCheck",
    ] {
        assert_eq!(after[key], summary[key], "appending changed `{key}`");
    }
}
