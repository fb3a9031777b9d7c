#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: an RPC answered with a transport error fails once: many concurrent Calls refused (v2 RDMA2_ERR_SYSTEM, v1 ERR_CHUNK), none sent again, no reconnect
# run.sh-options: --timeout 900 --server-script tools/testing/integration/server/responder-errors.sh
# integration-tier: long
#
# Client script for tools/testing/vm/run.sh. The server runs responders
# that answer every 5th Call (after the first 60 of a connection) with a
# transport error (server/responder-errors.sh): port 20070 in version 2
# (RDMA2_ERR_SYSTEM), port 20071 version 1 only (ERR_CHUNK). For each, an
# NFSv3 mount (hard, noac: every stat is a GETATTR on the wire) and 8
# workers stat-ing 30 files twice each, concurrently, so that replies
# often arrive while the send path is still busy with their Call (the
# race of Rqst::fail against call_transmit_status()). Then:
#   1. errors were delivered: some stats failed with EIO, and rpcrdma2
#      traced exactly one failed RPC (rpcrdma2_reply class=fail) per
#      error the responder injected, named by the version that sent it
#      (rpcrdma2_peer_error RDMA2_ERR_SYSTEM / ERR_CHUNK);
#   2. no refused XID was sent again (the responder's refused_resent, over
#      every connection it saw);
#   3. no reconnect: one connection for the whole run (rpcrdma2_connect,
#      mountstats connect count, no rpcrdma2_disconnect before umount);
#   4. run.sh fails the test on any kernel warning in the client's log.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
FILES=30 WORKERS=8 ROUNDS=2
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
# stat_of PORT NAME: a responder counter; xprt_field N: field N of the
# mount's "xprt: rdma" line (3: connects).
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"

# The files, made through svcrdma (no injected errors).
tb_mount 3 rdma "$MNT"
mkdir -p "$MNT/race"
for i in $(seq 1 $FILES); do echo "$i" >"$MNT/race/f$i"; done
tb_umount "$MNT"

run_port() { # PORT VERS ERROR-NAME
	local port=$1 vers=$2 name=$3 w failed=0 injected fails resent conns
	tb_log "=== port $port: version $vers, errors answered as $name"
	tb_trace_rpcrdma2
	mkdir -p "$MNT"
	timeout 60 mount -t nfs -o "vers=3,proto=rdma,port=$port,nolock,noac" \
		"$NFS_SERVER:$NFS_EXPORT" "$MNT" || tb_die "port $port: mount failed"
	tb_assert_proto "$MNT" rdma
	for w in $(seq 1 $WORKERS); do
		(
			n=0
			for r in $(seq 1 $ROUNDS); do
				for i in $(seq 1 $FILES); do
					stat "$MNT/race/f$i" >/dev/null 2>&1 || n=$((n + 1))
				done
			done
			echo "$n" >"/tmp/failed-$w"
		) &
	done
	wait
	for w in $(seq 1 $WORKERS); do failed=$((failed + $(cat "/tmp/failed-$w"))); done
	sleep 2 # the responder writes its counters within 0.5 s
	injected=$(stat_of "$port" errors_injected)
	resent=$(stat_of "$port" refused_resent)
	fails=$(tb_trace_events reply 'class=fail .*status=-5' | wc -l)
	conns=$(tb_trace_events connect "peer=$NFS_SERVER:$port " | wc -l)
	tb_log "port $port: $((WORKERS * ROUNDS * FILES)) stats, $failed failed; responder injected $injected errors, saw $resent refused XIDs again; rpcrdma2 failed $fails RPCs; $conns connection(s)"
	((injected >= 20)) || tb_die "port $port: only $injected errors injected: the test did not load the error path"
	((failed > 0)) || tb_die "port $port: no stat failed although $injected Calls were refused"
	((resent == 0)) || tb_die "port $port: $resent refused XIDs were sent again (an RPC answered with an error must fail, not be retransmitted)" # conformance: errors-fail-once
	((fails == injected)) || tb_die "port $port: $injected errors injected but $fails RPCs failed (each must fail exactly once)" # conformance: errors-fail-once
	[ -n "$(tb_trace_events peer_error "vers=$vers .*\\($name\\)")" ] ||
		tb_die "port $port: no rpcrdma2_peer_error naming $name in version $vers"
	((conns == 1)) || tb_die "port $port: $conns connections: a refused RPC caused a reconnect" # conformance: errors-fail-once
	[ -z "$(tb_trace_events disconnect)" ] || tb_die "port $port: the connection was dropped: $(tb_trace_events disconnect | head -n 3)"
	(($(xprt_field 3) == 1)) || tb_die "port $port: mountstats counts $(xprt_field 3) connects"
	tb_umount "$MNT"
}

run_port 20070 2 RDMA2_ERR_SYSTEM
run_port 20071 1 ERR_CHUNK

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 error race: all checks passed"
