//! Property tests: no input makes the configuration model panic, and its outputs keep their
//! promises (libcni's `libcni/conf.go` rules).

use braid_cni::codes;
use braid_cni::config::{append_plugins, conf_to_list, summarize};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// JSON values whose object keys are mostly the ones the validator reads.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("name".to_owned()),
        Just("type".to_owned()),
        Just("plugins".to_owned()),
        Just("cniVersion".to_owned()),
        Just("cniVersions".to_owned()),
        Just("capabilities".to_owned()),
        Just("ipam".to_owned()),
        Just("disableCheck".to_owned()),
        Just("loadOnlyInlinedPlugins".to_owned()),
        "[a-z]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just("true"),
            Just("FALSE"),
            Just("1.1.0"),
            Just("0.4"),
            Just("bridge"),
            Just("")
        ]
        .prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6).prop_map(|entries| Value::Object(
                entries.into_iter().collect::<Map<String, Value>>()
            )),
        ]
    })
}

fn is_config_error(code: u32) -> bool {
    code == codes::DECODE_FAILURE || code == codes::INVALID_CONFIG
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..64)) {
        for outcome in [summarize(&data), conf_to_list(&data), append_plugins(&data, &[&data])] {
            if let Err(err) = outcome {
                prop_assert!(is_config_error(err.code), "{err}");
            }
        }
    }

    #[test]
    fn summaries_have_exactly_the_documented_keys(value in json_value()) {
        let data = serde_json::to_vec(&value).unwrap();
        match summarize(&data) {
            Ok(out) => {
                let summary: Value = serde_json::from_slice(&out).unwrap();
                let keys: Vec<&str> = summary.as_object().unwrap().keys().map(String::as_str).collect();
                prop_assert_eq!(keys, vec![
                    "name", "cniVersion", "cniVersions", "effectiveVersion", "disableCheck",
                    "disableGC", "loadOnlyInlinedPlugins", "hasPlugins", "plugins",
                ]);
            }
            Err(err) => prop_assert_eq!(err.code, codes::INVALID_CONFIG, "{}", err),
        }
    }

    #[test]
    fn an_up_converted_conf_is_a_valid_list_holding_it(value in json_value()) {
        let data = serde_json::to_vec(&value).unwrap();
        if let Ok(out) = conf_to_list(&data) {
            let list: Value = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(&list["plugins"][0], &value);
            prop_assert!(summarize(&out).is_ok(), "{}", String::from_utf8_lossy(&out));
        }
    }

    #[test]
    fn appending_adds_exactly_the_given_plugins(list in json_value(), plugin in json_value()) {
        let list_bytes = serde_json::to_vec(&list).unwrap();
        let plugin_bytes = serde_json::to_vec(&plugin).unwrap();
        if let Ok(out) = append_plugins(&list_bytes, &[&plugin_bytes, &plugin_bytes]) {
            let before = list.get("plugins").and_then(Value::as_array).map_or(0, Vec::len);
            let after: Value = serde_json::from_slice(&out).unwrap();
            let plugins = after["plugins"].as_array().unwrap();
            prop_assert_eq!(plugins.len(), before + 2);
            prop_assert_eq!(&plugins[before], &plugin);
        }
    }
}
