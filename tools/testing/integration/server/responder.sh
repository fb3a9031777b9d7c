#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: starts the
# user-space RPC-over-RDMA responder (tools/responder) next to nfsd:
#   port 20050: versions 2 and 1 (RESPONDER_ARGS, default none)
#   port 20051: --v1-only (behaves like svcrdma)
# Each forwards to nfsd at 127.0.0.1:2049. Counters and logs go to the
# control directory both guests share: /results/ctl/responder-PORT.stats
# and .log. The responders run until the guest powers off.

set -euo pipefail
BIN=/src/tools/responder/target/release/rpcrdma-responder
[ -x "$BIN" ] || { echo "no responder binary at $BIN (tools/responder/build.sh)"; exit 1; }

start() { # PORT ARGS...
	local port=$1
	shift
	setsid -f "$BIN" --port "$port" --stats "/results/ctl/responder-$port.stats" "$@" \
		</dev/null >>"/results/ctl/responder-$port.log" 2>&1
}
# shellcheck disable=SC2086
start 20050 ${RESPONDER_ARGS:-}
start 20051 --v1-only
for port in 20050 20051; do
	for ((i = 0; i < 50; i++)); do
		[ -s "/results/ctl/responder-$port.stats" ] && break
		sleep 0.1
	done
	[ -s "/results/ctl/responder-$port.stats" ] || { cat "/results/ctl/responder-$port.log"; exit 1; }
	echo "responder on port $port: $(head -n 1 "/results/ctl/responder-$port.log")"
done
