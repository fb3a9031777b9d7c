#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 backchannel on version 1 (svcrdma): NFSv4.1/4.2 callbacks over RDMA (delegations, CB_RECALL, traced reverse Calls, reconnect during a recall)
# run.sh-options: --server-script tools/testing/integration/server/nfsd-clients.sh
#
# Client script for tools/testing/vm/run.sh, with the server publishing
# nfsd's client state and doing conflicting accesses on request
# (server/nfsd-clients.sh): rpcrdma2 against svcrdma, RPC-over-RDMA
# version 1 (RFC 8167). The checks are in lib/backchannel.sh. nfsd sends
# no CB_NULL to NFSv4.1 and later sessions, so there is none on this
# wire; rpcrdma2-v2-backchannel probes with the responder's CB_NULL on
# version 2 and on version 1.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

BC_WIRE=v1
BC_PORT=$NFS_RDMA_PORT
# shellcheck source=lib/backchannel.sh
. "$SRC/tools/testing/integration/lib/backchannel.sh"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 backchannel (version 1): all checks passed"
