#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Client script for `make demo` (runs in the client guest): shows, as a
# user would type it, rpcrdma2 being loaded and used.

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
show "dmesg | grep -E 'rpcrdma2|RPC:|KTAP|ok [0-9]|# Totals'"
show "grep rpcrdma2 /proc/modules"
mkdir -p /mnt/nfs
show "mount -t nfs -o vers=4.1,proto=rdma,port=$NFS_RDMA_PORT $NFS_SERVER:$NFS_EXPORT /mnt/nfs"
show "dmesg | tail -n 2"
show "rmmod rpcrdma2 && echo unloaded"
printf '\nThe data path is not implemented yet: until it is, proto=rdma mounts over\n'
printf 'rpcrdma2 fail with EPROTONOSUPPORT, as shown. For comparison, the kernel'\''s\n'
printf 'C client on the same testbed:\n'
tb_allow_rpcrdma_autoload
show "modprobe -d $MODS rpcrdma && mount -t nfs -o vers=4.1,proto=rdma,port=$NFS_RDMA_PORT $NFS_SERVER:$NFS_EXPORT /mnt/nfs && grep /mnt/nfs /proc/mounts"
show "dd if=/dev/urandom of=/mnt/nfs/demo bs=1M count=4 status=none && sha256sum /mnt/nfs/demo && ls -l /mnt/nfs"
show "umount /mnt/nfs && rmmod rpcrdma && echo done"
