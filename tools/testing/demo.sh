#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: build what is needed (testbed kernel, rpcrdma2.ko), boot the
# two guests and show rpcrdma2 in use in the client guest.

set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA2_TOP"

step "testbed kernel (cached after the first build)" tools/testing/kernel/build.sh >/dev/null
step "build rpcrdma2.ko" make -s modules
step "build the RPC-over-RDMA version 2 responder" tools/responder/build.sh >/dev/null
log "booting the server and client guests (soft-RoCE on a private L2; nfsd and the v2 responder on the server)"
exec tools/testing/vm/run.sh --server-script tools/testing/integration/server/responder.sh \
	tools/testing/demo-guest.sh
