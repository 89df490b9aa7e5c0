//! libFuzzer entry point: the properties are in `braid_fuzz::result`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| braid_fuzz::result::check(data));
