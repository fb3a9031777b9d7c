#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: starts the
# user-space RPC-over-RDMA responder (tools/responder) next to nfsd, one
# instance per line of RESPONDER_INSTANCES ("PORT ARGS..."), by default
#   20050 --remote-invalidate            versions 2 and 1, R bit set
#   20051 --v1-only --remote-invalidate  behaves like svcrdma (R bit set)
#   20053                                versions 2 and 1, R bit clear:
#                                        plain Sends only (RFC 8797 §4.1)
#   20054 --v1-only                      alike, version 1
# Each forwards to nfsd at 127.0.0.1:2049 and writes its counters and log
# to the control directory both guests share:
# /results/ctl/responder-PORT.stats and /results/ctl/responder-PORT.log.
# The responders run until the guest powers off. Other server scripts
# set RESPONDER_INSTANCES and source this file. RESPONDER_BIN_<PORT>, if
# set, is the binary of that port's instance (make bench's
# --responder-baseline: an older build next to the current one).

set -euo pipefail
BIN=/src/tools/responder/target/release/rpcrdma-responder
[ -x "$BIN" ] || { echo "no responder binary at $BIN (tools/responder/build.sh)"; exit 1; }
RESPONDER_INSTANCES=${RESPONDER_INSTANCES:-"20050 --remote-invalidate
20051 --v1-only --remote-invalidate
20053
20054 --v1-only"}

# nfsd sees the responder's TCP connections coming from 127.0.0.1: export
# to it too, with the same options (and fsid) as to the client network.
if ! grep -q '127\.0\.0\.1(' /etc/exports; then
	sed -n 's#^\([^[:space:]]*\)[[:space:]][[:space:]]*[^(]*(#\1\t127.0.0.1(#p' /etc/exports >/tmp/exports.lo
	cat /tmp/exports.lo >>/etc/exports
	exportfs -ra
	echo "exports: $(tr '\n' ' ' </etc/exports)"
fi

ports=()
while read -r port args; do
	[ -n "$port" ] || continue
	bin_var=RESPONDER_BIN_$port
	bin=${!bin_var:-$BIN}
	[ -x "$bin" ] || { echo "no responder binary at $bin (port $port)"; exit 1; }
	# shellcheck disable=SC2086
	setsid -f "$bin" --port "$port" --stats "/results/ctl/responder-$port.stats" $args \
		</dev/null >>"/results/ctl/responder-$port.log" 2>&1
	ports+=("$port")
done <<<"$RESPONDER_INSTANCES"
for port in "${ports[@]}"; do
	for ((i = 0; i < 50; i++)); do
		[ -s "/results/ctl/responder-$port.stats" ] && break
		sleep 0.1
	done
	[ -s "/results/ctl/responder-$port.stats" ] || { cat "/results/ctl/responder-$port.log"; exit 1; }
	echo "responder on port $port: $(head -n 1 "/results/ctl/responder-$port.log")"
done
