# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The cases of the Message Continuation tests, sourced by
# rpcrdma2-v2-continuation.sh and rpcrdma2-v2-credit-reading.sh, whose
# server runs the responders of server/responder-continuation.sh. The
# test calls cont_setup first, then any of:
#   one_case PORT VERS FRWR   one mount through the responder on PORT
#       (NFS version VERS, rpcrdma2's frwr=FRWR): files of 3000, 65536
#       and 200003 bytes written, caches dropped, remounted, read back and
#       compared with cmp; a 300-entry directory listed (READDIR replies
#       over 1024 bytes); the connection on version 2; continued reply
#       pieces traced (rpcrdma2_piece dir=reply) and counted by mountstats
#       (field 38) and, with frwr=0, continued Call pieces (dir=call,
#       field 39) and no memory registered; no reply or send error and no
#       kernel warning logged. Adds the mount's credit grants sent
#       (field 40) to GRANTS.
#   concurrent_case PORT [SIZE]   eight RPCs in flight at once on an
#       inline-only NFSv4.1 mount with 256 KiB rsize/wsize (fio: a
#       verifying writer and a reader, SIZE per job, default 8m):
#       continued Calls and replies traced, fio completes within 300 s
#       (no stall), no disconnect traced (no overrun).
# stat_of PORT NAME (a responder counter) and xprt_field N (field N of
# the mount's "xprt: rdma" line) come from lib/counters.sh.

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(3000 65536 200003)
ENTRIES=300
GRANTS=0

# shellcheck source=SCRIPTDIR/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

# cont_setup: load rpcrdma2 with its tracepoints on and write the
# reference files.
cont_setup() {
	[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
	dmesg -C
	tb_step "insmod rpcrdma2.ko" insmod "$KO"
	[ -e /sys/module/rpcrdma2/parameters/frwr ] || tb_die "no module parameter frwr"
	tb_trace_rpcrdma2
	tb_random_files "$REF" f "${SIZES[@]}"
}

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
	# shellcheck disable=SC2012 # the listing (READDIR) is the point; the names are plain
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

# Many continued messages in flight both ways at once: inline only
# (frwr=0), 256 KiB rsize/wsize, so every WRITE is a continued Call of 64
# pieces and every READ a continued reply of 256 pieces of 1 KiB, from
# eight RPCs in flight (a writing job with verify and a reading job,
# iodepth 4 each). Each side keeps running out of the other's credits;
# this stalls for good if the responder returns credits when its
# messages are built rather than when they leave.
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
	# The responder counts a message of ours beyond the credits it granted
	# (its --credit-word other reading returns none, and counts none).
	(($(stat_of "$port" credit_overruns) == 0)) ||
		tb_die "port $port: the responder took $(stat_of "$port" credit_overruns) message(s) beyond its credit limit" # conformance: no-overrun
	tb_log "port $port: waits for credits traced: $(tb_trace_events credit_wait | wc -l)"
	rm -rf "$dir"
	tb_umount "$MNT"
}
