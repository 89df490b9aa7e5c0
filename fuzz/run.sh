#!/usr/bin/env bash
# braid's fuzzing (docs/fuzzing.md): builds the Rust targets on the stable toolchain with
# libFuzzer's coverage instrumentation and runs every target, Rust and Python (atheris), on
# its committed corpus, seeded and bounded. Fails, printing the input, on any crash, failed
# property, hang (-timeout) or runaway memory (-rss_limit_mb).
#
#   fuzz/run.sh [TARGET...]        every target, or the named ones (names: fuzz/run.sh --list)
#   FUZZ_RUNS=N FUZZ_SECONDS=S     the bound of each target (defaults: 300000 inputs for a
#                                  Rust target, 30000 for a Python one; at most 30 s each)
#   FUZZ_MERGE=1                   minimise new inputs into the committed corpus afterwards
#   fuzz/run.sh --reseed [TARGET...]  rebuild the corpus: the seeds of fuzz/seed_corpus.py,
#                                  minimised (libFuzzer -merge), then fuzz as above
set -euo pipefail
cd "$(dirname "$0")/.."

RUST_TARGETS=(cni_config cni_result record wire cni_args devinfo netlink)
PY_TARGETS=(annotations daemon_protocol cni_args_py nad_manifest k8s_objects network_status kubeconfig device_info podresources dra)
SECONDS_EACH=${FUZZ_SECONDS:-30}
PY=${PY:-.venv/bin/python}
# libFuzzer's -merge re-runs the target by its own name: the Python targets find the
# virtualenv's python3 by their #! line.
export PATH="$PWD/.venv/bin:$PATH"
HOST=$(rustc -vV | sed -n 's/^host: //p')
OUT=target/fuzz
BIN=$OUT/$HOST/release
# The files the Python targets write their inputs to (fuzz/python/fuzz_harness.py): on tmpfs
# where there is one, removed at the end.
SCRATCH_BASE=$PWD/$OUT
[[ -d /dev/shm && -w /dev/shm ]] && SCRATCH_BASE=/dev/shm
export BRAID_FUZZ_SCRATCH=$SCRATCH_BASE/braid-fuzz-run-$$
trap 'rm -rf "$BRAID_FUZZ_SCRATCH"' EXIT

if [[ ${1:-} == --list ]]; then
  printf '%s\n' "${RUST_TARGETS[@]}" "${PY_TARGETS[@]}"
  exit 0
fi
RESEED=0
if [[ ${1:-} == --reseed ]]; then
  RESEED=1
  shift
fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${RUST_TARGETS[@]}" "${PY_TARGETS[@]}")

build_rust() {
  # cargo-fuzz's instrumentation without a sanitizer: stable flags only. --target keeps it
  # off build scripts and proc-macros.
  local flags=(--cfg fuzzing -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    -Cdebug-assertions -Coverflow-checks)
  RUSTFLAGS="${flags[*]}" cargo build --locked --release --quiet \
    --manifest-path fuzz/Cargo.toml --target "$HOST" --target-dir "$OUT" --bins
}

ensure_atheris() {
  "$PY" -c 'import atheris' 2>/dev/null || "$PY" -m pip install -q "atheris>=2.3"
}

run_one() {
  local target=$1 cmd runs
  if [[ " ${RUST_TARGETS[*]} " == *" $target "* ]]; then
    cmd=("$BIN/$target")
    runs=${FUZZ_RUNS:-300000}
  elif [[ " ${PY_TARGETS[*]} " == *" $target "* ]]; then
    cmd=("$PY" "fuzz/python/fuzz_$target.py")
    runs=${FUZZ_RUNS:-30000}
  else
    echo "fuzz/run.sh: unknown target $target (fuzz/run.sh --list)" >&2
    return 2
  fi
  local work=$OUT/work/$target artifacts=$OUT/artifacts/$target/ log=$OUT/logs/$target.log
  rm -rf "$work" "$artifacts"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  if [[ $RESEED == 1 ]]; then
    rm -rf "fuzz/corpus/$target"
    mkdir -p "fuzz/corpus/$target"
    "${cmd[@]}" -merge=1 "fuzz/corpus/$target" "$OUT/seeds/$target" >"$log" 2>&1
  fi
  echo "fuzz: $target ($runs inputs or ${SECONDS_EACH}s)"
  if ! "${cmd[@]}" -seed=1 -runs="$runs" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "$work" "fuzz/corpus/$target" >"$log" 2>&1; then
    echo "FAIL: $target; its output ends:" >&2
    tail -n 40 "$log" >&2
    for found in "$artifacts"*; do
      [[ -e $found ]] || continue
      echo "--- input $found (reproduce: ${cmd[*]} $found):" >&2
      od -A d -c "$found" | head -n 40 >&2
    done
    return 1
  fi
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
  if [[ ${FUZZ_MERGE:-0} == 1 ]]; then
    "${cmd[@]}" -merge=1 "fuzz/corpus/$target" "$work" >>"$log" 2>&1
  fi
}

for target in "${targets[@]}"; do
  if [[ " ${RUST_TARGETS[*]} " == *" $target "* ]]; then
    build_rust
    break
  fi
done
for target in "${targets[@]}"; do
  [[ " ${PY_TARGETS[*]} " == *" $target "* ]] && { ensure_atheris; break; }
done
[[ $RESEED == 0 ]] || "$PY" fuzz/seed_corpus.py "$OUT/seeds"
failed=0
for target in "${targets[@]}"; do
  run_one "$target" || failed=1
done
if [[ $failed == 1 ]]; then
  echo "fuzz: FAILED" >&2
  exit 1
fi
echo "fuzz: every target passed"
