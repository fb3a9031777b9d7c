#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 reconnect: disconnects injected during I/O (fail_sunrpc), I/O completes
#
# Client script for tools/testing/vm/run.sh. SUNRPC's fault injection
# (debugfs fail_sunrpc, CONFIG_FAIL_SUNRPC) calls the transport's
# inject_disconnect op, which rdma_disconnect()s the connection; the
# transport must see the disconnect, close, reconnect and retransmit.
#   1. NFSv3 and NFSv4.1: while a file is copied in, three disconnects are
#      injected; the copy completes and reads back identical;
#   2. rpcrdma2 logged the injected disconnects and connected again, and
#      the reconnects started in version 1 (the server is remembered as
#      version-1-only: no second probe on the same transport);
#   3. mountstats counts more than one connect;
#   4. a connection that outlives its disconnect does not reach the next
#      one: with two of rpcrdma2's faults (debugfs rpcrdma2/: hold_conn,
#      a request's buf_free holds a reference to the connection for 2 s;
#      delay_flush, a flushed Receive's handler sleeps 2 s first) one
#      disconnect is injected under direct 4 KiB reads, each with a Write
#      chunk (the old connection has MRs registered when it goes), while
#      16 requests' buf_free hold the connection. Both faults must
#      have fired as often as armed. The old connection is drained when
#      it is disconnected, not when its last reference goes, so neither
#      its late flush handler nor its last reference's drop can reach
#      the next connection: exactly one disconnect and one new connection
#      for the one injected.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
F=/sys/kernel/debug/fail_sunrpc
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
[ -d "$F" ] || tb_die "no $F: the kernel lacks CONFIG_FAIL_SUNRPC"

head -c 3000000 /dev/urandom >/tmp/ref
tb_step "insmod rpcrdma2.ko" insmod "$KO"

inject() { # N: inject N disconnects, one every 200 transmissions (quietly:
	# verbose fault injection prints a stack trace per fault)
	echo 0 >"$F/verbose"
	echo 0 >"$F/probability"
	echo 200 >"$F/interval"
	echo "$1" >"$F/times"
	echo 100 >"$F/probability"
}

for vers in 3 4.1; do
	tb_log "=== vers=$vers"
	dmesg -C
	tb_trace_rpcrdma2
	tb_mount "$vers" rdma "$MNT" rsize=1024,wsize=1024
	ls "$MNT" >/dev/null
	inject 3
	tb_step "copy 3 MB while disconnects are injected" timeout 300 cp /tmp/ref "$MNT/ref"
	sync
	echo 0 >"$F/probability"
	tb_umount "$MNT"
	tb_drop_caches
	tb_mount "$vers" rdma "$MNT" rsize=1024,wsize=1024
	cmp /tmp/ref "$MNT/ref" || tb_die "vers=$vers: data differs after reconnects"
	n=$(tb_trace_events disconnect 'reason=injected' | wc -l)
	((n >= 1)) || tb_die "vers=$vers: no disconnect was injected"
	c=$(dmesg | grep -c "rpcrdma2: connected to" || true)
	((c >= 3)) || tb_die "vers=$vers: expected reconnects, saw $c connects for $n injected disconnects"
	probes=$(tb_trace_events connprop 'dir=sent' | wc -l)
	tb_log "vers=$vers: $n disconnects injected, $c connects (both mounts), $probes probes"
	connects=$(xprt_field 3)
	rm "$MNT/ref"
	tb_umount "$MNT"
	((probes <= 2)) || tb_die "vers=$vers: a reconnect probed for version 2 again ($probes probes for 2 mounts)"
	tb_log "vers=$vers: I/O completed across the injected disconnects (second mount: $connects connect(s))"
done
tb_log "=== a connection held past its disconnect (hold_conn)"
H=/sys/kernel/debug/rpcrdma2/hold_conn
D=/sys/kernel/debug/rpcrdma2/delay_flush
[ -d "$H" ] || tb_die "no $H: rpcrdma2 has no fault injection here (CONFIG_FAULT_INJECTION_DEBUG_FS)"
tb_mount 4.1 rdma "$MNT"
cp /tmp/ref "$MNT/ref"
tb_trace_rpcrdma2
for a in "$H" "$D"; do
	echo 0 >"$a/verbose"
	echo 1 >"$a/interval"
done
# Direct 4 KiB reads, 8 in flight: each READ has a Write chunk, and its
# request ends in rpciod, so holding it there stops nothing else.
fio --name=held --filename="$MNT/ref" --rw=randread --bs=4k --size=3m \
	--ioengine=libaio --iodepth=8 --direct=1 --time_based --runtime=8 \
	--output=/tmp/fio-held.out &
load=$!
sleep 2
# The next 16 requests to end hold the connection; then the disconnect,
# at the next transmission, while they do.
echo 16 >"$H/times"
echo 1 >"$D/times"
echo 100 >"$H/probability"
echo 100 >"$D/probability"
echo 0 >"$F/probability"
echo 1 >"$F/interval"
echo 1 >"$F/times"
echo 100 >"$F/probability"
wait "$load" || tb_die "reads failed across a disconnect with a held connection"
echo 0 >"$F/probability"
echo 0 >"$H/probability"
echo 0 >"$D/probability"
ht=$(cat "$H/times")
dt=$(cat "$D/times")
((ht == 0)) || tb_die "hold_conn fired $((16 - ht)) of 16 times: too few requests ended to hold the connection"
((dt == 0)) || tb_die "delay_flush did not fire: no Receive was flushed at the disconnect"
# The held references are gone 2 s after their buf_free, the late flush
# handler done 2 s after the disconnect: whatever the old connection does
# has happened by now.
sleep 5
d=$(tb_trace_events disconnect | wc -l)
c=$(tb_trace_events connect | wc -l)
tb_trace_events disconnect >&2
((d == 1)) || tb_die "one disconnect injected, $d connections ended: the held connection's teardown reached the next one"
((c == 1)) || tb_die "one disconnect injected, $c new connections"
tb_log "held connection (16 holds, 1 delayed flush): $d disconnect, $c connect event(s)"
rm "$MNT/ref"
tb_umount "$MNT"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 reconnect: all checks passed"
