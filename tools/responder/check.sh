#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/responder/check.sh - everything `make check` runs for the
# responder on the host: build (with its prerequisites), its manual page,
# rustfmt, clippy
# (warnings denied), rustdoc, and the host tests of its protocol logic.

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

# shellcheck source=../testing/lib.sh
. "$here/../testing/lib.sh"

printf '\n=== responder: build\n'
"$here/build.sh"
cd "$here"
printf '\n=== responder: manual page (groff, warnings fail)\n'
( ensure_debs groff-base )
man=target/release/rpcrdma-responder.1
grep -q '^\.SH FAULT INJECTION' "$man" || die "$man: no FAULT INJECTION section"
warn=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
[ -z "$warn" ] || die "groff warns about $man: $warn"
printf '\n=== responder: cargo fmt --check\n'
cargo fmt --all -- --check
printf '\n=== responder: cargo clippy --all-targets -D warnings\n'
cargo clippy --all-targets --locked --quiet -- -D warnings
printf '\n=== responder: cargo doc (rustdoc lints the kernel enables)\n'
RUSTDOCFLAGS="-D warnings -W rustdoc::unescaped_backticks -W rustdoc::missing_crate_level_docs" \
	cargo doc --no-deps --locked --quiet
printf '\n=== responder: cargo test\n'
cargo test --locked --quiet
printf '\n=== responder: all checks passed\n'
