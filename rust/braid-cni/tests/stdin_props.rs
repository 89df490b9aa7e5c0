//! Property tests: no input makes `plugin_stdin` panic, and a stdin it builds always starts with
//! the plugin's own keys in their order.

use braid_cni::inject::{plugin_stdin, StdinRequest};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("type".to_owned()),
        Just("capabilities".to_owned()),
        Just("args".to_owned()),
        Just("cni".to_owned()),
        Just("cniVersion".to_owned()),
        Just("mac".to_owned()),
        Just("runtimeConfig".to_owned()),
        "[a-z]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![Just("1.1.0"), Just("0.3.1"), Just("tuning"), Just("")].prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..5).prop_map(|entries| Value::Object(
                entries.into_iter().collect::<Map<String, Value>>()
            )),
        ]
    })
}

fn command() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("ADD"),
        Just("DEL"),
        Just("CHECK"),
        Just("GC"),
        Just("STATUS"),
        Just("VERSION")
    ]
}

fn optional(value: Option<Value>) -> Option<Vec<u8>> {
    value.map(|v| serde_json::to_vec(&v).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_inputs_never_panic(
        plugin in json_value(),
        index in 0_usize..3,
        command in command(),
        version in prop_oneof![Just("1.1.0"), Just("0.3.1"), Just(""), Just("x")],
        capability_args in prop::option::of(json_value()),
        prev_result in prop::option::of(json_value()),
        valid_attachments in prop::option::of(json_value()),
        args_cni in prop::option::of(json_value()),
    ) {
        let list = serde_json::to_vec(&json!({"name": "net", "plugins": [plugin.clone()]})).unwrap();
        let (capability_args, prev_result) = (optional(capability_args), optional(prev_result));
        let (valid_attachments, args_cni) = (optional(valid_attachments), optional(args_cni));
        let req = StdinRequest {
            network_list: &list,
            index,
            command,
            cni_version: version,
            capability_args: capability_args.as_deref(),
            prev_result: prev_result.as_deref(),
            valid_attachments: valid_attachments.as_deref(),
            args_cni: args_cni.as_deref(),
        };
        if let Ok(out) = plugin_stdin(&req) {
            let stdin: Value = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(&stdin["cniVersion"], version);
            prop_assert_eq!(&stdin["name"], "net");
            let original: Vec<&String> = plugin.as_object().unwrap().keys().collect();
            let built: Vec<&String> = stdin.as_object().unwrap().keys().collect();
            prop_assert_eq!(&built[..original.len()], &original[..]);
        }
    }

    #[test]
    fn arbitrary_list_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..64), index in 0_usize..2) {
        let req = StdinRequest {
            network_list: &data,
            index,
            command: "ADD",
            cni_version: "1.1.0",
            capability_args: Some(&data),
            prev_result: Some(&data),
            valid_attachments: Some(&data),
            args_cni: Some(&data),
        };
        prop_assert!(plugin_stdin(&req).is_err());
    }
}
