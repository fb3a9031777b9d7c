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

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --all-targets --quiet -- -D warnings

step "cargo doc (rustdoc lints the kernel enables)"
RUSTDOCFLAGS="-D warnings -W rustdoc::unescaped_backticks -W rustdoc::missing_crate_level_docs" \
	cargo doc --no-deps --quiet

step "cargo test"
cargo test --quiet

step "kernel-compatibility build (no_std via #[path], kernel lints, no panic paths)"
krustc=${KRUSTC:-}
if [ -z "$krustc" ]; then
	if [ -x /usr/bin/rustc ]; then krustc=/usr/bin/rustc; else krustc=rustc; fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/rpcrdma"
cat > "$tmp/rpcrdma/root.rs" <<EOR
//! Stand-in for the rpcrdma2 module's crate root.
#![no_std]
#[path = "$here/src/codec/mod.rs"]
pub mod xdr;
EOR
# The flags of rust_common_flags in the kernel's top-level Makefile that
# rustc (not clippy) applies, plus -Dwarnings (CONFIG_WERROR) and the
# module build's overflow checks (CONFIG_RUST_OVERFLOW_CHECKS=y) and panic
# strategy. Debug assertions stay off as with the default
# CONFIG_RUST_DEBUG_ASSERTIONS=n: with them core adds unsafe-precondition
# checks (panic_nounwind) to slice helpers that no input can trigger.
"$krustc" --edition=2021 --crate-type rlib --crate-name rpcrdma2_xdr_check \
	-Dwarnings -Dnon_ascii_idents -Dunsafe_op_in_unsafe_fn \
	-Wmissing_docs -Wrust_2018_idioms -Wunreachable_pub \
	-Cpanic=abort -Coverflow-checks=on -Copt-level=2 \
	--emit=obj -o "$tmp/xdr.o" "$tmp/rpcrdma/root.rs"
echo "compiled with $("$krustc" --version)"
command -v nm >/dev/null 2>&1 ||
	{ echo "FAIL: nm (binutils) is needed for the panic-path check" >&2; exit 1; }
if nm -u "$tmp/xdr.o" | grep -E 'panicking|panic_fmt|panic_bounds|unwrap_failed|expect_failed'; then
	echo "FAIL: the codec object references a panic path (above)" >&2
	exit 1
fi
echo "no panic paths in the optimised codec object"

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
