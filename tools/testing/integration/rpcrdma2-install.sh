#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: make install: modprobe rpcrdma2 and autoload by a proto=rdma mount from the installed tree, never rpcrdma
# kernel-variant: default
#
# Client script for tools/testing/vm/run.sh (runs in the client guest).
# tools/testing/install-check.sh (make check's module phase) ran
# `make install` into $SRC/.install-stage, a copy of the testbed kernel's
# module tree. Here that tree becomes the guest's /lib/modules/$KREL and
# its modprobe.d snippet is installed; the kernel's module autoloads go to
# plain modprobe (not the testbed's wrapper). Then, as on a user's machine:
#   1. modinfo rpcrdma2 finds the installed module and its parameters;
#   2. a proto=rdma mount with nothing loaded autoloads rpcrdma2 (the
#      snippet turns request_module("rpcrdma") into rpcrdma2); rpcrdma is
#      not loaded; the mount works;
#   3. umount, then modprobe -r rpcrdma2 unloads it.
# Default kernel only: the staged tree holds the module built for it.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

STAGE=$SRC/.install-stage
MNT=/mnt/nfs
tree=$STAGE/lib/modules/$KREL
[ -f "$tree/updates/rpcrdma2.ko" ] ||
	tb_die "no installed rpcrdma2.ko in $tree (tools/testing/install-check.sh runs make install)"

ln -sfn "$tree" "/usr/lib/modules/$KREL"
cp "$STAGE/etc/modprobe.d/rpcrdma2.conf" /etc/modprobe.d/rpcrdma2.conf
echo /usr/sbin/modprobe >/proc/sys/kernel/modprobe

tb_log "modinfo rpcrdma2:"
modinfo rpcrdma2 | grep -E '^(filename|description|parm):' || tb_die "modinfo does not find rpcrdma2"
modinfo -F filename rpcrdma2 | grep -q '/updates/rpcrdma2.ko$' || tb_die "modinfo: not the installed module"

! grep -Eq '^(rpcrdma|rpcrdma2) ' /proc/modules || tb_die "a transport is loaded before the mount"
dmesg -C
tb_mount 4.1 rdma "$MNT"
tb_assert_proto "$MNT" rdma
grep -q '^rpcrdma2 ' /proc/modules || tb_die "the mount did not autoload rpcrdma2"
! grep -q '^rpcrdma ' /proc/modules || tb_die "the mount loaded the stock rpcrdma"
dmesg | grep -q "rpcrdma2: connected to $NFS_SERVER" || tb_die "the mount did not connect through rpcrdma2"
echo installed >"$MNT/f" && [ "$(cat "$MNT/f")" = installed ] || tb_die "I/O over the autoloaded module failed"
rm "$MNT/f"
tb_umount "$MNT"
tb_log "proto=rdma mount autoloaded rpcrdma2 from the installed tree"
for ((i = 0; i < 100; i++)); do
	modprobe -r rpcrdma2 2>/dev/null && break
	sleep 0.2
done
! grep -q '^rpcrdma2 ' /proc/modules || tb_die "modprobe -r rpcrdma2 did not unload it"
tb_log "rpcrdma2 install: all checks passed"
