#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Where the server's CPU goes per small RPC, to svcrdma and through the
# responder: a client script for tools/testing/vm/run.sh with
# --server-script tools/testing/bench/rpc-profile-server.sh:
#
#   tools/testing/vm/run.sh --results DIR \
#       --server-script tools/testing/bench/rpc-profile-server.sh \
#       tools/testing/bench/rpc-profile.sh [REPEATS [PORT...]]
#   tools/testing/bench/rpc-profile-report.py DIR
#
# For each repeat (default 2) and port (default 20049, svcrdma, and 20051,
# the responder in --v1-only mode, which make bench's c-resp and m-c-resp
# use), the stock C client (rpcrdma.ko) mounts NFSv4.1 with noac and runs
# stat(1) of one file over and over, so that every stat is answered by
# GETATTRs sent one at a time: a warm-up of 2000 stats, then 10 s measured
# while the server records a perf profile of itself. The RPCs of the
# interval are mountstats' per-operation counts (all operations) before
# and after; DIR/ctl/rpc-profile.tsv gets a line per run and
# DIR/ctl/prof-PORT-REPEAT.folded its folded call chains. The report
# divides the server's busy samples by those RPCs.
# This is a probe for finding where the time goes, not a benchmark: perf
# costs the server a little CPU, and the numbers are for comparing the
# two ports within one boot.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

REPEATS=${1:-2}
shift || true
PORTS=("$@")
((${#PORTS[@]})) || PORTS=(20049 20051)
CTL=/results/ctl
TSV=$CTL/rpc-profile.tsv

request() { # NAME WORD: a profiling request to the server, and its answer
	local i
	echo "$2" >"$CTL/prof-tmp-req.$1"
	mv "$CTL/prof-tmp-req.$1" "$CTL/prof-req.$1"
	for ((i = 0; i < 1200; i++)); do
		if [ -e "$CTL/prof-done.$1.$2" ]; then
			[ "$(<"$CTL/prof-done.$1.$2")" = ok ] || tb_die "server: $2 $1: $(<"$CTL/prof-done.$1.$2")"
			return 0
		fi
		sleep 0.1
	done
	tb_die "server did not answer '$2 $1' within 120 s (is the server script rpc-profile-server.sh?)"
}

rpcs() { # MNT: RPCs sent so far on MNT's mount, and their cumulative RTT (ms)
	awk -v m="$1" '$1 == "device" { on = ($5 == m) }
		on && /^[[:space:]]+[A-Z_0-9]+: [0-9]/ { n += $2; rtt += $8 }
		END { print n + 0, rtt + 0 }' /proc/self/mountstats
}

grep -q '^rpcrdma2 ' /proc/modules && tb_die "rpcrdma2 is loaded: this probe is of the C client"
tb_modprobe rpcrdma
printf 'repeat\tport\trpcs\trtt_ms\telapsed_ms\n' >"$TSV"
for ((rep = 1; rep <= REPEATS; rep++)); do
	for port in "${PORTS[@]}"; do
		mnt=/mnt/prof-$port
		NFS_RDMA_PORT=$port tb_mount 4.1 rdma "$mnt" noac
		tb_assert_proto "$mnt" rdma
		: >"$mnt/prof-file"
		args=()
		for ((i = 0; i < 2000; i++)); do args+=("$mnt/prof-file"); done
		stat -c %s "${args[@]}" >/dev/null
		request "$port-$rep" start
		read -r n0 r0 <<<"$(rpcs "$mnt")"
		t0=$EPOCHREALTIME
		# 10 s of stats; timeout's status 124 is the end of the interval
		timeout 10 bash -c 'while :; do stat -c %s "$@" >/dev/null; done' _ "${args[@]}" || [ $? = 124 ]
		t1=$EPOCHREALTIME
		read -r n1 r1 <<<"$(rpcs "$mnt")"
		request "$port-$rep" fold
		ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
		printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$port" $((n1 - n0)) $((r1 - r0)) "$ms" >>"$TSV"
		tb_log "repeat $rep port $port: $((n1 - n0)) RPCs in $ms ms, mean RTT $(awk -v n=$((n1 - n0)) -v r=$((r1 - r0)) 'BEGIN { printf "%.0f", n ? r * 1000 / n : 0 }') us"
		rm -f "$mnt/prof-file"
		tb_umount "$mnt" 2>/dev/null || umount "$mnt"
	done
done
cat "$TSV"
