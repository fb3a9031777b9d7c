#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: version 2 transport properties and remote invalidation against the responder: our RDMA2_CONNPROP is the probe, --no-connprop falls back to an RPC probe, the peer's segment limits bound chunk planning, Send With Invalidate of rdma_inv_handle
# run.sh-options: --timeout 1500 --server-script tools/testing/integration/server/responder-props.sh
#
# Client script for tools/testing/vm/run.sh. The server runs the
# responder on 20090 (defaults), 20091 (--no-connprop), 20092
# (--prop-segs 4 --prop-seg-size 65536 --connprop-pieces 3) and 20093
# (--connprop-twice), see
# server/responder-props.sh.
#   1. 20090, NFSv4.1: each connection's first message is our
#      RDMA2_CONNPROP (rpcrdma2_connprop dir=sent before any
#      rpcrdma2_marshal of that connection; the responder counts it and
#      logs our properties, reverse-request support INLINE), the
#      connection settles on version 2 and no RPC is a probe;
#   2. 20090, NFSv3: disconnects injected during a 3 MiB write with
#      wsize=65536 (fail_sunrpc); every reconnect settles on version 2
#      again although its first RPC is a retransmitted WRITE larger than
#      1024 bytes; the data reads back identical;
#   3. 20090: a 1 MiB O_DIRECT read: rpcrdma2 names its Write chunk's
#      rkey in rdma_inv_handle, the responder invalidates it with Send
#      With Invalidate (its counter) and never another handle; mountstats
#      field 28 (remote_inv) counts it, rpcrdma2_mr_inv how=remote names
#      it and no LOCAL_INV is posted for that MR;
#   4. 20091: the CONNPROP probe goes unanswered; rpcrdma2 reconnects at
#      once and probes with the first RPC, the mount works (I/O checked)
#      and the connection is version 2;
#   5. 20092: the responder's properties (4 segments of 64 KiB), sent as
#      an RDMA2_CONNPROP continued over three messages, are reassembled
#      (two pieces traced as connprop_part, then the set) and traced;
#      rpcrdma2 lowers the transport's payload to 128 KiB (NFS
#      rsize/wsize follow), every Call carries at most 4 segments of at
#      most 64 KiB, NFS I/O mounted with rsize=wsize=1M is correct, and
#      the responder saw no Call breaking its properties;
#   6. 20093 (--connprop-twice): the responder's second RDMA2_CONNPROP
#      (sizes 1024) after its first (4096) is set aside (-00 §6.4.4:
#      rpcrdma2_reply class=connprop_part, one rpcrdma2_connprop
#      dir=received, the first), and a 3000-byte WRITE still goes inline.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
F=/sys/kernel/debug/fail_sunrpc
PROBE_XID=0x434f4e50
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
[ -d "$F" ] || tb_die "no $F: the kernel lacks CONFIG_FAIL_SUNRPC"

# stat_of PORT NAME: a responder counter.
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"
stats_now() { sleep 2; } # the responder writes its counters within 0.5 s
# The mount's "xprt: rdma" line of /proc/self/mountstats; field N counts
# from 1 after "xprt:" (the C client's layout, then rpcrdma2's own:
# 28 is remote_inv).
xprt_field() {
	local line
	read -r -a line <<<"$(awk -v m="$MNT" '$1 == "device" {cur = ($5 == m)}
		cur && $1 == "xprt:" && $2 == "rdma" {print; exit}' /proc/self/mountstats)"
	((${#line[@]} >= 33)) || tb_die "short xprt line: ${line[*]}"
	echo "${line[$1 + 1]}"
}
# Connection ids of rpcrdma2_connect events to PORT.
conns_to() { tb_trace_events connect "peer=$NFS_SERVER:$1 " | sed -n 's/.* conn=\([0-9]*\) .*/\1/p'; }
# The first of our CONNPROP and our Calls on connection C: "connprop" or
# "marshal" (or nothing).
first_of() {
	grep -E " rpcrdma2_(connprop: conn=$1 dir=sent|marshal: conn=$1 )" /sys/kernel/tracing/trace |
		head -n 1 | sed -n 's/.* rpcrdma2_\([a-z]*\): .*/\1/p'
}

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
tb_trace_rpcrdma2
head -c 3145728 /dev/urandom >/tmp/ref

tb_log "=== 1. port 20090, NFSv4.1: our CONNPROP is the first message"
NFS_RDMA_PORT=20090 tb_mount 4.1 rdma "$MNT"
tb_assert_proto "$MNT" rdma
ls "$MNT" >/dev/null
read -r -a cs <<<"$(conns_to 20090 | tr "\n" " ")"
((${#cs[@]} >= 1)) || tb_die "no connection to 20090 traced"
for c in "${cs[@]}"; do
	[ "$(first_of "$c")" = connprop ] || tb_die "conn $c: the first message was not our RDMA2_CONNPROP" # conformance: connprop-first
	[ -n "$(tb_trace_events version "conn=$c vers=2 ")" ] || tb_die "conn $c did not settle on version 2"
	[ -n "$(tb_trace_events connprop "conn=$c dir=received ")" ] || tb_die "conn $c: the responder's CONNPROP was not received"
done
[ -z "$(tb_trace_events marshal 'probe=1')" ] || tb_die "an RPC was the probe"
dmesg | grep "rpcrdma2: server answered in RPC-over-RDMA version 2: connection settled on version 2" >/dev/null ||
	tb_die "rpcrdma2 does not report a version 2 connection"
stats_now
(($(stat_of 20090 connprop_received) >= ${#cs[@]})) || tb_die "the responder received fewer CONNPROPs than connections"
(($(stat_of 20090 conn_v1) == 0)) || tb_die "the responder settled a connection on version 1"
grep "client properties (xid $PROBE_XID): max send 4096 recv buffer 4096 reverse requests 1" \
	"/results/ctl/responder-20090.log" >/dev/null ||
	tb_die "the responder did not log our properties: $(grep 'client properties' /results/ctl/responder-20090.log | tail -n 1)" # conformance: our-props
tb_log "${#cs[@]} connection(s): CONNPROP first (xid $PROBE_XID, reverse requests INLINE), settled on version 2"

tb_log "=== 3. port 20090: remote invalidation of rdma_inv_handle"
head -c 1048576 /tmp/ref >/tmp/ref1m
cp /tmp/ref1m "$MNT/big"
sync
echo 3 >/proc/sys/vm/drop_caches
rinv0=$(xprt_field 28)
inv0=$(stat_of 20090 invalidations)
echo >/sys/kernel/tracing/trace
dd if="$MNT/big" of=/tmp/back bs=1M count=1 iflag=direct status=none
cmp -s /tmp/ref1m /tmp/back || tb_die "the 1 MiB read returned other data"
r=$(tb_trace_events marshal 'reply=write ' | head -n 1)
[ -n "$r" ] || tb_die "the 1 MiB read offered no Write chunk"
rx=$(sed -n 's/.* xid=\(0x[0-9a-f]*\) .*/\1/p' <<<"$r")
remote=$(tb_trace_events mr_inv "xid=$rx how=remote ")
[ -n "$remote" ] || tb_die "xid $rx: no remote invalidation traced"
rkey=$(sed -n 's/.* handle=\(0x[0-9a-f]*\) .*/\1/p' <<<"$remote")
[ -n "$(tb_trace_events mr_reg "xid=$rx handle=$rkey ")" ] || tb_die "xid $rx: the invalidated rkey $rkey is none of its MRs" # conformance: inv-handle
nreg=$(tb_trace_events mr_reg "xid=$rx " | wc -l)
nlocal=$(tb_trace_events mr_inv "xid=$rx how=local " | sed -n 's/.* n=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
((nlocal == nreg - 1)) || tb_die "xid $rx: $nreg MRs, $nlocal invalidated locally (expected all but the remote one)"
rinv1=$(xprt_field 28)
((rinv1 > rinv0)) || tb_die "mountstats field 28 (remote_inv) did not grow: $rinv0 -> $rinv1" # conformance: inv-handle
stats_now
(($(stat_of 20090 invalidations) > inv0)) || tb_die "the responder sent no Send With Invalidate"
(($(stat_of 20090 inv_handle_foreign) == 0)) || tb_die "rpcrdma2 named a foreign rdma_inv_handle" # conformance: inv-handle
tb_log "xid $rx: rkey $rkey invalidated remotely ($nreg MRs, $nlocal LOCAL_INV); remote_inv $rinv0 -> $rinv1"
rm -f "$MNT/big"
tb_umount "$MNT"

tb_log "=== 2. port 20090, NFSv3: reconnects whose first RPC is a large WRITE stay on version 2"
echo >/sys/kernel/tracing/trace
dmesg -C
NFS_RDMA_PORT=20090 tb_mount 3 rdma "$MNT" wsize=65536,rsize=65536
ls "$MNT" >/dev/null
echo 0 >"$F/verbose"
echo 0 >"$F/probability"
echo 20 >"$F/interval"
echo 2 >"$F/times"
echo 100 >"$F/probability"
tb_step "write 3 MiB while disconnects are injected" timeout 300 dd if=/tmp/ref of="$MNT/ref" bs=1M oflag=direct status=none
echo 0 >"$F/probability"
[ -n "$(tb_trace_events disconnect 'reason=injected')" ] || tb_die "no disconnect was injected"
read -r -a cs <<<"$(conns_to 20090 | tr "\n" " ")"
((${#cs[@]} >= 2)) || tb_die "no reconnect (${#cs[@]} connection(s))"
big=0
for c in "${cs[@]}"; do
	[ -n "$(tb_trace_events version "conn=$c vers=2 ")" ] || tb_die "conn $c did not settle on version 2"
	[ "$(first_of "$c")" = connprop ] || tb_die "conn $c: the first message was not our RDMA2_CONNPROP" # conformance: connprop-first
	first=$(tb_trace_events marshal "conn=$c " | head -n 1)
	len=$(sed -n 's/.* rpc_len=\([0-9]*\) .*/\1/p' <<<"$first")
	tb_log "conn $c: first RPC ${len:-none} bytes: $(sed 's/.*rpcrdma2_marshal: //' <<<"$first")"
	[ -z "$first" ] || grep -q " vers=2 " <<<"$first" || tb_die "conn $c: its first RPC was not sent in version 2"
	((${len:-0} > 1024)) && big=$((big + 1))
done
((big >= 1)) || tb_die "no connection's first RPC was larger than 1024 bytes" # conformance: connprop-first
[ -z "$(tb_trace_events marshal 'probe=1')" ] || tb_die "an RPC was the probe"
tb_umount "$MNT"
tb_drop_caches
NFS_RDMA_PORT=20090 tb_mount 3 rdma "$MNT"
cmp /tmp/ref "$MNT/ref" || tb_die "data differs after the reconnects"
rm "$MNT/ref"
tb_umount "$MNT"
stats_now
(($(stat_of 20090 conn_v1) == 0)) || tb_die "the responder settled a connection on version 1"
tb_log "${#cs[@]} connections, all version 2; $big began with an RPC over 1024 bytes"

tb_log "=== 4. port 20091 (--no-connprop): the RPC probe after an unanswered CONNPROP"
echo >/sys/kernel/tracing/trace
dmesg -C
NFS_RDMA_PORT=20091 tb_mount 3 rdma "$MNT"
cp /tmp/ref "$MNT/nc" && cmp /tmp/ref "$MNT/nc" || tb_die "I/O through 20091 failed"
rm "$MNT/nc"
dmesg | grep "no answer to the RPC-over-RDMA version 2 probe (RDMA2_CONNPROP)" >/dev/null ||
	tb_die "rpcrdma2 did not report the unanswered CONNPROP"
[ -n "$(tb_trace_events disconnect 'reason=CONNPROP probe unanswered')" ] || tb_die "no disconnect of the unanswered probe traced"
[ -n "$(tb_trace_events marshal 'vers=2 .*probe=1')" ] || tb_die "no RPC probe after the unanswered CONNPROP" # conformance: probe-timeout
[ -n "$(tb_trace_events version 'vers=2 ')" ] || tb_die "the RPC probe did not settle version 2"
[ -z "$(tb_trace_events version 'vers=1 ')" ] || tb_die "a connection to 20091 fell back to version 1"
tb_umount "$MNT"
stats_now
(($(stat_of 20091 connprop_received) >= 1)) || tb_die "the responder on 20091 got no CONNPROP"
(($(stat_of 20091 connprop_sent) == 0)) || tb_die "the responder on 20091 sent a CONNPROP"
(($(stat_of 20091 conn_v2) >= 2)) || tb_die "the responder on 20091 saw fewer than two version 2 connections"
tb_log "unanswered CONNPROP: reconnected, RPC probe, version 2, I/O correct"

tb_log "=== 5. port 20092: 4 segments of 64 KiB at most"
echo >/sys/kernel/tracing/trace
dmesg -C
NFS_RDMA_PORT=20092 tb_mount 4.1 rdma "$MNT" rsize=1048576,wsize=1048576
[ -n "$(tb_trace_events connprop 'dir=received .*max_seg_size=65536 max_seg_count=4 ')" ] ||
	tb_die "the responder's segment properties were not traced"
parts=$(tb_trace_events reply 'class=connprop_part ' | wc -l)
((parts >= 2)) || tb_die "the responder's CONNPROP did not arrive continued ($parts pieces before the last)" # conformance: connprop-continued
dmesg | grep "segment limits allow RPC payloads of 131072 bytes at most" >/dev/null ||
	tb_die "rpcrdma2 did not lower its payload: $(dmesg | grep rpcrdma2 | tail -n 3)"
opts=$(awk -v m="$MNT" '$2 == m {print $4}' /proc/mounts)
rs=$(sed -n 's/.*rsize=\([0-9]*\).*/\1/p' <<<"$opts") ws=$(sed -n 's/.*wsize=\([0-9]*\).*/\1/p' <<<"$opts")
((rs <= 131072 && ws <= 131072)) || tb_die "rsize $rs / wsize $ws exceed 128 KiB" # conformance: segment-props
tb_log "mounted with rsize=1M,wsize=1M: the mount uses rsize=$rs wsize=$ws"
dd if=/tmp/ref of="$MNT/seg" bs=1M oflag=direct status=none
cp /tmp/ref "$MNT/seg2"
sync
echo 3 >/proc/sys/vm/drop_caches
cmp /tmp/ref "$MNT/seg" || tb_die "the direct write reads back different"
dd if="$MNT/seg2" of=/tmp/back bs=1M iflag=direct status=none
cmp /tmp/ref /tmp/back || tb_die "the direct read returned other data"
timeout 300 fio --name=segs --directory="$MNT" --size=2m --bsrange=4k-256k --rw=randrw \
	--ioengine=psync --direct=1 --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--output=/tmp/fio-segs.txt || tb_die "fio failed: $(tail -n 5 /tmp/fio-segs.txt)"
over=$(tb_trace_events marshal | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^n(read|write|reply)=/) {split($i, a, "="); n += a[2]}
	if (n > 4) print; n = 0}')
[ -z "$over" ] || tb_die "Calls with more than 4 segments: $(head -n 3 <<<"$over")" # conformance: segment-props
# The check above reads the fields it names: some Call had segments.
[ -n "$(tb_trace_events marshal 'nread=[1-9]|nwrite=[1-9]|nreply=[1-9]')" ] ||
	tb_die "no rpcrdma2_marshal with segments (nread=, nwrite=, nreply=): $(tb_trace_events marshal | tail -n 2)"
long=$(tb_trace_events mr_reg | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^length=/) {split($i, a, "="); if (a[2] > 65536) print}}')
[ -z "$long" ] || tb_die "segments longer than 64 KiB: $(head -n 3 <<<"$long")" # conformance: segment-props
nseg=$(tb_trace_events mr_reg | wc -l)
((nseg > 0)) || tb_die "no chunk was registered"
rm -f "$MNT/seg" "$MNT/seg2" "$MNT"/segs.*
tb_umount "$MNT"
stats_now
(($(stat_of 20092 prop_violations) == 0)) || tb_die "the responder saw Calls exceeding its segment properties"
(($(stat_of 20092 replies_write_chunk) > 0)) || tb_die "no Write chunk reached the responder on 20092"
(($(stat_of 20092 read_chunk_calls) > 0)) || tb_die "no Read chunk reached the responder on 20092"
tb_log "$nseg segments registered, none over 64 KiB, no Call over 4 segments"

tb_log "=== 6. port 20093 (--connprop-twice): a second RDMA2_CONNPROP changes nothing"
echo >/sys/kernel/tracing/trace
NFS_RDMA_PORT=20093 tb_mount 4.1 rdma "$MNT"
# Once both of the responder's CONNPROPs are in: the second follows the
# first at once, before any reply.
ls "$MNT" >/dev/null
head -c 3000 /dev/urandom >/tmp/twice
dd if=/tmp/twice of="$MNT/twice" bs=3000 count=1 oflag=direct status=none
echo 3 >/proc/sys/vm/drop_caches
cmp /tmp/twice "$MNT/twice" || tb_die "port 20093: the file reads back different"
rm -f "$MNT/twice"
got=$(tb_trace_events connprop 'dir=received')
(($(wc -l <<<"$got") == 1)) && grep -q "max_send=4096 recv_buf=4096 " <<<"$got" ||
	tb_die "port 20093: not exactly one RDMA2_CONNPROP taken, the first (4096-byte sizes): $got" # conformance: connprop-twice
[ -n "$(tb_trace_events reply 'class=connprop_part')" ] ||
	tb_die "port 20093: the second RDMA2_CONNPROP was not received and set aside (no rpcrdma2_reply class=connprop_part): $(tb_trace_events reply | head -n 5)"
# A 3000-byte WRITE fits the first CONNPROP's 4096 bytes, not the
# second's 1024: it went inline.
w=$(tb_trace_events marshal 'rpc_len=3[0-9][0-9][0-9] ')
[ -n "$w" ] && ! grep -qv 'call=inline' <<<"$w" ||
	tb_die "port 20093: the 3000-byte WRITE was not sent inline: ${w:-no Call of 3000-3999 bytes traced}" # conformance: connprop-twice
tb_umount "$MNT"
stats_now
(($(stat_of 20093 connprop_sent) >= 2)) ||
	tb_die "port 20093: the responder sent $(stat_of 20093 connprop_sent) RDMA2_CONNPROPs, not two"
tb_log "port 20093: the second RDMA2_CONNPROP was set aside; the thresholds stayed the first one's"

for p in 20090 20091 20092 20093; do
	(($(stat_of $p malformed) == 0)) || tb_die "the responder on $p saw malformed messages"
	! grep -q panicked "/results/ctl/responder-$p.log" || tb_die "the responder on $p panicked"
done
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 version 2 transport properties: all checks passed"
