//! libFuzzer entry point: the properties are in `braid_fuzz::devinfo`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| braid_fuzz::devinfo::check(data));
