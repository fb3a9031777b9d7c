#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# host-check.sh - everything `make check` (phase host) runs for the host
# crates of the Cargo workspace (Cargo.toml: the codec xdr/, the
# protocol logic rpcrdma/proto/ and the lock-free free list
# rpcrdma/sync/), once for the whole workspace:
#
#   0. the Debian packages it needs (lib.sh HOST_DEBS: cargo, rustfmt,
#      clippy, ...), installed if missing
#   1. cargo fmt --check
#   2. cargo clippy --workspace --all-targets, warnings denied (the lint
#      policy is the workspace's [workspace.lints] plus the no-panic lints
#      at the top of each module tree); cargo doc with the rustdoc lints
#      the kernel enables, warnings denied
#   3. cargo test --workspace (known-answer vectors, property and negative
#      tests, the core-only self tests also run under KUnit, the
#      end-to-end server models, the free list on several threads), and
#      the hostile-sequence test in release
#      mode (overflow checks stay on in that profile); then the unit
#      tests of the bench's pool.py, rpc-profile-report.py and
#      counts-report.py and of docs-refs.py (python3 -m unittest)
#   4. kernel-compatibility builds: each module tree compiled the way the
#      rpcrdma2 module includes it (#[path] modules of a no_std crate root,
#      edition 2021, the kernel's rustc lint flags, -Dwarnings, overflow
#      checks on); `nm` must find no reference to a panic path in the
#      optimised object (kcompat-check.sh): the codec alone, then proto
#      together with the codec it uses
#   5. a bounded run of the codec fuzzer (xdr/examples/fuzz.rs)
#   6. (--bench) the codec benchmarks in quick mode
#
# Usage: tools/testing/host-check.sh [--fuzz-seconds N] [--no-fuzz] [--bench]
# Environment: FUZZ_SECONDS (default 20), FUZZ_SEED (default: time),
#   CARGO_BUILD_JOBS (default 1: the machine has two cores and is usually
#   building a kernel), KRUSTC (rustc for step 4; default /usr/bin/rustc,
#   the kernel's, when present, else rustc).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
cd "$top"

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

step() { printf '\n=== host: %s\n' "$*"; }

step "Debian packages of the host phase (lib.sh HOST_DEBS)"
ensure_debs "${HOST_DEBS[@]}"
require_rustc_release

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --workspace --all-targets -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo doc (rustdoc lints the kernel enables)"
RUSTDOCFLAGS="-D warnings -W rustdoc::unescaped_backticks -W rustdoc::missing_crate_level_docs" \
	cargo doc --workspace --no-deps --quiet

step "cargo test --workspace"
cargo test --workspace --quiet
cargo test --quiet --release -p rpcrdma-proto --test fuzz

step "bench tools: python3 unit tests (pool.py, rpc-profile-report.py, counts-report.py)"
python3 -B -m unittest discover -s "$top/tools/testing/bench" -p 'test_*.py'

step "docs-refs.py: python3 unit tests (its checks fail on planted bad references)"
python3 -B -m unittest discover -s "$top/tools/testing" -p 'test_docs_refs.py'

step "kernel-compatibility build: codec (no_std via #[path], kernel lints, no panic paths)"
"$here/kcompat-check.sh" codec 'header.*decode' "xdr=$top/xdr/src/codec/mod.rs"

step "kernel-compatibility build: proto with the codec"
# proto is compiled together with the codec it uses (super::xdr); the
# object must really contain proto's code, not just the codec's.
"$here/kcompat-check.sh" proto 'proto.*Transport.*receive' \
	"xdr=$top/xdr/src/codec/mod.rs" "proto=$top/rpcrdma/proto/mod.rs"

if [ "$do_fuzz" = 1 ]; then
	step "codec fuzz for ${fuzz_seconds}s"
	seed_args=()
	if [ -n "${FUZZ_SEED:-}" ]; then seed_args=(--seed "$FUZZ_SEED"); fi
	cargo run --release --quiet -p rpcrdma-xdr --example fuzz -- \
		--seconds "$fuzz_seconds" "${seed_args[@]}"
fi

if [ "$do_bench" = 1 ]; then
	step "codec benchmarks (quick)"
	cargo bench --quiet -p rpcrdma-xdr --bench codec -- --quick
fi

step "all checks passed"
