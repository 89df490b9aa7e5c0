//! libFuzzer entry point: the properties are in `braid_fuzz::netlink`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| braid_fuzz::netlink::check(data));
