#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 backchannel on version 2 (the responder relaying nfsd's callbacks): delegations, CB_RECALL, CB_NULL probes, traced reverse Calls, reconnect during a recall; CB_NULL on version 1
# run.sh-options: --server-script tools/testing/integration/server/responder-callbacks.sh
#
# Client script for tools/testing/vm/run.sh. The server
# (server/responder-callbacks.sh) publishes nfsd's client state, does
# conflicting accesses on request, and runs the responder with
# --relay-callbacks --probe-callbacks on port 20110 (versions 2 and 1)
# and 20111 (--v1-only): nfsd's callbacks on the responder's TCP
# connection reach rpcrdma2 as reverse-direction Calls (RDMA2_MSG with
# F_RESPONSE clear), rpcrdma2's replies (F_RESPONSE set) go back to nfsd,
# and when nfsd gives a session its backchannel the responder sends a
# CB_NULL of its own (nfsd sends none to NFSv4.1 and later sessions).
#   1.-9. lib/backchannel.sh on version 2 (port 20110);
#   10. on port 20111 (version 1 only): an NFSv4.1 mount's connection
#       settles on version 1, and the responder's CB_NULL probe on it is
#       answered (rpcrdma2_bc_call and rpcrdma2_bc_reply outcome=sent).

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

BC_WIRE=v2
BC_PORT=20110
BC_STATS=/results/ctl/responder-20110.stats
# shellcheck source=lib/backchannel.sh
. "$SRC/tools/testing/integration/lib/backchannel.sh"
cat "$BC_STATS"

tb_log "=== CB_NULL on version 1 (responder --v1-only, port 20111)"
BC_STATS=/results/ctl/responder-20111.stats
BC_VERS=1
echo >/sys/kernel/tracing/trace
sent0=$(stat_of cb_null_sent) ok0=$(stat_of cb_null_replies)
NFS_RDMA_PORT=20111 tb_mount 4.1 rdma "$MNT"
[ -n "$(tb_trace_events version "vers=1 ")" ] ||
	tb_die "port 20111: the connection did not settle on version 1: $(tb_trace_events version)"
cb_null_probe 4.1 "$sent0" "$ok0"
n=$(check_bc_trace "port 20111")
((n >= 1)) || tb_die "port 20111: no reverse Call traced"
tb_umount "$MNT"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 backchannel (version 2, and CB_NULL on version 1): all checks passed"
