//! libFuzzer entry point: the properties are in `braid_fuzz::config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| braid_fuzz::config::check(data));
