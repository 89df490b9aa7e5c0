//! The shim ↔ daemon wire protocol (`docs/protocol.md`): frames and messages. Pure: encoding
//! and decoding only, no sockets.
