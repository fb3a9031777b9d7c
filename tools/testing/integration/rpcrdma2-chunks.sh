#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 chunks (Read, Write, Reply, Long Call) and remote invalidation: NFSv3 and NFSv4.1 with the default rsize/wsize
# run.sh-options: --timeout 900 --server-script tools/testing/integration/server/trace-chunks.sh
#
# Client script for tools/testing/vm/run.sh (runs in the client guest),
# rpcrdma2 on the client, stock nfsd/svcrdma on the server (which traces
# the chunks it decodes, the Write chunks it returns and its Sends With
# Invalidate: server/trace-chunks.sh). For NFSv3 and NFSv4.1, mounted
# with the default (1 MiB) rsize/wsize:
#   1. files of 0, 1, 4097, 65537, 1 MiB + 13 and 3 MiB bytes written
#      (NFS WRITE data in Read chunks at the data's XDR position),
#      caches dropped, remounted, read back (READ data in Write chunks,
#      unaligned lengths included) and compared by SHA-256; 1 MiB
#      written and read back with O_DIRECT;
#   2. a 1000-entry directory listed (READDIR replies in Reply chunks);
#   3. a symlink with a 4000-byte target created (its target in a Read
#      chunk) and read back (READLINK);
#   4. a short fio random read/write run with verify=crc32c;
#   5. /proc/self/mountstats (the C client's rdma fields, plus rpcrdma2's
#      remote-invalidation count) shows Read, Write and Reply chunk
#      segments, Long Calls, bytes written by the server, MRs invalidated
#      by the server and locally, no bad replies and no orphaned MRs;
#      rpcrdma2 logged no error;
#   6. NFSv3 with rpcrdma2's ddp=0: the same files written as Long
#      Calls (RDMA_NOMSG, Position-Zero Read chunk) and read back as Long
#      Replies (Reply chunk), no Write chunk;
#   7. the server's trace shows Read segments at position 0 (Long Call)
#      and at a non-zero position (Read chunk), Write chunk segments
#      returned, and Sends With Invalidate;
#   8. NFSv3: disconnects injected (fail_sunrpc) while a 3 MiB file is
#      written and read back with O_DIRECT: the data arrives intact; the
#      same with posts refused (rpcrdma2's fail_post_send, debugfs
#      rpcrdma2/): each drops the connection and nothing hangs;
#   9. a shallow MR pool (rpcrdma2's max_mrs=8): sixteen 1 MiB O_DIRECT
#      reads at once, whose Write chunks need more MRs than there are,
#      complete intact, and an RPC that found too few MRs waited for them
#      to come back (woken by their return, remote invalidations too)
#      instead of retrying at once: at most two refusals per READ
#      (mountstats' empty_sendctx_q), where a busy retry makes hundreds;
#  10. rmmod rpcrdma2 succeeds; run.sh fails the test on any kernel
#      warning in the client's log.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 4097 65537 1048589 3145728)
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
tb_random_files "$REF" f "${SIZES[@]}"
head -c 1048576 /dev/urandom >"$REF/direct"
TARGET=$(printf 'x/%.0s' $(seq 1 2000))

# rdma_line, rdma_field NAME: the mount's "xprt: rdma" line of
# /proc/self/mountstats, a field of it by name.
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

for vers in 3 4.1; do
	tb_log "=== NFS vers=$vers, default rsize/wsize"
	dmesg -C
	tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	dmesg | grep "rpcrdma2: connected to $NFS_SERVER:$NFS_RDMA_PORT" >/dev/null ||
		tb_die "vers=$vers: the mount did not connect through rpcrdma2"
	grep -E "^(opts|	xprt):?" /proc/self/mountstats | tail -2 || true
	for s in "${SIZES[@]}"; do
		cp "$REF/f$s" "$MNT/f$s"
	done
	timeout 120 dd if="$REF/direct" of="$MNT/direct" bs=1M count=1 oflag=direct status=none ||
		tb_die "vers=$vers: 1 MiB O_DIRECT write failed"
	mkdir "$MNT/dir"
	for i in $(seq 1 1000); do : >"$MNT/dir/entry-with-a-longish-name-$i"; done
	ln -s "$TARGET" "$MNT/link"
	# Counters are per mount: the writes' chunks are counted here.
	rdma_line
	rd=$(rdma_field read_chunk) nomsg=$(rdma_field nomsg) bad=$(rdma_field bad_reply)
	tb_log "vers=$vers: writes: read_chunk_segments=$rd nomsg_calls=$nomsg bad_replies=$bad"
	((rd > 0)) || tb_die "vers=$vers: no Read chunk segment counted"
	((bad == 0)) || tb_die "vers=$vers: $bad bad replies"
	tb_umount "$MNT"
	tb_drop_caches
	tb_mount "$vers" rdma "$MNT"
	for s in "${SIZES[@]}"; do
		a=$(sha256sum <"$REF/f$s") b=$(sha256sum <"$MNT/f$s")
		[ "$a" = "$b" ] || tb_die "vers=$vers: f$s differs after the round trip" # conformance: chunk-data
	done
	timeout 120 dd if="$MNT/direct" of=/tmp/direct bs=1M count=1 iflag=direct status=none ||
		tb_die "vers=$vers: 1 MiB O_DIRECT read failed"
	cmp -s "$REF/direct" /tmp/direct || tb_die "vers=$vers: the O_DIRECT MiB differs" # conformance: chunk-data
	n=$(ls -1 "$MNT/dir" | wc -l)
	[ "$n" = 1000 ] || tb_die "vers=$vers: listed $n entries, expected 1000"
	[ "$(readlink "$MNT/link")" = "$TARGET" ] ||
		tb_die "vers=$vers: the 4000-byte symlink target differs"
	tb_step "fio randrw 4k-64k verify=crc32c" timeout 300 fio --name=verify --directory="$MNT" \
		--rw=randrw --bsrange=4k-64k --size=8m --numjobs=2 --iodepth=8 --ioengine=libaio \
		--direct=1 --verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio.out
	rdma_line
	wr=$(rdma_field write_chunk) reply=$(rdma_field reply_chunk) mrs=$(rdma_field mrs_allocated)
	bad=$(rdma_field bad_reply) written=$(rdma_field rdma_reply) offered=$(rdma_field rdma_request)
	rinv=$(rdma_field remote_inv) linv=$(rdma_field local_inv) orphaned=$(rdma_field orphaned)
	tb_log "vers=$vers: reads: write_chunk_segments=$wr reply_chunk_segments=$reply" \
		"bytes offered=$offered written=$written MRs=$mrs remote_inv=$rinv local_inv=$linv" \
		"orphaned=$orphaned bad_replies=$bad"
	((wr > 0)) || tb_die "vers=$vers: no Write chunk segment counted" # conformance: v1-chunks
	((reply > 0)) || tb_die "vers=$vers: no Reply chunk segment counted" # conformance: v1-chunks
	((written > 0 && written <= offered)) || tb_die "vers=$vers: bytes written $written, offered $offered"
	((mrs > 0)) || tb_die "vers=$vers: no MR allocated"
	((rinv > 0)) || tb_die "vers=$vers: the server invalidated no MR (remote invalidation)" # conformance: v1-remote-inv
	((linv > 0)) || tb_die "vers=$vers: no MR was invalidated locally"
	((orphaned == 0)) || tb_die "vers=$vers: $orphaned MRs orphaned"
	((bad == 0)) || tb_die "vers=$vers: $bad bad replies"
	rm -rf "$MNT"/f* "$MNT/dir" "$MNT/link" "$MNT/direct" "$MNT"/verify.*
	tb_umount "$MNT"
	if dmesg | grep -E "rpcrdma2: (send|reply|release): "; then
		tb_die "vers=$vers: rpcrdma2 logged errors"
	fi
	tb_log "vers=$vers: ${#SIZES[@]} files, O_DIRECT, a 1000-entry directory and a long symlink verified"
done

# Without direct data placement: Long Calls and Long Replies.
tb_log "=== NFS vers=3, default rsize/wsize, ddp=0"
echo 0 >/sys/module/rpcrdma2/parameters/ddp
tb_mount 3 rdma "$MNT"
for s in "${SIZES[@]}"; do
	cp "$REF/f$s" "$MNT/f$s"
done
nomsg=$(rdma_field nomsg) rd=$(rdma_field read_chunk)
tb_log "ddp=0: writes: nomsg_calls=$nomsg read_chunk_segments=$rd"
((nomsg > 0)) || tb_die "ddp=0: no Long Call (nomsg) counted" # conformance: long-call
tb_umount "$MNT"
tb_drop_caches
tb_mount 3 rdma "$MNT"
for s in "${SIZES[@]}"; do
	cmp -s "$REF/f$s" "$MNT/f$s" || tb_die "ddp=0: f$s differs after the round trip"
done
rdma_line
reply=$(rdma_field reply_chunk) wr=$(rdma_field write_chunk) bad=$(rdma_field bad_reply)
tb_log "ddp=0: reads: reply_chunk_segments=$reply write_chunk_segments=$wr"
((reply > 0)) || tb_die "ddp=0: no Reply chunk segment counted"
((wr == 0)) || tb_die "ddp=0: $wr Write chunk segments although DDP is off"
((bad == 0)) || tb_die "ddp=0: $bad bad replies"
rm -f "$MNT"/f*
tb_umount "$MNT"
echo 1 >/sys/module/rpcrdma2/parameters/ddp

# What the server saw: Read segments at position 0 (Long Calls) and at
# a non-zero position (NFS WRITE data), Write chunk segments it filled,
# and Sends With Invalidate (the R bit in our private data).
TRACE=/results/ctl/server-trace.txt
[ -s "$TRACE" ] || tb_die "no server trace in $TRACE"
for pat in 'svcrdma_decode_rseg:.* position=0 ' 'svcrdma_decode_rseg:.* position=[1-9]' \
	'svcrdma_encode_wseg:' 'svcrdma_post_send:.* inv_rkey=0x'; do
	n=$(grep -c -E "$pat" "$TRACE" || true)
	tb_log "server trace: $n events matching '$pat'"
	((n > 0)) || tb_die "the server's trace has no '$pat'"
done

# Disconnects injected while Long Calls and Long Replies are in flight:
# registrations of the old connection are dropped with it, the RPCs are
# sent again (registered anew) on the next one, and the data arrives
# intact.
F=/sys/kernel/debug/fail_sunrpc
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
if [ -d "$F" ]; then
	inject() { # N: N disconnects, one every 5 transmissions, quietly
		echo 0 >"$F/verbose"
		echo 0 >"$F/probability"
		echo 5 >"$F/interval"
		echo "$1" >"$F/times"
		echo 100 >"$F/probability"
	}
	tb_log "=== NFS vers=3, default rsize/wsize, disconnects during chunked I/O"
	dmesg -C
	tb_trace_rpcrdma2
	tb_mount 3 rdma "$MNT"
	ls "$MNT" >/dev/null
	inject 3
	tb_step "copy 3 MiB while disconnects are injected" timeout 300 cp "$REF/f3145728" "$MNT/ref"
	sync
	inject 3
	timeout 300 dd if="$MNT/ref" of=/tmp/back bs=1M iflag=direct status=none ||
		tb_die "O_DIRECT read across disconnects failed"
	echo 0 >"$F/probability"
	cmp -s "$REF/f3145728" /tmp/back || tb_die "data read across disconnects differs"
	tb_umount "$MNT"
	tb_drop_caches
	tb_mount 3 rdma "$MNT"
	cmp -s "$REF/f3145728" "$MNT/ref" || tb_die "data written across disconnects differs"
	n=$(tb_trace_events disconnect 'reason=injected' | wc -l)
	c=$(dmesg | grep -c "rpcrdma2: connected to" || true)
	tb_log "chunked I/O: $n disconnects injected, $c connects"
	((n >= 1)) || tb_die "no disconnect was injected"
	rm -f "$MNT/ref"
	tb_umount "$MNT"

	# Posts refused (rpcrdma2's fail_post_send: the post of a Call's Send,
	# REG_MRs chained before it, fails): each drops the connection, the
	# RPC goes again on the next one, nothing hangs.
	P=/sys/kernel/debug/rpcrdma2/fail_post_send
	[ -d "$P" ] || tb_die "no $P: rpcrdma2 has no fault injection here (CONFIG_FAULT_INJECTION_DEBUG_FS)"
	tb_log "=== NFS vers=3, default rsize/wsize, posts refused during chunked I/O"
	tb_trace_rpcrdma2
	tb_mount 3 rdma "$MNT"
	ls "$MNT" >/dev/null
	echo 0 >"$P/verbose"
	echo 2 >"$P/interval"
	echo 3 >"$P/times"
	echo 100 >"$P/probability"
	tb_step "copy 3 MiB while posts are refused" timeout 300 cp "$REF/f3145728" "$MNT/ref"
	sync
	(($(cat "$P/times") == 0)) || tb_die "fail_post_send did not fire 3 times during the copy"
	echo 2 >"$P/times"
	timeout 300 dd if="$MNT/ref" of=/tmp/back bs=1M iflag=direct status=none ||
		tb_die "O_DIRECT read with posts refused failed"
	(($(cat "$P/times") == 0)) || tb_die "fail_post_send did not fire 2 times during the read"
	echo 0 >"$P/probability"
	cmp -s "$REF/f3145728" /tmp/back || tb_die "data read with posts refused differs"
	n=$(tb_trace_events disconnect | wc -l)
	tb_log "posts refused: 5 refused, $n connections ended"
	((n >= 5)) || tb_die "5 refused posts, $n connections ended (each must drop its connection)"
	tb_umount "$MNT"
	tb_drop_caches
	tb_mount 3 rdma "$MNT"
	cmp -s "$REF/f3145728" "$MNT/ref" || tb_die "data written with posts refused differs"
	rm -f "$MNT/ref"
	tb_umount "$MNT"
else
	tb_log "no $F (CONFIG_FAIL_SUNRPC): disconnects during chunked I/O not tested"
fi

tb_log "=== NFS vers=3, a shallow MR pool (max_mrs=8)"
echo 8 >/sys/module/rpcrdma2/parameters/max_mrs
tb_mount 3 rdma "$MNT"
cp "$REF/f3145728" "$MNT/big"
tb_umount "$MNT"
tb_mount 3 rdma "$MNT"
mrs=$(rdma_field mrs_allocated)
((mrs == 8)) || tb_die "max_mrs=8: the connection registered $mrs MRs"
for i in $(seq 0 15); do
	timeout 300 dd if="$MNT/big" of="/tmp/part$i" bs=1M skip=$((i % 3)) count=1 iflag=direct status=none &
done
fail=0
for i in $(seq 0 15); do
	wait -n || fail=1
done
((fail == 0)) || tb_die "max_mrs=8: a read failed or stalled"
for i in 0 1 2; do
	dd if="$REF/f3145728" of="/tmp/want$i" bs=1M skip="$i" count=1 status=none
done
for i in $(seq 0 15); do
	cmp -s "/tmp/part$i" "/tmp/want$((i % 3))" || tb_die "max_mrs=8: read $i differs"
done
rm -f /tmp/part* /tmp/want*
reads=$(awk -v m="$MNT" '$1 == "device" {cur = ($5 == m)} cur && $1 == "READ:" {print $2; exit}' /proc/self/mountstats)
waits=$(rdma_field empty_sendctx)
tb_log "max_mrs=8: $reads READs, $waits refusals for want of MRs or Send buffers"
((reads >= 16)) || tb_die "max_mrs=8: only $reads READs counted"
((waits <= 2 * reads)) || tb_die "max_mrs=8: $waits refusals for $reads READs: RPCs waiting for MRs retry without waiting"
rm -f "$MNT/big"
tb_umount "$MNT"
echo 0 >/sys/module/rpcrdma2/parameters/max_mrs

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 chunks: all checks passed"
