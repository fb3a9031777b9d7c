#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: RPC-over-RDMA version 2 on the wire: rpcrdma2 through the user-space responder (tools/responder), NFSv3/4.0/4.1/4.2, every data path; v1-only fallback
# run.sh-options: --timeout 1500 --server-script tools/testing/integration/server/responder.sh
#
# Client script for tools/testing/vm/run.sh. The server runs the
# responder (server/responder.sh) on port 20050 (versions 2 and 1) and on
# port 20051 (--v1-only, answering a version 2 Call the way svcrdma does),
# both forwarding to the server's nfsd over TCP. For each port and each
# of NFSv3, v4.0, v4.1 and v4.2 mounted with proto=rdma over rpcrdma2:
#   1. the connection's version: on 20050 rpcrdma2 logs that the server
#      answered in version 2 and never falls back, and the responder's
#      counters show version 2 connections; on 20051 rpcrdma2 falls back
#      to version 1 after ERR_VERS and the responder counts ERR_VERS and
#      no version 2 connection;
#   2. files of 0, 1, 3000, 4097, 65537 and 1 MiB + 13 bytes written
#      (small WRITEs inline, large ones in Read chunks), caches dropped,
#      remounted and read back (small READs inline, large ones in Write
#      chunks) and compared by SHA-256;
#   3. a 1000-entry directory listed: on version 2 (ddp=1) its READDIR
#      replies are continued (RPCRDMA2_F_MORE) instead of offered a Reply
#      chunk, and the mount's counters show no Reply chunk segment at all
#      and continued replies (no chunk for metadata on v2); on
#      version 1 they come in Reply chunks;
#   4. a symlink with a 4000-byte target created and read back;
#   5. a short fio random read/write run with verify=crc32c;
#   6. NFSv3 again on 20050 with rpcrdma2's ddp=0: Long Calls reach the
#      responder as Position-Zero Read chunks;
#   7. afterwards, the responder's counters show inline replies, continued
#      replies (v2), Reply chunks (v1, and v2 with ddp=0: READs without
#      DDP), Write chunks and Read chunks, no malformed message from
#      rpcrdma2 and Sends With Invalidate: on version 2 of the rkey
#      rpcrdma2 names in rdma_inv_handle (never another handle), on
#      version 1 when the Call has one rkey (both set the RFC 8797 R bit:
#      the responder's --remote-invalidate);
#   8. on ports 20053 and 20054 (the responder's R bit clear) a 1 MiB
#      direct write and read complete with plain Sends only (RFC 8797
#      §4.1): the responder sends no Send With Invalidate and rpcrdma2
#      counts no remote invalidation;
#   9. Send buffers short on version 2 (rpcrdma2's fail_send_buf fault,
#      debugfs rpcrdma2/: every 3rd Call finds none, 200 times, far more
#      than the responder's 32 credits): a Call refused for that is not
#      counted against the credits, so a 1 MiB file read in 1 KiB READs
#      completes on the one connection (a credit counted per refusal
#      would stall it for good).

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 3000 4097 65537 1048589)
VERSIONS=(${RPCRDMA2_V2_VERSIONS:-3 4.0 4.1 4.2})
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

# stat_of PORT NAME: a responder counter; xprt_field N: field N of the
# mount's "xprt: rdma" line (lib/counters.sh
# FIELDS: 13 Reply chunk segments, 28 remote invalidations, 38 continued
# replies).
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"
stats_now() { # the responder writes its counters within 0.5 s of a change
	sleep 2
}

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
tb_random_files "$REF" f "${SIZES[@]}"
TARGET=$(printf 'y/%.0s' $(seq 1 2000))

one_version() { # PORT MODE VERS
	local port=$1 mode=$2 vers=$3 s f
	tb_log "=== port $port ($mode), NFS vers=$vers"
	dmesg -C
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	dmesg | grep -E "rpcrdma2: connected to $NFS_SERVER:$port \(conn [0-9]+\): probing RPC-over-RDMA version 2" >/dev/null ||
		tb_die "vers=$vers: rpcrdma2 did not probe version 2 on port $port"
	local dir=$MNT/v2test-$mode-$vers
	rm -rf "$dir"
	mkdir -p "$dir"
	for s in "${SIZES[@]}"; do
		cp "$REF/f$s" "$dir/f$s"
	done
	mkdir "$dir/big"
	(cd "$dir/big" && seq -f 'entry-with-a-long-name-%06g' 1 1000 | xargs touch)
	ln -s "$TARGET" "$dir/link"
	tb_umount "$MNT"
	tb_drop_caches
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	for s in "${SIZES[@]}"; do
		f=$dir/f$s
		[ "$(sha256sum <"$f")" = "$(sha256sum <"$REF/f$s")" ] ||
			tb_die "vers=$vers port $port: $f differs after the round trip" # conformance: v2-data
	done
	[ "$(ls "$dir/big" | wc -l)" = 1000 ] || tb_die "vers=$vers port $port: the directory does not list 1000 entries"
	[ "$(readlink "$dir/link")" = "$TARGET" ] || tb_die "vers=$vers port $port: the symlink target differs"
	timeout 300 fio --name=v2 --directory="$dir" --size=2m --bsrange=4k-64k --rw=randrw \
		--ioengine=psync --direct=1 --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output="/tmp/fio-$mode-$vers.txt" ||
		tb_die "vers=$vers port $port: fio failed: $(tail -n 5 "/tmp/fio-$mode-$vers.txt")"
	grep -q "err= 0" "/tmp/fio-$mode-$vers.txt" || tb_die "vers=$vers port $port: fio reported errors"
	local reply_segs cont
	reply_segs=$(xprt_field 13) cont=$(xprt_field 38)
	tb_log "vers=$vers port $port: Reply chunk segments $reply_segs, continued replies $cont"
	if [ "$mode" = v2 ] && [ "$(cat /sys/module/rpcrdma2/parameters/ddp)" = Y ]; then
		((reply_segs == 0)) ||
			tb_die "vers=$vers port $port: $reply_segs Reply chunk segments on version 2 (metadata replies should be continued)" # conformance: v2-no-reply-chunk
		((cont > 0)) || tb_die "vers=$vers port $port: no continued reply on version 2 (the READDIR of 1000 entries)" # conformance: v2-no-reply-chunk
	fi
	rm -rf "$dir"
	if [ "$mode" = v2 ]; then
		dmesg | grep "rpcrdma2: server answered in RPC-over-RDMA version 2: connection settled on version 2" >/dev/null ||
			tb_die "vers=$vers: rpcrdma2 does not report a version 2 connection"
		! dmesg | grep "continuing in version 1" >/dev/null ||
			tb_die "vers=$vers: rpcrdma2 fell back to version 1 against a version 2 responder"
	else
		dmesg | grep "probe with ERR_VERS: continuing in version 1" >/dev/null ||
			tb_die "vers=$vers: rpcrdma2 did not fall back to version 1 against --v1-only" # conformance: v1-only-fallback
	fi
	if dmesg | grep -E "rpcrdma2: reply: (dropped|protocol error|xid .* failed)" >/dev/null; then
		dmesg | grep "rpcrdma2:" | tail -n 20
		tb_die "vers=$vers port $port: rpcrdma2 logged reply errors"
	fi
	tb_umount "$MNT"
}

for vers in "${VERSIONS[@]}"; do
	one_version 20050 v2 "$vers"
done
stats_now 20050
cat /results/ctl/responder-20050.stats
(($(stat_of 20050 conn_v2) >= ${#VERSIONS[@]})) || tb_die "responder: fewer version 2 connections than mounts"
(($(stat_of 20050 conn_v1) == 0)) || tb_die "responder: a connection settled on version 1"
(($(stat_of 20050 connprop_sent) >= 1)) || tb_die "responder: no RDMA2_CONNPROP sent"
for c in replies_inline replies_continued replies_write_chunk read_chunk_calls; do
	(($(stat_of 20050 $c) > 0)) || tb_die "responder (v2): counter $c is 0" # conformance: v2-paths
done
(($(stat_of 20050 invalidations) > 0)) || tb_die "responder (v2): no Send With Invalidate of an rdma_inv_handle"
(($(stat_of 20050 inv_handle_foreign) == 0)) || tb_die "responder (v2): an rdma_inv_handle named none of its Call's handles" # conformance: inv-handle
tb_log "responder (v2): $(stat_of 20050 invalidations) Sends With Invalidate"
(($(stat_of 20050 malformed) == 0)) || tb_die "responder (v2): rpcrdma2 sent malformed messages" # conformance: v2-no-malformed

# Without direct data placement: Long Calls (RDMA2_NOMSG with a
# Position-Zero Read chunk) and Long Replies (Reply chunks) on version 2.
tb_log "=== port 20050 (v2), rpcrdma2 ddp=0"
echo 0 >/sys/module/rpcrdma2/parameters/ddp
p0=$(stat_of 20050 position_zero_calls)
one_version 20050 v2 3
echo 1 >/sys/module/rpcrdma2/parameters/ddp
stats_now
(($(stat_of 20050 position_zero_calls) > p0)) ||
	tb_die "ddp=0: no Position-Zero Read chunk reached the responder" # conformance: position-zero
# READs without DDP keep a Reply chunk on version 2.
(($(stat_of 20050 replies_reply_chunk) > 0)) || tb_die "responder (v2, ddp=0): counter replies_reply_chunk is 0"
tb_log "ddp=0: $(($(stat_of 20050 position_zero_calls) - p0)) Long Calls in Position-Zero Read chunks"

for vers in "${VERSIONS[@]}"; do
	one_version 20051 v1 "$vers"
done
stats_now 20051
cat /results/ctl/responder-20051.stats
(($(stat_of 20051 err_vers) >= ${#VERSIONS[@]})) || tb_die "responder (--v1-only): fewer ERR_VERS than mounts"
(($(stat_of 20051 conn_v2) == 0)) || tb_die "responder (--v1-only): a connection settled on version 2"
for c in conn_v1 replies_inline replies_reply_chunk replies_write_chunk read_chunk_calls invalidations; do
	(($(stat_of 20051 $c) > 0)) || tb_die "responder (v1): counter $c is 0"
done

# RFC 8797 §4.1: Send With Invalidate only when both peers set the R bit.
# Ports 20053 (versions 2 and 1) and 20054 (--v1-only) advertise it clear:
# a 1 MiB direct write and read (Read and Write chunks) there get plain
# Sends only; rpcrdma2 (R bit set) counts no remote invalidation.
plain_sends() { # PORT MODE
	local port=$1 mode=$2 rinv
	tb_log "=== port $port ($mode), R bit clear: plain Sends"
	NFS_RDMA_PORT=$port tb_mount 3 rdma "$MNT"
	head -c 1048576 "$REF/f1048589" >/tmp/ref1m
	dd if=/tmp/ref1m of="$MNT/plain" bs=1M oflag=direct status=none
	tb_drop_caches
	dd if="$MNT/plain" of=/tmp/back1m bs=1M iflag=direct status=none
	cmp -s /tmp/ref1m /tmp/back1m || tb_die "port $port: the 1 MiB read returned other data"
	rinv=$(xprt_field 28)
	rm -f "$MNT/plain"
	tb_umount "$MNT"
	stats_now
	(($(stat_of "$port" replies_write_chunk) > 0)) || tb_die "port $port: no reply used a Write chunk"
	(($(stat_of "$port" invalidations) == 0)) || tb_die "port $port: Send With Invalidate with the responder's R bit clear" # conformance: r-bit-plain-send
	((rinv == 0)) || tb_die "port $port: rpcrdma2 counted $rinv remote invalidations with the responder's R bit clear" # conformance: r-bit-plain-send
}
plain_sends 20053 v2
plain_sends 20054 v1

tb_log "=== port 20050 (v2): Send buffers short (fail_send_buf)"
SB=/sys/kernel/debug/rpcrdma2/fail_send_buf
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
[ -d "$SB" ] || tb_die "no $SB: rpcrdma2 has no fault injection here (CONFIG_FAULT_INJECTION_DEBUG_FS)"
NFS_RDMA_PORT=20050 tb_mount 3 rdma "$MNT" rsize=1024,wsize=1024
cp "$REF/f1048589" "$MNT/short"
tb_umount "$MNT"
NFS_RDMA_PORT=20050 tb_mount 3 rdma "$MNT" rsize=1024,wsize=1024
tb_trace_rpcrdma2
echo 0 >"$SB/verbose"
echo 3 >"$SB/interval"
echo 200 >"$SB/times"
echo 100 >"$SB/probability"
timeout 300 cmp "$REF/f1048589" "$MNT/short" ||
	tb_die "v2: reading 1 MiB with Send buffers short failed or stalled (credits counted for Calls never sent?)"
echo 0 >"$SB/probability"
left=$(cat "$SB/times")
((left == 0)) || tb_die "fail_send_buf fired $((200 - left)) times, not 200: the read did not exercise the refusals"
n=$(tb_trace_events disconnect | wc -l)
((n == 0)) || tb_die "v2: the connection ended during the Send-buffer shortage"
tb_log "v2 Send buffers short: 200 refusals, 1 MiB read in 1 KiB READs on one connection"
rm "$MNT/short"
tb_umount "$MNT"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 version 2 through the responder: all checks passed"
