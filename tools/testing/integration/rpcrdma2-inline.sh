#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 inline data path: NFSv3 and NFSv4.1 I/O, too-big RPCs fail cleanly
#
# Client script for tools/testing/vm/run.sh (runs in the client guest),
# rpcrdma2 on the client, stock nfsd/svcrdma on the server:
#   1. for NFSv3 and NFSv4.1, mounted with rsize=wsize=1024 so that every
#      RPC fits inline: the mount really runs over rpcrdma2 (its connect
#      message, mountstats xprt: rdma with sends and receives counted);
#      files of many sizes written, caches dropped, remounted, read back
#      and compared by SHA-256; a 100-entry directory listed; unmounted;
#   2. with the default rsize/wsize, a 64 KiB O_DIRECT write fails with
#      EMSGSIZE and a 64 KiB O_DIRECT read fails with EIO (the server's
#      ERR_CHUNK), each with rpcrdma2's message, and nothing hangs;
#   3. rmmod rpcrdma2 succeeds; run.sh fails the test on any kernel
#      warning in the client's log.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$SRC/rpcrdma2.ko
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 511 1024 4095 4096 4097 65537 300000)
SMALL=rsize=1024,wsize=1024
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
mkdir -p "$REF"
for s in "${SIZES[@]}"; do
	head -c "$s" /dev/urandom >"$REF/f$s"
done

# xprt: rdma <port> <bind> <connect> <ctime> <idle> <sends> <recvs> ...
xprt_field() {
	awk -v m="$MNT" -v f="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $(f + 2); exit}' \
		/proc/self/mountstats
}

for vers in 3 4.1; do
	tb_log "=== NFS vers=$vers, inline-sized RPCs ($SMALL)"
	dmesg -C
	tb_mount "$vers" rdma "$MNT" "$SMALL"
	tb_assert_proto "$MNT" rdma
	dmesg | grep "rpcrdma2: connected to $NFS_SERVER:$NFS_RDMA_PORT" >/dev/null ||
		tb_die "vers=$vers: the mount did not connect through rpcrdma2"
	for s in "${SIZES[@]}"; do
		cp "$REF/f$s" "$MNT/f$s"
	done
	mkdir "$MNT/dir"
	for i in $(seq 1 100); do : >"$MNT/dir/entry-with-a-longish-name-$i"; done
	tb_umount "$MNT"
	tb_drop_caches
	tb_mount "$vers" rdma "$MNT" "$SMALL"
	for s in "${SIZES[@]}"; do
		a=$(sha256sum <"$REF/f$s") b=$(sha256sum <"$MNT/f$s")
		[ "$a" = "$b" ] || tb_die "vers=$vers: f$s differs after the round trip"
	done
	n=$(find "$MNT/dir" -type f | wc -l)
	[ "$n" = 100 ] || tb_die "vers=$vers: listed $n entries, expected 100"
	sends=$(xprt_field 6) recvs=$(xprt_field 7)
	tb_log "vers=$vers: mountstats sends=$sends recvs=$recvs"
	((sends > 0 && recvs > 0)) || tb_die "vers=$vers: mountstats counts no traffic"
	rm -rf "$MNT"/f* "$MNT/dir"
	tb_umount "$MNT"
	tb_log "vers=$vers: ${#SIZES[@]} files and a 100-entry directory verified"
done

tb_log "=== too big for inline: default rsize/wsize"
tb_mount 3 rdma "$MNT"
cp "$REF/f65537" "$MNT/seed" 2>/dev/null && tb_die "a 64 KiB write went through without chunks?"
dmesg -C
rc=0
timeout 60 dd if="$REF/f65537" of="$MNT/big" bs=65536 count=1 oflag=direct status=none 2>/tmp/dd.err || rc=$?
cat /tmp/dd.err
((rc != 124)) || tb_die "a too-big write hung"
grep -q "Message too long" /tmp/dd.err || tb_die "a too-big write did not fail with EMSGSIZE"
dmesg | grep "rpcrdma2: send: Call of [0-9]* bytes exceeds the inline limit of [0-9]*" >/dev/null ||
	tb_die "no message from rpcrdma2 about the too-big call"
tb_umount "$MNT"
# A file to read: written through an inline-sized mount.
tb_mount 3 rdma "$MNT" "$SMALL"
cp "$REF/f65537" "$MNT/big"
tb_umount "$MNT"
tb_drop_caches
tb_mount 3 rdma "$MNT"
dmesg -C
rc=0
timeout 60 dd if="$MNT/big" of=/dev/null bs=65536 count=1 iflag=direct status=none 2>/tmp/dd.err || rc=$?
cat /tmp/dd.err
((rc != 124)) || tb_die "a too-big read hung"
((rc != 0)) || tb_die "a 64 KiB read went through without chunks?"
dmesg | grep "rpcrdma2: reply: server answered ERR_CHUNK" >/dev/null ||
	tb_die "no message from rpcrdma2 about the reply that did not fit"
rm -f "$MNT/big" "$MNT/seed"
tb_umount "$MNT"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 inline: all checks passed"
