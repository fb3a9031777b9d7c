#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# xdr/check.sh - everything `make check` runs for the wire-format codec:
#
#   1. cargo fmt --check
#   2. cargo clippy --all-targets, warnings denied; cargo doc, warnings denied
#   3. cargo test (known-answer vectors, property tests, negative tests)
#   4. kernel-compatibility build: the codec module tree compiled the way
#      the rpcrdma2 module includes it (#[path] from another crate root,
#      no_std, edition 2021, the kernel's rustc lint flags, -Dwarnings,
#      overflow checks on), then `nm` must find no reference to
#      core::panicking in the optimised object: no input can reach a panic
#   5. a bounded run of the fuzzer (examples/fuzz.rs)
#   6. (--bench) the benchmarks in quick mode
#
# Usage: xdr/check.sh [--fuzz-seconds N] [--no-fuzz] [--bench]
# Environment: FUZZ_SECONDS (default 20), FUZZ_SEED (default: time),
#   CARGO_BUILD_JOBS (default 1: the machine has two cores and is usually
#   building a kernel), KRUSTC (rustc for step 4; default /usr/bin/rustc,
#   the kernel's, when present, else rustc).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

fuzz_seconds=${FUZZ_SECONDS:-20}
do_fuzz=1
do_bench=0
while [ $# -gt 0 ]; do
	case "$1" in
	--fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
	--no-fuzz) do_fuzz=0; shift ;;
	--bench) do_bench=1; shift ;;
	*) echo "usage: $0 [--fuzz-seconds N] [--no-fuzz] [--bench]" >&2; exit 2 ;;
	esac
done
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

step() { printf '\n=== xdr: %s\n' "$*"; }

"$here/../tools/testing/cargo-lint.sh" xdr

step "cargo test"
cargo test --quiet

step "kernel-compatibility build (no_std via #[path], kernel lints, no panic paths)"
"$here/../tools/testing/kcompat-check.sh" codec 'header.*decode' "xdr=$here/src/codec/mod.rs"

if [ "$do_fuzz" = 1 ]; then
	step "fuzz for ${fuzz_seconds}s"
	seed_args=()
	if [ -n "${FUZZ_SEED:-}" ]; then seed_args=(--seed "$FUZZ_SEED"); fi
	cargo run --release --quiet --example fuzz -- --seconds "$fuzz_seconds" "${seed_args[@]}"
fi

if [ "$do_bench" = 1 ]; then
	step "benchmarks (quick)"
	cargo bench --quiet --bench codec -- --quick
fi

step "all checks passed"
