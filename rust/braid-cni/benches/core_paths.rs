//! Per-call cost of the two hot paths of every CNI call: converting a result between versions
//! (`result::convert`) and building a plugin's stdin (`inject::plugin_stdin`).
//!
//! Run with `cargo bench -p braid-cni`; the figures and the targets (< 20 µs per call) are in
//! `docs/performance.md`.
use braid_cni::inject::{plugin_stdin, StdinRequest};
use braid_cni::result::convert;

fn main() {
    divan::main();
}

// The payloads are shared with the Python benchmarks (`benches/payloads/`), so both sides measure
// the same inputs.
/// A dual-stack bridge result at 1.0.0, shaped like the output of Debian's plugins 1.1.1.
const RESULT_100: &[u8] = include_bytes!("../../../benches/payloads/result-1.0.0.json");
/// The same attachment as a 0.2.0 result.
const RESULT_020: &[u8] = include_bytes!("../../../benches/payloads/result-0.2.0.json");
/// bridge → tuning → portmap.
const NETWORK_LIST: &[u8] = include_bytes!("../../../benches/payloads/network-list.json");
const CAPABILITY_ARGS: &[u8] = include_bytes!("../../../benches/payloads/capability-args.json");

#[divan::bench(args = ["0.4.0", "0.3.1", "0.2.0", "1.0.0"])]
fn convert_from_1_0_0(to_version: &str) -> Vec<u8> {
    convert(divan::black_box(RESULT_100), to_version).expect("convertible")
}

#[divan::bench(args = ["1.0.0", "0.4.0"])]
fn convert_from_0_2_0(to_version: &str) -> Vec<u8> {
    convert(divan::black_box(RESULT_020), to_version).expect("convertible")
}

fn stdin_request(command: &str, index: usize) -> StdinRequest<'_> {
    StdinRequest {
        network_list: NETWORK_LIST,
        index,
        command,
        cni_version: "1.0.0",
        capability_args: Some(CAPABILITY_ARGS),
        prev_result: (index > 0 || command != "ADD").then_some(RESULT_100),
        valid_attachments: None,
        args_cni: None,
    }
}

#[divan::bench]
fn stdin_add_first_plugin() -> Vec<u8> {
    plugin_stdin(divan::black_box(&stdin_request("ADD", 0))).expect("stdin")
}

#[divan::bench]
fn stdin_add_portmap_with_prev_result() -> Vec<u8> {
    plugin_stdin(divan::black_box(&stdin_request("ADD", 2))).expect("stdin")
}

#[divan::bench]
fn stdin_del_with_cached_result() -> Vec<u8> {
    plugin_stdin(divan::black_box(&stdin_request("DEL", 0))).expect("stdin")
}
