#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 Long Call / Long Reply chunks: NFSv3 and NFSv4.1 with the default rsize/wsize
# run.sh-options: --timeout 900
#
# Client script for tools/testing/vm/run.sh (runs in the client guest),
# rpcrdma2 on the client, stock nfsd/svcrdma on the server. For NFSv3
# and NFSv4.1, mounted with the default (1 MiB) rsize/wsize, so that
# large Calls go as Long Calls (RDMA_NOMSG + Position-Zero Read chunk)
# and large Replies come through a Reply chunk:
#   1. files of 0, 1, 4097, 65537, 1 MiB + 13 and 3 MiB bytes written,
#      caches dropped, remounted, read back and compared by SHA-256;
#      1 MiB written and read back with O_DIRECT;
#   2. a 1000-entry directory listed (READDIR replies in Reply chunks);
#   3. a symlink with a 4000-byte target read back (READLINK);
#   4. /proc/self/mountstats counts reply chunks, Long (nomsg) calls and
#      allocated MRs, and no bad replies; rpcrdma2 logged no error;
#   5. NFSv3: disconnects injected (fail_sunrpc) while a 3 MiB file is
#      written and read back with O_DIRECT: the data arrives intact;
#   6. rmmod rpcrdma2 succeeds; run.sh fails the test on any kernel
#      warning in the client's log.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$SRC/rpcrdma2.ko
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 4097 65537 1048589 3145728)
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
mkdir -p "$REF"
for s in "${SIZES[@]}"; do
	head -c "$s" /dev/urandom >"$REF/f$s"
done
head -c 1048576 /dev/urandom >"$REF/direct"
TARGET=$(printf 'x/%.0s' $(seq 1 2000))

# The rdma fields of the xprt: line, counted from its end (C layout,
# xprt_rdma_print_stats): $(NF - k).
rdma_field() {
	awk -v m="$MNT" -v k="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $(NF - k); exit}' \
		/proc/self/mountstats
}
# k for: reply_chunk_count, bad_reply_count, nomsg_call_count, mrs_allocated
K_REPLY=14 K_BAD=7 K_NOMSG=6 K_MRS=3

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
	# Counters are per mount: the writes' Long Calls are counted here.
	nomsg=$(rdma_field $K_NOMSG) bad=$(rdma_field $K_BAD)
	tb_log "vers=$vers: writes: mountstats nomsg_calls=$nomsg bad_replies=$bad"
	((nomsg > 0)) || tb_die "vers=$vers: no Long Call (nomsg) counted"
	((bad == 0)) || tb_die "vers=$vers: $bad bad replies"
	tb_umount "$MNT"
	tb_drop_caches
	tb_mount "$vers" rdma "$MNT"
	for s in "${SIZES[@]}"; do
		a=$(sha256sum <"$REF/f$s") b=$(sha256sum <"$MNT/f$s")
		[ "$a" = "$b" ] || tb_die "vers=$vers: f$s differs after the round trip"
	done
	timeout 120 dd if="$MNT/direct" of=/tmp/direct bs=1M count=1 iflag=direct status=none ||
		tb_die "vers=$vers: 1 MiB O_DIRECT read failed"
	cmp -s "$REF/direct" /tmp/direct || tb_die "vers=$vers: the O_DIRECT MiB differs"
	n=$(ls -1 "$MNT/dir" | wc -l)
	[ "$n" = 1000 ] || tb_die "vers=$vers: listed $n entries, expected 1000"
	[ "$(readlink "$MNT/link")" = "$TARGET" ] ||
		tb_die "vers=$vers: the 4000-byte symlink target differs"
	grep "xprt:" /proc/self/mountstats | grep rdma || true
	reply=$(rdma_field $K_REPLY) mrs=$(rdma_field $K_MRS) bad=$(rdma_field $K_BAD)
	tb_log "vers=$vers: reads: mountstats reply_chunks=$reply mrs_allocated=$mrs bad_replies=$bad"
	((reply > 0)) || tb_die "vers=$vers: no reply chunk counted"
	((mrs > 0)) || tb_die "vers=$vers: no MR allocated"
	((bad == 0)) || tb_die "vers=$vers: $bad bad replies"
	rm -rf "$MNT"/f* "$MNT/dir" "$MNT/link" "$MNT/direct"
	tb_umount "$MNT"
	if dmesg | grep -E "rpcrdma2: (send|reply|release): "; then
		tb_die "vers=$vers: rpcrdma2 logged errors"
	fi
	tb_log "vers=$vers: ${#SIZES[@]} files, O_DIRECT, a 1000-entry directory and a long symlink verified"
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
	n=$(dmesg | grep -c "rpcrdma2: inject_disconnect: disconnecting" || true)
	c=$(dmesg | grep -c "rpcrdma2: connected to" || true)
	tb_log "chunked I/O: $n disconnects injected, $c connects"
	((n >= 1)) || tb_die "no disconnect was injected"
	rm -f "$MNT/ref"
	tb_umount "$MNT"
else
	tb_log "no $F (CONFIG_FAIL_SUNRPC): disconnects during chunked I/O not tested"
fi

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 chunks: all checks passed"
