#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Client script for `make demo` (runs in the client guest): shows, as a
# user would type it, rpcrdma2 being loaded and NFS running over it.

set -uo pipefail
# shellcheck source=vm/guest/lib.sh
. "$TESTBED_LIB"

show() {
	printf '\n\033[1mclient# %s\033[0m\n' "$*"
	bash -c "$*" 2>&1
}

show "uname -r"
show "rdma link show"
show "modinfo $SRC/rpcrdma2.ko | grep -E '^(name|description|license|vermagic):'"
dmesg -C
show "insmod $SRC/rpcrdma2.ko"
show "dmesg | grep -E 'rpcrdma2|RPC:'"
mkdir -p /mnt/nfs
show "mount -t nfs -o vers=4.1,proto=rdma,port=$NFS_RDMA_PORT,rsize=1024,wsize=1024 $NFS_SERVER:$NFS_EXPORT /mnt/nfs"
show "grep /mnt/nfs /proc/mounts"
show "dmesg | grep 'rpcrdma2: connected'"
show "head -c 300000 /dev/urandom > /tmp/demo && cp /tmp/demo /mnt/nfs/demo && sha256sum /tmp/demo /mnt/nfs/demo && ls -l /mnt/nfs"
show "grep -A1 -m1 'xprt:' /proc/self/mountstats"
show "rm /mnt/nfs/demo && umount /mnt/nfs && rmmod rpcrdma2 && echo unloaded"
printf '\nrpcrdma2 carries every RPC inline for now (Read/Write/Reply chunks come\n'
printf 'with FRWR), hence rsize=wsize=1024 above; larger RPCs fail with EMSGSIZE.\n'
