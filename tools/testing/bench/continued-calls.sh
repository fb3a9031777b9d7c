#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Client script for tools/testing/vm/run.sh (with
# --server-script tools/testing/integration/server/responder.sh): continued
# Calls against a Read chunk for Calls over the inline threshold
# (Documentation/benchmarks.rst, "Continued Calls against a Read chunk").
#
# NFSv3 through the responder on port 20050 (version 2, 4 KiB inline):
# fio O_DIRECT random writes of BS bytes (one at a time, psync), so every
# WRITE Call is BS plus its headers, over the 4096-byte threshold:
#   frwr  the default: the payload goes in a Read chunk (FRWR-registered,
#         pulled by the responder with RDMA Read);
#   cont  frwr=N: an inline-only connection, the Call sent continued in
#         inline pieces (F_MORE).
# The repeat loop is the outer one (both configurations see the same host
# load); each mount starts a new connection. fio's JSON goes to
# $RESULTS/cc-CFG-BS-REP.json, the xprt: line of mountstats after each
# configuration to $RESULTS/cc-CFG-REP.xprt; the summary on the host:
# tools/testing/bench/continued-calls-report.py RESULTS/client.
#
# usage: continued-calls.sh [REPEATS [RUNTIME [SIZES]]] (3, 8 s, '8k 16k 32k 64k')

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

REPEATS=${1:-3}
RUNTIME=${2:-8}
SIZES=${3:-"8k 16k 32k 64k"}
KO=$RPCRDMA2_KO
MNT=/mnt/nfs
P=/sys/module/rpcrdma2/parameters/frwr
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
command -v fio >/dev/null || tb_die "no fio in the client guest"

tb_step "insmod rpcrdma2.ko" insmod "$KO"
for ((rep = 1; rep <= REPEATS; rep++)); do
	for cfg in frwr cont; do
		case $cfg in
		frwr) echo Y >"$P" ;;
		cont) echo N >"$P" ;;
		esac
		NFS_RDMA_PORT=20050 tb_mount 3 rdma "$MNT"
		for bs in $SIZES; do
			timeout $((RUNTIME + 180)) fio --name="cc-$cfg-$bs" --directory="$MNT" \
				--filename="cc-$bs" --size=8m --rw=randwrite --bs="$bs" \
				--direct=1 --ioengine=psync --time_based --runtime="$RUNTIME" \
				--ramp_time=1 --output-format=json \
				--output="$RESULTS/cc-$cfg-$bs-$rep.json" ||
				tb_die "fio $cfg $bs (repeat $rep) failed"
			tb_log "$cfg $bs repeat $rep: done"
		done
		awk -v m="$MNT" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print; exit}' \
			/proc/self/mountstats >"$RESULTS/cc-$cfg-$rep.xprt"
		tb_log "$cfg repeat $rep: $(cat "$RESULTS/cc-$cfg-$rep.xprt")"
		tb_umount "$MNT"
	done
done
echo Y >"$P"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "continued calls: $REPEATS repeats done"
