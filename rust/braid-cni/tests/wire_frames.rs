//! The shim ↔ daemon protocol against the golden frames of `tests/fixtures/protocol/`, which
//! the Python daemon's tests read too (`docs/protocol.md`).

use std::fs;
use std::path::{Path, PathBuf};

use braid_cni::codes;
use braid_cni::wire::{
    body_length, decode_cni_response, decode_health_response, decode_request, encode_cni_response,
    encode_request, frame, unframe, CniEnv, CniResponse, Request, MAX_FRAME_BYTES,
};
use serde_json::Value;

fn golden(name: &str) -> Vec<u8> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/protocol");
    fs::read(dir.join(name)).expect("golden frame")
}

fn json(data: &[u8]) -> Value {
    serde_json::from_slice(data).expect("JSON")
}

fn golden_env() -> CniEnv {
    CniEnv {
        command: "ADD".into(),
        container_id: "ctr1".into(),
        netns: "/run/netns/pod1".into(),
        ifname: "eth0".into(),
        args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0".into(),
        path: "/opt/cni/bin:/usr/lib/cni".into(),
    }
}

const GOLDEN_STDIN: &[u8] = br#"{"cniVersion":"1.0.0","name":"braid","type":"braid"}"#;
const GOLDEN_STDOUT: &[u8] = br#"{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/16"}]}"#;

#[test]
fn add_request_encodes_as_the_golden_frame() {
    let request = Request::Cni {
        env: golden_env(),
        stdin: GOLDEN_STDIN.to_vec(),
    };
    let body = encode_request(&request);
    assert_eq!(json(&body), json(&golden("add-request.json")));
    let keys: Vec<String> = json(&body).as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["protocol", "kind", "env", "stdin"]);
}

#[test]
fn add_request_golden_decodes() {
    let decoded = decode_request(&golden("add-request.json")).unwrap();
    assert_eq!(
        decoded,
        Request::Cni {
            env: golden_env(),
            stdin: GOLDEN_STDIN.to_vec()
        }
    );
}

#[test]
fn add_response_golden_decodes_and_encodes() {
    let response = decode_cni_response(&golden("add-response.json")).unwrap();
    let expected = CniResponse {
        exit_code: 0,
        stdout: GOLDEN_STDOUT.to_vec(),
    };
    assert_eq!(response, expected);
    assert_eq!(
        json(&encode_cni_response(&expected)),
        json(&golden("add-response.json"))
    );
}

#[test]
fn health_frames_match_the_golden_ones() {
    assert_eq!(
        json(&encode_request(&Request::Health)),
        json(&golden("health-request.json"))
    );
    assert_eq!(
        decode_request(&golden("health-request.json")).unwrap(),
        Request::Health
    );
    assert!(decode_health_response(&golden("health-response.json")).unwrap());
    assert!(!decode_health_response(br#"{"protocol": 1, "ready": false}"#).unwrap());
}

#[test]
fn frames_carry_a_big_endian_length() {
    let body = golden("add-request.json");
    let framed = frame(&body).unwrap();
    let length = u32::try_from(body.len()).unwrap().to_be_bytes();
    assert_eq!(framed[..4], length);
    assert_eq!(unframe(&framed).unwrap(), &body[..]);
    assert_eq!(body_length(length).unwrap(), body.len());
}

#[test]
fn oversized_and_truncated_frames_are_refused() {
    let limit = u32::try_from(MAX_FRAME_BYTES).unwrap();
    assert_eq!(body_length(limit.to_be_bytes()).unwrap(), MAX_FRAME_BYTES);
    let err = body_length((limit + 1).to_be_bytes()).unwrap_err();
    assert!(err.msg.contains("exceeds the limit"), "{err}");
    assert!(frame(&vec![b' '; MAX_FRAME_BYTES + 1]).is_err());
    assert!(unframe(&[0, 0]).is_err());
    assert!(unframe(&[0, 0, 0, 5, b'{', b'}']).is_err());
}

#[test]
fn arbitrary_bytes_survive_base64() {
    let stdin: Vec<u8> = (0..=255).collect();
    let request = Request::Cni {
        env: CniEnv::default(),
        stdin: stdin.clone(),
    };
    let decoded = decode_request(&encode_request(&request)).unwrap();
    assert_eq!(decoded, request);
    let response = CniResponse {
        exit_code: 7,
        stdout: stdin,
    };
    assert_eq!(
        decode_cni_response(&encode_cni_response(&response)).unwrap(),
        response
    );
}

#[test]
fn newer_requests_ask_for_an_upgrade() {
    let err = decode_request(br#"{"protocol": 2, "kind": "health"}"#).unwrap_err();
    assert_eq!(err.code, codes::TRY_AGAIN_LATER);
    assert!(err.msg.contains("upgrade the daemon"), "{err}");
}

#[test]
fn malformed_messages_are_code_4() {
    let cases: [&[u8]; 8] = [
        b"not json",
        b"[1]",
        br#"{"kind": "health"}"#,
        br#"{"protocol": 1, "kind": "nope"}"#,
        br#"{"protocol": 1, "kind": "cni", "env": {}, "stdin": "%%%"}"#,
        br#"{"protocol": 1, "kind": "cni", "env": {"CNI_COMMAND": 3}, "stdin": ""}"#,
        br#"{"protocol": 1, "exitCode": 300, "stdout": ""}"#,
        br#"{"protocol": 1, "exitCode": 0}"#,
    ];
    for case in cases {
        let err = decode_request(case)
            .err()
            .or_else(|| decode_cni_response(case).err())
            .expect("refused");
        assert_eq!(err.code, codes::INVALID_ENVIRONMENT, "{err}");
    }
    assert!(decode_cni_response(br#"{"protocol": 1, "exitCode": 300, "stdout": ""}"#).is_err());
    assert!(decode_cni_response(br#"{"protocol": 1, "exitCode": 0}"#).is_err());
}

#[test]
fn unknown_keys_are_ignored_and_missing_env_is_empty() {
    let body =
        br#"{"protocol": 1, "kind": "cni", "env": {"CNI_COMMAND": "DEL"}, "stdin": "", "x": 1}"#;
    let Request::Cni { env, stdin } = decode_request(body).unwrap() else {
        panic!("not a CNI request");
    };
    assert_eq!(env.command, "DEL");
    assert_eq!(env.netns, "");
    assert!(stdin.is_empty());
    let response =
        decode_cni_response(br#"{"protocol": 1, "exitCode": 1, "stdout": "", "later": true}"#);
    assert_eq!(response.unwrap().exit_code, 1);
}

#[test]
fn env_is_read_through_the_lookup() {
    let env = CniEnv::from_lookup(|name| (name == "CNI_IFNAME").then(|| "net1".to_owned()));
    assert_eq!(env.ifname, "net1");
    assert_eq!(env.pairs()[3], ("CNI_IFNAME", "net1"));
    assert_eq!(env.pairs()[0], ("CNI_COMMAND", ""));
}
