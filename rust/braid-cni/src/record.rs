//! The attachment record (`docs/attachment-record.md`): decoding what the shim replays for DEL.
