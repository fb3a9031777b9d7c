#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/responder/build.sh: build the responder (release) after installing
# what rdma-mummy-sys needs to build (cmake, a C compiler, libclang for
# bindgen) and the rdma-core libraries it loads at run time, and writes its
# manual page next to it (target/release/rpcrdma-responder.1, from
# --man). Prints the binary's path. Used by check.sh and by integration/run-all.sh.

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../testing/lib.sh
. "$here/../testing/lib.sh"
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

( ensure_debs "${HOST_DEBS[@]}" "${RESPONDER_DEBS[@]}" ) >&2 || die "responder: build prerequisites missing"
cd "$here"
cargo build --release --locked --quiet >&2
# The manual page, generated from the --help text (not committed).
"$here/target/release/rpcrdma-responder" --man >"$here/target/release/rpcrdma-responder.1"
echo "$here/target/release/rpcrdma-responder"
