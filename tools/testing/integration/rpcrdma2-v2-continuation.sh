#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: version 2 Message Continuation both ways and credit grants against the responder: continued replies, inline-only rpcrdma2 (frwr=0) continuing its Calls and waiting for credits mid-Call, the responder's grant patterns (prompt, exact, lazy, 4 credits)
# run.sh-options: --timeout 1800 --server-script tools/testing/integration/server/responder-continuation.sh
#
# Client script for tools/testing/vm/run.sh. The server runs eight
# responders (server/responder-continuation.sh); this test uses six:
# 20080 continues every reply over 1024 bytes, 20081 and 20082 too with
# the exact and lazy grant patterns and 8 credits, 20083 gives 4 credits
# and continues only the replies it must, 20086 continues like 20080 but
# its first three pieces carry 1, 2 and 3 bytes, 20087 continues every
# reply over 64 bytes, a READ's reduced Reply with its Write list in the
# last piece (20084 and 20085, the
# other reading of the credit word, are rpcrdma2-v2-credit-reading's). Each
# case mounts through one of them, with rpcrdma2's chunks on (frwr=1:
# READs in Write chunks, WRITEs in Read chunks, the rest inline or
# continued) or off (frwr=0: inline only, so every Call and Reply over
# 4096 bytes is continued); the cases are lib/continuation.sh's:
#   1. (one_case) files of 3000, 65536 and 200003 bytes written, caches
#      dropped, remounted, read back and compared with cmp; a 300-entry
#      directory listed (READDIR replies over 1024 bytes);
#   2. (one_case) the connection is on version 2; rpcrdma2 traced
#      continued reply pieces (rpcrdma2_piece dir=reply) and, with
#      frwr=0, continued Call pieces (dir=call); mountstats counts
#      continued replies (field 38) and, with frwr=0, continued Calls
#      (field 39); no reply error and no kernel warning is logged;
#   3. (concurrent_case) eight RPCs in flight at once on an inline-only
#      256 KiB mount (fio, a verifying writer and a reader) through
#      20080, 20081 and 20082: continued Calls and replies interleave and
#      both sides run out of each other's credits; no stall, no error, no
#      reconnect;
#   4. (20087) a 200003-byte file read back identical through READs
#      whose data comes in Write chunks and whose reduced Replies are
#      continued, their Write list in the last piece (-00 §4.5.3): the
#      READs offered Write chunks, mountstats counts continued replies,
#      no reply failed an RPC, no reply error or warning logged;
#   5. afterwards the responders' counters show continued replies,
#      continued Call pieces reassembled, the asynchronous credit grants
#      of their patterns, rpcrdma2's own grants received, replies that
#      waited for rpcrdma2's credits, and no malformed message.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

# one_case, concurrent_case, cont_setup, GRANTS; stat_of (lib/counters.sh).
# shellcheck source=SCRIPTDIR/lib/continuation.sh
. "$SRC/tools/testing/integration/lib/continuation.sh"

cont_setup

for vers in 3 4.1; do
	one_case 20080 "$vers" 1
	one_case 20080 "$vers" 0
done
one_case 20081 4.1 0
one_case 20082 4.1 0
one_case 20083 3 0
# Pieces of 1, 2 and 3 bytes first (-00 §4.5.2: any boundary).
one_case 20086 4.1 0

# A READ's reduced Reply continued, its Write list in the last piece
# (-00 §4.5.3): the data arrives through the Write chunk, the rest in
# 64-byte pieces.
tb_log "=== port 20087: reduced Replies continued, the Write list in their last piece"
echo 1 >/sys/module/rpcrdma2/parameters/frwr
dmesg -C
NFS_RDMA_PORT=20087 tb_mount 4.1 rdma "$MNT"
mkdir -p "$MNT/col"
cp "$REF/f200003" "$MNT/col/f"
sync
tb_umount "$MNT"
tb_drop_caches
NFS_RDMA_PORT=20087 tb_mount 4.1 rdma "$MNT"
echo >/sys/kernel/tracing/trace
cont0=$(xprt_field 38)
cmp "$REF/f200003" "$MNT/col/f" ||
	tb_die "port 20087: the file read with its READs' reduced Replies continued differs" # conformance: chunks-on-last
# The READs (Calls offering a Write chunk) whose replies ended with a
# continued last piece.
n=0
for x in $(tb_trace_events marshal 'nwrite=[1-9]' | sed -n 's/.* xid=\(0x[0-9a-f]*\) .*/\1/p' | sort -u); do
	[ -n "$(tb_trace_events reply "xid=$x .*class=last_piece")" ] && n=$((n + 1))
done
((n > 0)) ||
	tb_die "port 20087: no READ offering a Write chunk got a continued reply: $(tb_trace_events marshal 'nwrite=[1-9]' | tail -n 2)" # conformance: chunks-on-last
(($(xprt_field 38) > cont0)) ||
	tb_die "port 20087: mountstats counts no continued reply" # conformance: chunks-on-last
[ -z "$(tb_trace_events reply 'class=fail')" ] ||
	tb_die "port 20087: a reply failed its RPC: $(tb_trace_events reply 'class=fail' | head -n 3)" # conformance: chunks-on-last
if dmesg | grep -E "WARNING:|BUG:|rpcrdma2: reply:"; then
	tb_die "port 20087: kernel warnings or reply errors (above)"
fi
tb_log "port 20087: 200003 bytes read back identical; $n READs with Write chunks got continued reduced Replies"
rm -rf "$MNT/col"
tb_umount "$MNT"

# Eight RPCs in flight, continued Calls and replies both ways, through
# the prompt grant pattern and the exact and lazy ones (8 credits), whose
# grants carry the credits they were built with.
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
(($(stat_of 20086 replies_continued) > 0)) || tb_die "responder 20086: no reply continued"
(($(stat_of 20086 malformed) == 0)) || tb_die "responder 20086: rpcrdma2 sent malformed messages"
(($(stat_of 20080 credit_waits) > 0)) ||
	tb_die "responder 20080: no reply waited for rpcrdma2's credits (200 KiB READs in 1024-byte pieces)"
((GRANTS > 0)) || tb_die "rpcrdma2 sent no asynchronous credit grant" # conformance: grants-sent
(($(stat_of 20080 grants_received) + $(stat_of 20081 grants_received) + $(stat_of 20082 grants_received) > 0)) ||
	tb_die "the responders received none of rpcrdma2's credit grants" # conformance: grants-sent

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "version 2 Message Continuation and credit grants: all checks passed"
