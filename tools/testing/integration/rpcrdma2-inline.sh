#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 inline data path: NFSv3 and NFSv4.1 I/O with inline-sized RPCs
#
# Client script for tools/testing/vm/run.sh (runs in the client guest),
# rpcrdma2 on the client, stock nfsd/svcrdma on the server:
#   1. for NFSv3 and NFSv4.1, mounted with rsize=wsize=1024 so that every
#      RPC fits inline: the mount really runs over rpcrdma2 (its connect
#      message, mountstats xprt: rdma with sends and receives counted);
#      files of many sizes written, caches dropped, remounted, read back
#      and compared by SHA-256; a 100-entry directory listed; no Call
#      went as a Long Call (mountstats nomsg_call_count stays 0: inline
#      sizes still go inline); what an administrator's tools read from
#      the mount: nfs-common's mountstats counts RPC requests and READs,
#      mountstats --xprt shows the RDMA transport's counters, nfsiostat reports operations per second for
#      the mount, and SUNRPC's sysfs has the transport's xprt_info
#      (/sys/kernel/sunrpc/xprt-switches/*/xprt-*-rdma/); unmounted;
#   2. rmmod rpcrdma2 succeeds; run.sh fails the test on any kernel
#      warning in the client's log.
# Larger RPCs (the default rsize/wsize) use chunks: rpcrdma2-chunks.sh.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 511 1024 4095 4096 4097 65537 300000)
SMALL=rsize=1024,wsize=1024
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
tb_random_files "$REF" f "${SIZES[@]}"

# xprt_field N: field N of the mount's "xprt: rdma" line (6: sends,
# 7: receives).
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

# admin_tools VERS: mountstats, nfsiostat (nfs-common) and SUNRPC's sysfs
# on the mount at $MNT, after its traffic (Documentation/admin-guide.rst,
# "Statistics").
admin_tools() {
	local vers=$1 ms mx io req sent ops info
	# mountstats: the RPC and per-operation statistics; --xprt: the
	# transport's counters.
	ms=$(mountstats "$MNT") || tb_die "vers=$vers: mountstats $MNT failed"
	sent=$(sed -n 's/^[[:space:]]*\([0-9]*\) RPC requests sent,.*/\1/p' <<<"$ms" | head -n 1)
	((${sent:-0} > 0)) || tb_die "vers=$vers: mountstats counts no RPC requests sent: $ms"
	grep -q '^READ:$' <<<"$ms" || tb_die "vers=$vers: mountstats has no READ statistics: $ms"
	mx=$(mountstats --xprt "$MNT") || tb_die "vers=$vers: mountstats --xprt $MNT failed"
	grep -q '^[[:space:]]*Transport protocol: rdma$' <<<"$mx" ||
		tb_die "vers=$vers: mountstats --xprt shows no RDMA transport: $mx"
	req=$(sed -n 's/^[[:space:]]*RPC requests: \([0-9]*\)$/\1/p' <<<"$mx" | head -n 1)
	((${req:-0} > 0)) || tb_die "vers=$vers: mountstats --xprt counts no RPC requests: $mx"
	grep -q '^[[:space:]]*Read segments: [0-9]*$' <<<"$mx" ||
		tb_die "vers=$vers: mountstats --xprt shows no RDMA chunk counters: $mx"
	io=$(nfsiostat "$MNT") || tb_die "vers=$vers: nfsiostat $MNT failed"
	grep -q " mounted on $MNT:\$" <<<"$io" || tb_die "vers=$vers: nfsiostat does not report $MNT: $io"
	ops=$(awk '$1 == "ops/s" && $2 == "rpc" {getline; print $1; exit}' <<<"$io")
	awk -v o="${ops:-0}" 'BEGIN { exit !(o > 0) }' ||
		tb_die "vers=$vers: nfsiostat reports ${ops:-no} ops/s: $io"
	grep -q '^read:' <<<"$io" || tb_die "vers=$vers: nfsiostat has no read statistics: $io"
	info=$(cat /sys/kernel/sunrpc/xprt-switches/switch-*/xprt-*-rdma/xprt_info 2>/dev/null || true)
	grep -q "^dst_port=$NFS_RDMA_PORT\$" <<<"$info" ||
		tb_die "vers=$vers: no xprt_info of an rdma transport to port $NFS_RDMA_PORT in /sys/kernel/sunrpc: $info"
	tb_log "vers=$vers: mountstats: $req RPC requests over rdma; nfsiostat: $ops ops/s; xprt_info: $(grep -E '^(max_num_slots|num_reqs)=' <<<"$info" | tr '\n' ' ')"
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
		[ "$a" = "$b" ] || tb_die "vers=$vers: f$s differs after the round trip" # conformance: v1-inline
	done
	n=$(find "$MNT/dir" -type f | wc -l)
	[ "$n" = 100 ] || tb_die "vers=$vers: listed $n entries, expected 100"
	sends=$(xprt_field 6) recvs=$(xprt_field 7)
	tb_log "vers=$vers: mountstats sends=$sends recvs=$recvs"
	((sends > 0 && recvs > 0)) || tb_die "vers=$vers: mountstats counts no traffic"
	# nomsg_call_count: field 21 after "xprt: rdma" (admin guide table).
	nomsg=$(xprt_field 21)
	((nomsg == 0)) || tb_die "vers=$vers: $nomsg inline-sized Calls went as Long Calls"
	admin_tools "$vers"
	rm -rf "$MNT"/f* "$MNT/dir"
	tb_umount "$MNT"
	tb_log "vers=$vers: ${#SIZES[@]} files and a 100-entry directory verified"
done

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 inline: all checks passed"
