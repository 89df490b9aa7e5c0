//! The shim ↔ daemon wire protocol (`docs/protocol.md`): frames and messages. Pure: encoding
//! and decoding only, no sockets.
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of one UTF-8 JSON object;
//! frames larger than [`MAX_FRAME_BYTES`] are refused. Readers ignore unknown keys.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::error::{codes, CniError, Result};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u64 = 1;
/// The largest frame body either side accepts.
pub const MAX_FRAME_BYTES: usize = 4 << 20;
/// The length prefix of every frame.
pub const HEADER_BYTES: usize = 4;
/// The socket's file name inside `daemonSocketDir`.
pub const SOCKET_NAME: &str = "braid.sock";

/// The six CNI variables exactly as the runtime set them (empty strings when unset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniEnv {
    /// `CNI_COMMAND`.
    pub command: String,
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_NETNS`.
    pub netns: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS`.
    pub args: String,
    /// `CNI_PATH`.
    pub path: String,
}

/// The variable names in the order the request carries them.
pub const CNI_VARIABLES: [&str; 6] = [
    "CNI_COMMAND",
    "CNI_CONTAINERID",
    "CNI_NETNS",
    "CNI_IFNAME",
    "CNI_ARGS",
    "CNI_PATH",
];

impl CniEnv {
    /// Reads the six variables through `lookup` (an unset variable is an empty string).
    pub fn from_lookup(mut lookup: impl FnMut(&str) -> Option<String>) -> Self {
        let mut get = |name: &str| lookup(name).unwrap_or_default();
        Self {
            command: get("CNI_COMMAND"),
            container_id: get("CNI_CONTAINERID"),
            netns: get("CNI_NETNS"),
            ifname: get("CNI_IFNAME"),
            args: get("CNI_ARGS"),
            path: get("CNI_PATH"),
        }
    }

    /// `(name, value)` of each variable, in [`CNI_VARIABLES`] order.
    pub fn pairs(&self) -> [(&'static str, &str); 6] {
        let values = [
            &self.command,
            &self.container_id,
            &self.netns,
            &self.ifname,
            &self.args,
            &self.path,
        ];
        let mut out = [("", ""); 6];
        for ((slot, name), value) in out.iter_mut().zip(CNI_VARIABLES).zip(values) {
            *slot = (name, value.as_str());
        }
        out
    }
}

/// A request from the shim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// One CNI call: the runtime's variables and the exact stdin bytes.
    Cni {
        /// The six CNI variables.
        env: CniEnv,
        /// The runtime's stdin, byte for byte.
        stdin: Vec<u8>,
    },
    /// A readiness probe.
    Health,
}

/// The daemon's answer to a CNI call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CniResponse {
    /// The exit status the shim exits with (0..=255).
    pub exit_code: u8,
    /// The exact bytes the shim prints.
    pub stdout: Vec<u8>,
}

/// Prefixes `body` with its length; a body over [`MAX_FRAME_BYTES`] is refused.
pub fn frame(body: &[u8]) -> Result<Vec<u8>> {
    let length = u32::try_from(body.len())
        .ok()
        .filter(|_| body.len() <= MAX_FRAME_BYTES)
        .ok_or_else(|| too_large(body.len()))?;
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(body);
    Ok(out)
}

/// The body length a frame header announces; over [`MAX_FRAME_BYTES`] is refused.
pub fn body_length(header: [u8; HEADER_BYTES]) -> Result<usize> {
    let length = usize::try_from(u32::from_be_bytes(header)).unwrap_or(usize::MAX);
    if length > MAX_FRAME_BYTES {
        return Err(too_large(length));
    }
    Ok(length)
}

/// The body of one complete frame (`data` must hold exactly one frame).
pub fn unframe(data: &[u8]) -> Result<&[u8]> {
    let (header, body) = data
        .split_first_chunk::<HEADER_BYTES>()
        .ok_or_else(|| malformed("a frame is shorter than its 4-byte length"))?;
    let length = body_length(*header)?;
    if body.len() != length {
        return Err(malformed(&format!(
            "a frame announces {length} bytes but holds {}",
            body.len()
        )));
    }
    Ok(body)
}

/// The JSON body of a request.
pub fn encode_request(request: &Request) -> Vec<u8> {
    let value = match request {
        Request::Cni { env, stdin } => {
            let env: Map<String, Value> = env
                .pairs()
                .iter()
                .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
                .collect();
            json!({"protocol": PROTOCOL_VERSION, "kind": "cni", "env": env,
                   "stdin": BASE64.encode(stdin)})
        }
        Request::Health => json!({"protocol": PROTOCOL_VERSION, "kind": "health"}),
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

/// Decodes a request body; a `protocol` newer than ours is code 11 ("upgrade the daemon").
pub fn decode_request(body: &[u8]) -> Result<Request> {
    let message = decode_message(body)?;
    let protocol = protocol_of(&message)?;
    if protocol > PROTOCOL_VERSION {
        return Err(CniError::new(
            codes::TRY_AGAIN_LATER,
            format!(
                "the request speaks protocol {protocol}, newer than this side's \
                 {PROTOCOL_VERSION}: upgrade the daemon"
            ),
        ));
    }
    match message.get("kind").and_then(Value::as_str) {
        Some("health") => Ok(Request::Health),
        Some("cni") => {
            let env = message
                .get("env")
                .and_then(Value::as_object)
                .ok_or_else(|| malformed("`env` must be an object"))?;
            let mut bad = None;
            let env = CniEnv::from_lookup(|name| match env.get(name) {
                None => None,
                Some(Value::String(text)) => Some(text.clone()),
                Some(_) => {
                    bad = Some(name.to_owned());
                    None
                }
            });
            if let Some(name) = bad {
                return Err(malformed(&format!("`env.{name}` must be a string")));
            }
            let stdin = base64_member(&message, "stdin")?;
            Ok(Request::Cni { env, stdin })
        }
        _ => Err(malformed("`kind` must be \"cni\" or \"health\"")),
    }
}

/// The JSON body of a response to a CNI call.
pub fn encode_cni_response(response: &CniResponse) -> Vec<u8> {
    let value = json!({"protocol": PROTOCOL_VERSION, "exitCode": response.exit_code,
                       "stdout": BASE64.encode(&response.stdout)});
    serde_json::to_vec(&value).unwrap_or_default()
}

/// Decodes the response to a CNI call.
pub fn decode_cni_response(body: &[u8]) -> Result<CniResponse> {
    let message = decode_message(body)?;
    protocol_of(&message)?;
    let exit_code = message
        .get("exitCode")
        .and_then(Value::as_u64)
        .and_then(|code| u8::try_from(code).ok())
        .ok_or_else(|| malformed("`exitCode` must be an integer from 0 to 255"))?;
    let stdout = base64_member(&message, "stdout")?;
    Ok(CniResponse { exit_code, stdout })
}

/// Decodes the response to a readiness probe: whether the daemon is ready.
pub fn decode_health_response(body: &[u8]) -> Result<bool> {
    let message = decode_message(body)?;
    protocol_of(&message)?;
    message
        .get("ready")
        .and_then(Value::as_bool)
        .ok_or_else(|| malformed("`ready` must be a boolean"))
}

fn decode_message(body: &[u8]) -> Result<Map<String, Value>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(message)) => Ok(message),
        Ok(_) => Err(malformed("the frame body is not a JSON object")),
        Err(err) => Err(malformed(&format!("the frame body is not JSON: {err}"))),
    }
}

fn protocol_of(message: &Map<String, Value>) -> Result<u64> {
    message
        .get("protocol")
        .and_then(Value::as_u64)
        .filter(|version| *version >= 1)
        .ok_or_else(|| malformed("`protocol` must be a positive integer"))
}

fn base64_member(message: &Map<String, Value>, key: &str) -> Result<Vec<u8>> {
    let text = message
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(&format!("`{key}` must be a base64 string")))?;
    BASE64
        .decode(text)
        .map_err(|err| malformed(&format!("`{key}` is not valid base64: {err}")))
}

fn malformed(why: &str) -> CniError {
    CniError::new(
        codes::INVALID_ENVIRONMENT,
        format!("malformed protocol message: {why}"),
    )
}

fn too_large(length: usize) -> CniError {
    CniError::new(
        codes::INVALID_ENVIRONMENT,
        format!("a protocol frame of {length} bytes exceeds the limit of {MAX_FRAME_BYTES} bytes"),
    )
}

/// The shim's code 11 when talking to the daemon failed at `what` (its own words: "sending
/// the request failed", ...), with the system's `details`.
pub fn talk_failed(what: &str, details: String) -> CniError {
    CniError::new(
        codes::TRY_AGAIN_LATER,
        format!("talking to the braid daemon failed: {what}"),
    )
    .with_details(details)
}

/// The shim's code 11 for a daemon answer that [`decode_cni_response`] refused.
pub fn not_protocol_one(err: &CniError) -> CniError {
    CniError::new(
        codes::TRY_AGAIN_LATER,
        format!("the braid daemon's answer is not protocol 1: {}", err.msg),
    )
}
