#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: enables
# svcrdma's tracepoints for a bad RPC-over-RDMA version received
# (svcrdma_decode_badvers_err) and ERR_VERS sent (svcrdma_err_vers), and
# keeps a copy of the trace buffer in the control directory both guests
# share (/results/ctl/server-trace.txt) until the client is finished, so
# that a client test can check what the server saw on the wire.

set -euo pipefail
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T"
for ev in svcrdma_decode_badvers_err svcrdma_err_vers; do
	echo 1 >"$T/events/rpcrdma/$ev/enable"
done
echo 1 >"$T/tracing_on"
(
	while :; do
		cat "$T/trace" >/results/ctl/server-trace.tmp
		mv /results/ctl/server-trace.tmp /results/ctl/server-trace.txt
		[ -e /results/ctl/client.finished ] && exit 0
		sleep 0.3
	done
) </dev/null >/dev/null 2>&1 &
echo "tracing svcrdma version errors"
