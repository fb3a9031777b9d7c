#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/responder/build.sh: build the responder (release) after installing
# what rdma-mummy-sys needs to build (cmake, a C compiler, libclang for
# bindgen) and the rdma-core libraries it loads at run time. Prints the
# binary's path. Used by check.sh and by integration/run-all.sh.

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../testing/lib.sh
. "$here/../testing/lib.sh"
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

readonly RESPONDER_DEBS=(cmake gcc libclang-15-dev libibverbs1 librdmacm1 ibverbs-providers rdma-core)
( ensure_debs "${RESPONDER_DEBS[@]}" ) >&2 || die "responder: build prerequisites missing"
cd "$here"
cargo build --release --locked --quiet >&2
echo "$here/target/release/rpcrdma-responder"
