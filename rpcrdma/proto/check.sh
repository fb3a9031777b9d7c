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

"$top/tools/testing/cargo-lint.sh" proto

step "cargo test"
cargo test --quiet
cargo test --quiet --release --test fuzz

step "kernel-compatibility build with the codec (no_std via #[path], kernel lints, no panic paths)"
# proto is compiled together with the codec it uses (super::xdr); the
# object must really contain proto's code, not just the codec's.
"$top/tools/testing/kcompat-check.sh" proto 'proto.*Transport.*receive' \
	"xdr=$top/xdr/src/codec/mod.rs" "proto=$here/mod.rs"

step "all checks passed"
