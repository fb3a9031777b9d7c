#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma/proto/check.sh - everything `make check` runs for the protocol
# logic (negotiation, credits, inline thresholds, reply validation):
#
#   1. cargo fmt --check
#   2. cargo clippy --all-targets, warnings denied; cargo doc, warnings denied
#   3. cargo test: the core-only self tests (also run as KUnit), the
#      end-to-end server models, and the hostile-sequence test in release
#      mode (overflow checks stay on in that profile)
#   4. kernel-compatibility build: the proto module tree compiled together
#      with the codec the way the rpcrdma2 module includes them
#      (`#[path] pub mod xdr;` and `pub mod proto;` under one crate root,
#      no_std, edition 2021, the kernel's rustc lint flags, -Dwarnings,
#      overflow checks on), then `nm` must find no reference to
#      core::panicking in the optimised object: no input can reach a panic
#
# Usage: rpcrdma/proto/check.sh
# Environment: CARGO_BUILD_JOBS (default 1: the machine has two cores and
#   is usually building a kernel), KRUSTC (rustc for step 4; default
#   /usr/bin/rustc, the kernel's, when present, else rustc).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$here"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

step() { printf '\n=== proto: %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --all-targets --quiet -- -D warnings

step "cargo doc (rustdoc lints the kernel enables)"
RUSTDOCFLAGS="-D warnings -W rustdoc::unescaped_backticks -W rustdoc::missing_crate_level_docs" \
	cargo doc --no-deps --quiet

step "cargo test"
cargo test --quiet
cargo test --quiet --release --test fuzz

step "kernel-compatibility build with the codec (no_std via #[path], kernel lints, no panic paths)"
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
/// The codec.
#[path = "$top/xdr/src/codec/mod.rs"]
pub mod xdr;
/// The protocol logic.
#[path = "$here/mod.rs"]
pub mod proto;
EOR
# The flags of rust_common_flags in the kernel's top-level Makefile that
# rustc (not clippy) applies, plus -Dwarnings (CONFIG_WERROR) and the
# module build's overflow checks (CONFIG_RUST_OVERFLOW_CHECKS=y) and panic
# strategy; the same as xdr/check.sh.
"$krustc" --edition=2021 --crate-type rlib --crate-name rpcrdma2_proto_check \
	-Dwarnings -Dnon_ascii_idents -Dunsafe_op_in_unsafe_fn \
	-Wmissing_docs -Wrust_2018_idioms -Wunreachable_pub \
	-Cpanic=abort -Coverflow-checks=on -Copt-level=2 \
	--emit=obj -o "$tmp/proto.o" "$tmp/rpcrdma/root.rs"
echo "compiled with $("$krustc" --version)"
command -v nm >/dev/null 2>&1 ||
	{ echo "FAIL: nm (binutils) is needed for the panic-path check" >&2; exit 1; }
nm -u "$tmp/proto.o" > "$tmp/undefined"
# Every core panic entry point: panicking::*, panic_fmt, the slice index
# and copy_from_slice length-mismatch failures (*_fail), unwrap/expect.
if grep -E 'panic|_fail' "$tmp/undefined"; then
	echo "FAIL: the proto+codec object references a panic path (above)" >&2
	exit 1
fi
# The object must really contain proto's code, not just the codec's.
nm "$tmp/proto.o" > "$tmp/defined"
grep -E 'proto.*Transport.*receive' "$tmp/defined" >/dev/null ||
	{ echo "FAIL: Transport::receive is missing from the object" >&2; exit 1; }
echo "no panic paths in the optimised proto+codec object"

step "all checks passed"
