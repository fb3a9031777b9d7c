#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: keepalive: a server that stops answering while reads wait for its replies is probed; a live one (its process stopped) acknowledges the probes and the connection lives on; a dead one (its frames to the client lost for 8 s) is found by the unanswered probe, not at the RPC timeout: the connection ends as "keepalive probe unanswered", the transport reconnects, and every read returns the right data
# run.sh-options: --timeout 900 --server-script tools/testing/integration/server/soak.sh
# integration-tier: long
#
# Client script for tools/testing/vm/run.sh; the server runs soak.sh (the
# version 2 responder on port 20050, faults on request). NFSv3 through
# the responder, a hard mount with the default RPC timeout (timeo=600:
# 60 s), reads of a file (direct I/O, each checked against the file's
# checksum) in a loop all along:
#   1. a server that is alive but does not answer: the responder is
#      stopped (SIGSTOP) for 5 s. Its adapter (rxe, in the kernel) still
#      acknowledges every frame: the probes the client posts while it
#      waits are acknowledged, no connection ends, and the reads go on
#      after SIGCONT;
#   2. a server that is gone: the responder is stopped (the Calls in
#      flight are acknowledged and get no reply), then the server's
#      neighbour entry for the client points at a MAC nobody has for 8 s:
#      nothing from the server reaches the client, so the first WR the
#      client posts, its probe, gets no acknowledgement; its retries run
#      out (about 4 s on rxe), the probe fails and the connection ends.
#      Without the keepalive the client would wait for the RPC timeout.
#      The responder continues when the loss ends; the client connects
#      again and sends the reads again. Asserted: a probe unanswered, the
#      connection's rpcrdma2_disconnect reason "keepalive probe
#      unanswered", the log line, a new connection, every read right and
#      reads completing again after the loss (well before the 60 s RPC
#      timeout would have ended the wait).

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
CTL=/results/ctl
REQ=0
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
# shellcheck source=lib/server-ctl.sh
. "$SRC/tools/testing/integration/lib/server-ctl.sh"

tb_step "insmod rpcrdma2.ko" insmod "$KO"
NFS_RDMA_PORT=20050 tb_mount 3 rdma "$MNT" hard,timeo=600
tb_assert_proto "$MNT" rdma

head -c $((8 << 20)) /dev/urandom >/tmp/ref
want=$(md5sum </tmp/ref | cut -d' ' -f1)
cp /tmp/ref "$MNT/keepalive.dat"
sync

# reader STOPFILE LOG: read the file (direct I/O, 1 MiB Calls: Write
# chunks) until STOPFILE exists, one checksum per line into LOG.
reader() {
	while [ ! -e "$1" ]; do
		dd if="$MNT/keepalive.dat" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1 >>"$2"
	done
}

# check_reads LOG: every read returned the file.
check_reads() {
	local n bad
	n=$(wc -l <"$1")
	bad=$(grep -cv "^$want\$" "$1" || true)
	tb_log "  $n reads, $bad with a wrong checksum"
	((n > 0)) || tb_die "no read completed"
	((bad == 0)) || tb_die "$bad reads returned wrong data"
}

# stopped_server SECS [LOSS]: the responder stopped for SECS seconds while
# the reads run (with LOSS: and the server's frames to the client lost for
# the last LOSS of them, from 1.5 s after the stop), then continued; the
# reads' log is /tmp/reads.SECS, the trace of the stop in the trace buffer.
stopped_server() {
	local secs=$1 loss=${2:-0} pid before i
	tb_trace_rpcrdma2
	rm -f "/tmp/stop.$secs"
	: >"/tmp/reads.$secs"
	reader "/tmp/stop.$secs" "/tmp/reads.$secs" &
	pid=$!
	sleep 2
	server_do signal STOP
	before=$(wc -l <"/tmp/reads.$secs")
	if ((loss > 0)); then
		tb_log "responder stopped; the server's frames to $CLIENT_IP lost for $loss s from 1.5 s on"
		server_do outage "$loss" "$CLIENT_IP" "$(($(date +%s%3N) + 1500))"
	else
		tb_log "responder stopped for $secs s"
		sleep "$secs"
	fi
	server_do signal CONT
	tb_log "responder continued; $before reads before the stop"
	for ((i = 0; i < 120; i++)); do
		(($(wc -l <"/tmp/reads.$secs") > before + 1)) && break
		sleep 0.5
	done
	touch "/tmp/stop.$secs"
	wait "$pid"
	check_reads "/tmp/reads.$secs"
	(($(wc -l <"/tmp/reads.$secs") > before + 1)) ||
		tb_die "reads made no progress within 60 s of the responder's continuing"
	tb_log "keepalive events:"
	tb_trace_events keepalive | sed 's/^/    /'
	tb_log "connection events:"
	tb_trace_events disconnect | sed 's/^/    /'
	tb_trace_events connect | sed 's/^/    /'
}

tb_log "=== 1: a live server that does not answer"
stopped_server 5
probes=$(tb_trace_events keepalive 'reason=probe$' | wc -l)
acked=$(tb_trace_events keepalive 'reason=acknowledged$' | wc -l)
tb_log "$probes probes, $acked acknowledged"
((probes > 0)) || tb_die "no probe while replies were awaited for 5 s with nothing received"
((acked == probes)) || tb_die "a probe of a live server was not acknowledged"
[ -z "$(tb_trace_events disconnect)" ] || tb_die "the connection to a live server ended"

tb_log "=== 2: a server that is gone"
stopped_server 9 8
[ -n "$(tb_trace_events keepalive 'reason=unanswered$')" ] || tb_die "no keepalive probe went unanswered"
[ -n "$(tb_trace_events disconnect 'reason=keepalive probe unanswered')" ] ||
	tb_die "the connection did not end as 'keepalive probe unanswered'"
[ -n "$(tb_trace_events connect)" ] || tb_die "no new connection after the loss"
dmesg | grep -q "did not acknowledge a keepalive probe" || tb_die "no log line for the unanswered probe"

tb_umount "$MNT"
tb_rmmod rpcrdma2
tb_log "PASS"
