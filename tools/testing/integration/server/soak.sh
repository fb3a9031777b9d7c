#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-soak.sh: the version 2 responder on port 20050
# next to nfsd (svcrdma on 20049), short NFSv4 lease and grace periods so
# that a restarted nfsd serves again within seconds, and faults on request
# through the control directory both guests share (/results/ctl), until
# the client is finished. A file /results/ctl/soak-req.NAME holding one of
#
#   nfsd-restart             stop and start nfsd (svcrdma listener too)
#   responder-restart [ARGS] kill the responder and start it again, with
#                            ARGS added (for example --malform-nth 40:KIND)
#   link-bounce SECS         take the server's eth0 down for SECS seconds
#   outage SECS PEER AT      send nothing to PEER for SECS seconds from AT
#   signal SIG               send SIG (STOP, CONT) to the responder
#                            (ms since the epoch; its neighbour entry points
#                            at a MAC nobody has)
#   diag                     log the responder's state (process, kernel
#                            stack), RDMA links and CM ids, routes,
#                            neighbours, the log tails (a hang)
#
# is served in order; /results/ctl/soak-done.NAME then holds "ok" or why
# not. The log is /results/server/soak.log.

set -euo pipefail

CTL=/results/ctl
PORT=20050
BIN=/src/tools/responder/target/release/rpcrdma-responder
[ -x "$BIN" ] || { echo "no responder binary at $BIN (tools/responder/build.sh)"; exit 1; }

start_nfsd() {
	rpc.nfsd
	grep -q "^rdma" /proc/fs/nfsd/portlist || echo "rdma ${NFS_RDMA_PORT:-20049}" >/proc/fs/nfsd/portlist
	grep -q "^rdma" /proc/fs/nfsd/portlist
}

# Lease and grace times can be set only while nfsd is stopped.
rpc.nfsd 0
echo 10 >/proc/fs/nfsd/nfsv4leasetime
echo 10 >/proc/fs/nfsd/nfsv4gracetime
echo 10 >/proc/sys/fs/nfs/nlm_grace_period
start_nfsd
echo "nfsd restarted: lease $(cat /proc/fs/nfsd/nfsv4leasetime) s, grace $(cat /proc/fs/nfsd/nfsv4gracetime) s; $(tr '\n' ' ' </proc/fs/nfsd/portlist)"

# shellcheck source=../../vm/guest/lib.sh
. /testbed/lib.sh

RESPONDER_INSTANCES="$PORT"
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"

responder_restart() { # ARGS...
	pkill -f "rpcrdma-responder --port $PORT" || true
	for ((i = 0; i < 50; i++)); do
		pgrep -f "rpcrdma-responder --port $PORT" >/dev/null || break
		sleep 0.1
	done
	rm -f "$CTL/responder-$PORT.stats"
	# shellcheck disable=SC2068
	setsid -f "$BIN" --port "$PORT" --stats "$CTL/responder-$PORT.stats" $@ \
		</dev/null >>"$CTL/responder-$PORT.log" 2>&1
	for ((i = 0; i < 50; i++)); do
		[ -s "$CTL/responder-$PORT.stats" ] && return 0
		sleep 0.1
	done
	return 1
}

serve() { # NAME ACTION [ARGS...]
	local name=$1 what=$2
	shift 2
	echo "$(date +%T) $name: $what $*"
	case $what in
	nfsd-restart) rpc.nfsd 0 && start_nfsd ;;
	responder-restart) responder_restart "$@" ;;
	signal) pkill "-$1" -f "rpcrdma-responder --port $PORT" ;;
	link-bounce)
		ip link set eth0 down
		sleep "${1:-3}"
		ip link set eth0 up
		;;
	outage)
		local t0 at=${3:-0}
		tb_sleep_until_ms "$at"
		ip neigh replace "$2" lladdr 02:00:00:00:00:02 nud permanent dev eth0
		t0=$(date +%s%3N)
		sleep "${1:-3}"
		ip neigh del "$2" dev eth0 || true
		echo "$(date +%T) $name: outage at $at: from +$((t0 - at)) to +$(($(date +%s%3N) - at)) ms"
		;;
	diag)
		local pid
		for pid in $(pgrep -f "rpcrdma-responder --port $PORT"); do
			echo "responder $pid: $(grep '^State' "/proc/$pid/status") wchan $(cat "/proc/$pid/wchan")"
			cat "/proc/$pid/stack" || true
		done
		pgrep -f "rpcrdma-responder --port $PORT" >/dev/null || echo "no responder is running"
		tb_rdma_net_state
		tail -n 30 "$CTL/responder-$PORT.log"
		dmesg | tail -n 30
		;;
	*) echo "unknown request '$what'" && return 1 ;;
	esac
}

(
	while [ ! -e "$CTL/client.finished" ]; do
		for req in "$CTL"/soak-req.*; do
			[ -e "$req" ] || continue
			case $req in *.tmp) continue ;; esac
			name=${req##*/soak-req.}
			read -ra action <"$req"
			rm -f "$req"
			if serve "$name" "${action[@]}"; then r=ok; else r="failed: ${action[*]}"; fi
			echo "$r" >"$CTL/soak-done.$name.tmp"
			mv "$CTL/soak-done.$name.tmp" "$CTL/soak-done.$name"
		done
		sleep 0.2
	done
) </dev/null >>/results/server/soak.log 2>&1 &
echo "serving $CTL/soak-req.* (log: /results/server/soak.log)"
