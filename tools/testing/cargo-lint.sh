#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# cargo-lint.sh NAME: the lint steps every host crate runs (xdr/check.sh,
# rpcrdma/proto/check.sh), in the current directory: rustfmt, clippy on
# all targets with warnings denied, and rustdoc with the lints the kernel
# enables. NAME prefixes the step headings.

set -euo pipefail
name=${1:?usage: cargo-lint.sh NAME}
step() { printf '\n=== %s: %s\n' "$name" "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --all-targets --quiet -- -D warnings

step "cargo doc (rustdoc lints the kernel enables)"
RUSTDOCFLAGS="-D warnings -W rustdoc::unescaped_backticks -W rustdoc::missing_crate_level_docs" \
	cargo doc --no-deps --quiet
