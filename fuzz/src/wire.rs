//! The shim ↔ daemon frames (`braid_wire::wire`, docs/protocol.md): every refusal is code 4
//! (code 11 for a newer protocol), a frame rebuilds byte for byte, and a decoded message
//! re-encodes to one that decodes the same.
use braid_wire::wire::{self, CniResponse, HEADER_BYTES, MAX_FRAME_BYTES};
use braid_wire::{codes, settings};

use crate::assert_code;

const MALFORMED: &[u32] = &[codes::INVALID_ENVIRONMENT];

/// Checks every decoder of the protocol on `data`, as a frame and as a body.
pub fn check(data: &[u8]) {
    frame(data);
    if let Some(header) = data.first_chunk::<HEADER_BYTES>() {
        let announced = u32::from_be_bytes(*header) as usize;
        match wire::body_length(*header) {
            Ok(length) => assert_eq!(length, announced),
            Err(err) => {
                assert_code(&err, MALFORMED, "body_length");
                assert!(announced > MAX_FRAME_BYTES);
            }
        }
    }
    request(data);
    match wire::decode_cni_response(data) {
        Ok(response) => {
            let again = wire::decode_cni_response(&wire::encode_cni_response(&response));
            assert_eq!(
                again.as_ref(),
                Ok(&response),
                "a CNI response does not round trip"
            );
        }
        Err(err) => assert_code(&err, MALFORMED, "decode_cni_response"),
    }
    if let Err(err) = wire::decode_health_response(data) {
        assert_code(&err, MALFORMED, "decode_health_response");
    }
    // The shim's reading of braid's own configuration from the runtime's stdin.
    if let Err(err) = settings::parse(data) {
        assert_code(
            &err,
            &[codes::DECODE_FAILURE, codes::INVALID_CONFIG],
            "settings",
        );
    }
    // Any exit code and stdout the daemon may send encode and decode unchanged.
    let response = CniResponse {
        exit_code: data.first().copied().unwrap_or(0),
        stdout: data.to_vec(),
    };
    let body = wire::encode_cni_response(&response);
    assert_eq!(wire::decode_cni_response(&body), Ok(response));
}

fn frame(data: &[u8]) {
    match wire::unframe(data) {
        Ok(body) => {
            assert_eq!(body, &data[HEADER_BYTES..]);
            assert_eq!(
                wire::frame(body).as_deref(),
                Ok(data),
                "a frame does not rebuild"
            );
        }
        Err(err) => assert_code(&err, MALFORMED, "unframe"),
    }
    if data.len() <= MAX_FRAME_BYTES {
        let framed = wire::frame(data).expect("a body within the limit frames");
        assert_eq!(wire::unframe(&framed), Ok(data));
    }
}

fn request(data: &[u8]) {
    match wire::decode_request(data) {
        Ok(request) => {
            let body = wire::encode_request(&request);
            assert_eq!(
                wire::decode_request(&body).as_ref(),
                Ok(&request),
                "a request does not round trip"
            );
        }
        Err(err) => assert_code(
            &err,
            &[codes::INVALID_ENVIRONMENT, codes::TRY_AGAIN_LATER],
            "decode_request",
        ),
    }
}
