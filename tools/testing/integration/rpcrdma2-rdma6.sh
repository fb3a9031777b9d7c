#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: netid rdma6: NFSv3 and NFSv4.1 mounts over IPv6 (proto=rdma6) to svcrdma, data written and read back, on rxe's IPv6 GID
# run.sh-options: --server-script tools/testing/integration/server/ipv6.sh
#
# Client script for tools/testing/vm/run.sh. Both guests get an IPv6
# address on the testbed link (fd00:100::1 the server,
# server/ipv6.sh; fd00:100::2 the client). For NFSv3 and NFSv4.1:
#   1. mount [fd00:100::1]:/export with proto=rdma6: the mount uses
#      transport rdma6 (/proc/mounts, and the xprt: line of mountstats is
#      rpcrdma2's, "rdma");
#   2. rpcrdma2 logged its connection to the server's IPv6 address;
#   3. files written, caches dropped, remounted, read back and compared
#      (inline and chunked sizes);
#   4. rmmod rpcrdma2 succeeds; run.sh fails the test on any kernel
#      warning in the client's log.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(1 4097 300000 1048576)
SERVER6=fd00:100::1
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

tb_step "IPv6 address fd00:100::2 on eth0" ip -6 addr add fd00:100::2/64 dev eth0 nodad
# (The server script added its address before the client started.)
dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
tb_random_files "$REF" f "${SIZES[@]}"

for vers in 3 4.1; do
	tb_log "=== NFS vers=$vers over rdma6"
	dmesg -C
	NFS_SERVER="[$SERVER6]" tb_mount "$vers" rdma6 "$MNT" "port=$NFS_RDMA_PORT"
	opts=$(awk -v m="$MNT" '$2 == m {print $4}' /proc/mounts | tail -n 1)
	case ",$opts," in
	*",proto=rdma6,"*) ;;
	*) tb_die "vers=$vers: /proc/mounts has '$opts', expected proto=rdma6" ;;
	esac
	xprt=$(awk -v m="$MNT" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $2}' \
		/proc/self/mountstats | tail -n 1)
	[ "$xprt" = rdma ] || tb_die "vers=$vers: mountstats shows xprt '${xprt:-none}', not rpcrdma2's rdma"
	dmesg | grep -q "rpcrdma2: connected to \[fd00:100:0:0:0:0:0:1\]:$NFS_RDMA_PORT" ||
		tb_die "vers=$vers: rpcrdma2 logged no connection to [fd00:100::1]:$NFS_RDMA_PORT: $(dmesg | grep rpcrdma2 | tail -n 3)"
	dir=$MNT/v6-$vers
	rm -rf "$dir"
	mkdir -p "$dir"
	for s in "${SIZES[@]}"; do
		cp "$REF/f$s" "$dir/f$s"
	done
	sync
	tb_umount "$MNT"
	tb_drop_caches
	NFS_SERVER="[$SERVER6]" tb_mount "$vers" rdma6 "$MNT" "port=$NFS_RDMA_PORT"
	for s in "${SIZES[@]}"; do
		cmp "$REF/f$s" "$dir/f$s" || tb_die "vers=$vers: f$s differs after the round trip over rdma6"
	done
	rm -rf "$dir"
	tb_umount "$MNT"
done

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "netid rdma6: all checks passed"
