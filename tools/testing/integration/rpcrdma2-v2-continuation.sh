#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: version 2 Message Continuation both ways and credit grants against the responder: continued replies, inline-only rpcrdma2 (frwr=0) continuing its Calls and waiting for credits mid-Call, the responder's grant patterns (prompt, exact, lazy, 4 credits)
# run.sh-options: --timeout 1800 --server-script tools/testing/integration/server/responder-continuation.sh
#
# Client script for tools/testing/vm/run.sh. The server runs six
# responders (server/responder-continuation.sh): 20080 continues every
# reply over 1024 bytes, 20081 and 20082 too with the exact and lazy
# grant patterns and 8 credits, 20083 gives 4 credits and continues only
# the replies it must, 20084 and 20085 continue as 20080 with 8 credits
# and credit words in the other reading of -00 §4.3.1. Each case mounts through one of them, with
# rpcrdma2's chunks on (frwr=1: READs in Write chunks, WRITEs in Read
# chunks, the rest inline or continued) or off (frwr=0: inline only, so
# every Call and Reply over 4096 bytes is continued):
#   1. files of 3000, 65536 and 200003 bytes written, caches dropped,
#      remounted, read back and compared with cmp; a 300-entry
#      directory listed (READDIR replies over 1024 bytes);
#   2. the connection is on version 2; rpcrdma2 traced continued reply
#      pieces (rpcrdma2_piece dir=reply) and, with frwr=0, continued Call
#      pieces (dir=call); mountstats counts continued replies (field 38)
#      and, with frwr=0, continued Calls (field 39); no reply error and
#      no kernel warning is logged;
#   3. eight RPCs in flight at once on an inline-only 256 KiB mount
#      (fio, a verifying writer and a reader) through 20080, 20081 and
#      20082: continued Calls and replies interleave and both sides run
#      out of each other's credits; no stall, no error, no reconnect;
#   4. afterwards the responders' counters show continued replies,
#      continued Call pieces reassembled, the asynchronous credit grants
#      of their patterns, rpcrdma2's own grants received, replies that
#      waited for rpcrdma2's credits, and no malformed message;
#   5. 20084 and 20085 send their credit words in the other reading of
#      -00 §4.3.1 (the grant in the low half; the high half the same, or
#      zero): the cases of 1 and 3 through them complete on one
#      connection per mount (no stall, no overrun).

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(3000 65536 200003)
ENTRIES=300
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

# stat_of PORT NAME: a responder counter; xprt_field N: field N of the
# mount's "xprt: rdma" line (lib/counters.sh
# FIELDS: 38 continued replies, 39 continued Calls, 40 grants sent).
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
[ -e /sys/module/rpcrdma2/parameters/frwr ] || tb_die "no module parameter frwr"
tb_trace_rpcrdma2
tb_random_files "$REF" f "${SIZES[@]}"
GRANTS=0

one_case() { # PORT VERS FRWR
	local port=$1 vers=$2 frwr=$3 s dir n cont_replies cont_calls grants
	tb_log "=== port $port, NFS vers=$vers, frwr=$frwr"
	echo "$frwr" >/sys/module/rpcrdma2/parameters/frwr
	dmesg -C
	echo >/sys/kernel/tracing/trace
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	dir=$MNT/cont-$port-$vers-$frwr
	rm -rf "$dir"
	mkdir -p "$dir/big"
	for s in "${SIZES[@]}"; do
		cp "$REF/f$s" "$dir/f$s"
	done
	(cd "$dir/big" && seq -f 'a-rather-long-directory-entry-name-%06g' 1 "$ENTRIES" | xargs touch)
	sync
	# The WRITEs went on this mount's transport (the next mount has its own).
	cont_calls=$(xprt_field 39) grants=$(xprt_field 40)
	tb_umount "$MNT"
	tb_drop_caches
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	for s in "${SIZES[@]}"; do
		cmp "$REF/f$s" "$dir/f$s" || tb_die "port $port vers=$vers frwr=$frwr: f$s differs after the round trip" # conformance: cont-data
	done
	n=$(ls "$dir/big" | wc -l)
	((n == ENTRIES)) || tb_die "port $port vers=$vers frwr=$frwr: the directory lists $n entries, not $ENTRIES"
	cont_replies=$(xprt_field 38) grants=$((grants + $(xprt_field 40)))
	tb_log "port $port vers=$vers frwr=$frwr: mountstats continued replies $cont_replies (reading), continued Calls $cont_calls (writing), credit grants sent $grants"
	GRANTS=$((GRANTS + grants))
	rm -rf "$dir"
	dmesg | grep -q "rpcrdma2: server answered in RPC-over-RDMA version 2: connection settled on version 2" ||
		tb_die "port $port vers=$vers: the connection is not on version 2"
	((cont_replies > 0)) || tb_die "port $port vers=$vers frwr=$frwr: mountstats counts no continued reply" # conformance: cont-replies
	[ -n "$(tb_trace_events piece 'dir=reply .*more=1')" ] ||
		tb_die "port $port vers=$vers frwr=$frwr: no continued reply piece traced"
	if ((frwr == 0)); then
		((cont_calls > 0)) || tb_die "port $port vers=$vers frwr=0: mountstats counts no continued Call" # conformance: cont-calls
		[ -n "$(tb_trace_events piece 'dir=call .*more=1')" ] ||
			tb_die "port $port vers=$vers frwr=0: no continued Call piece traced"
		[ -z "$(tb_trace_events mr_reg)" ] ||
			tb_die "port $port vers=$vers frwr=0: memory was registered on an inline-only connection"
	fi
	if dmesg | grep -E "rpcrdma2: (reply: |send: )" >/dev/null; then
		dmesg | grep "rpcrdma2:" | tail -n 20
		tb_die "port $port vers=$vers frwr=$frwr: rpcrdma2 logged reply or send errors"
	fi
	if dmesg | grep -E "WARNING:|BUG:|Oops|refcount_t|general protection" >/dev/null; then
		dmesg | tail -n 60
		tb_die "port $port vers=$vers frwr=$frwr: kernel warning"
	fi
	tb_umount "$MNT"
}

for vers in 3 4.1; do
	one_case 20080 "$vers" 1
	one_case 20080 "$vers" 0
done
one_case 20081 4.1 0
one_case 20082 4.1 0
one_case 20083 3 0

# Many continued messages in flight both ways at once: inline only
# (frwr=0), 256 KiB rsize/wsize, so every WRITE is a continued Call of 64
# pieces and every READ a continued reply of 256 pieces of 1 KiB, from
# eight RPCs in flight (a writing job with verify and a reading job,
# iodepth 4 each). Each side keeps running out of the other's credits;
# this stalls for good if the responder returns credits when its
# messages are built rather than when they leave. The same
# with the exact and lazy grant patterns (8 credits), whose grants carry
# the credits they were built with.
concurrent_case() { # PORT [SIZE]: fio's file size per job (default 8m)
	local port=$1 size=${2:-8m} dir
	tb_log "=== port $port: continued Calls and replies from 8 RPCs in flight (fio, frwr=0, 256 KiB)"
	echo 0 >/sys/module/rpcrdma2/parameters/frwr
	dmesg -C
	echo >/sys/kernel/tracing/trace
	NFS_RDMA_PORT=$port tb_mount 4.1 rdma "$MNT" rsize=262144,wsize=262144
	dir=$MNT/conc-$port
	rm -rf "$dir"
	mkdir -p "$dir"
	timeout 300 fio --directory="$dir" --size="$size" --bs=256k --iodepth=4 --ioengine=libaio \
		--direct=1 --name=w --rw=randwrite --verify=crc32c --verify_fatal=1 \
		--name=r --rw=randread --output=/tmp/fio-conc.txt ||
		tb_die "port $port: fio failed or stalled (exit $?): $(tail -n 5 /tmp/fio-conc.txt)" # conformance: no-stall
	grep -E "^ +(READ|WRITE):" /tmp/fio-conc.txt || true
	[ -n "$(tb_trace_events piece 'dir=call .*more=1')" ] ||
		tb_die "port $port: no continued Call piece traced"
	[ -n "$(tb_trace_events piece 'dir=reply .*more=1')" ] ||
		tb_die "port $port: no continued reply piece traced"
	[ -z "$(tb_trace_events disconnect)" ] ||
		tb_die "port $port: the connection was dropped: $(tb_trace_events disconnect | head -n 3)" # conformance: no-overrun
	tb_log "port $port: waits for credits traced: $(tb_trace_events credit_wait | wc -l)"
	rm -rf "$dir"
	tb_umount "$MNT"
}
for port in 20080 20081 20082; do
	concurrent_case $port
done
echo 1 >/sys/module/rpcrdma2/parameters/frwr
sleep 2
for port in 20080 20081 20082 20083; do
	tb_log "responder $port: $(tr '\n' ' ' <"/results/ctl/responder-$port.stats")"
	(($(stat_of $port conn_v2) >= 1)) || tb_die "responder $port: no version 2 connection"
	(($(stat_of $port conn_v1) == 0)) || tb_die "responder $port: a connection settled on version 1"
	(($(stat_of $port malformed) == 0)) || tb_die "responder $port: rpcrdma2 sent malformed messages"
	(($(stat_of $port replies_continued) > 0)) || tb_die "responder $port: no reply continued"
	(($(stat_of $port continuations_received) > 0)) || tb_die "responder $port: no continued Call piece received"
done
for port in 20081 20082 20083; do
	(($(stat_of $port grants_sent) > 0)) || tb_die "responder $port: no asynchronous credit grant sent"
done
(($(stat_of 20080 credit_waits) > 0)) ||
	tb_die "responder 20080: no reply waited for rpcrdma2's credits (200 KiB READs in 1024-byte pieces)"
((GRANTS > 0)) || tb_die "rpcrdma2 sent no asynchronous credit grant" # conformance: grants-sent
(($(stat_of 20080 grants_received) + $(stat_of 20081 grants_received) + $(stat_of 20082 grants_received) > 0)) ||
	tb_die "the responders received none of rpcrdma2's credit grants" # conformance: grants-sent

# The other reading of the credit word (-00 §4.3.1): the responder's
# low half is its grant (8, never zero), the high half 8 (20084) or 0
# (20085). rpcrdma2 takes the grant as its limit: continued Calls and
# replies from eight RPCs in flight neither stall (fio completes within
# its timeout) nor overrun the responder's Receives (an overrun is an RNR
# error that drops the connection: none is traced). With 8 credits and
# every word read the other way the concurrent case is slow (about 1200
# waits for credits per 8 MiB), so it moves 2 MiB per job here: still
# eight RPCs in flight, each side out of the other's credits.
for port in 20084 20085; do
	one_case $port 4.1 0
	concurrent_case $port 2m
	sleep 2
	(($(stat_of $port malformed) == 0)) || tb_die "responder $port: rpcrdma2 sent malformed messages"
	(($(stat_of $port continuations_received) > 0)) || tb_die "responder $port: no continued Call piece received" # conformance: credit-other-reading
	# one_case mounts twice, concurrent_case once: one connection each
	(($(stat_of $port connections) == 3)) || tb_die "responder $port: $(stat_of $port connections) connections, not one per mount (a connection was lost)" # conformance: credit-other-reading
done
echo 1 >/sys/module/rpcrdma2/parameters/frwr

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "version 2 Message Continuation and credit grants: all checks passed"
