#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 slot backlog: more RPCs in flight than request slots; tasks wait in SUNRPC's backlog and take the slots others free; I/O completes and verifies
#
# Client script for tools/testing/vm/run.sh. rpcrdma2 has a fixed number
# of request slots (128, the credits it asks for); an RPC that finds none
# free waits on SUNRPC's backlog queue, and a slot given back goes
# straight to the first waiter (FreeSlot handles, rpcrdma/sunrpc/pool.rs).
# Nothing else in the suite fills every slot. NFSv3 (no session slot
# table in front of the transport) to svcrdma:
#   1. 4 fio jobs of 4 KiB direct random reads, iodepth 128 each (512 in
#      flight), 10 s: no error, and mountstats' backlog figure (bklog_u)
#      grew, so tasks did wait for slots;
#   2. 4 fio writers, iodepth 64 each, then every block read back and
#      checked (crc32c): no error;
#   3. umount and rmmod: every slot came back (the module's census of ib
#      objects is empty, run.sh fails on a leak report).

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
tb_step "insmod rpcrdma2.ko" insmod "$KO"
NFS_RDMA_PORT=20049 tb_mount 3 rdma "$MNT"
tb_assert_proto "$MNT" rdma

# bklog: the mount's backlog utilisation (field 10 of its "xprt: rdma"
# line).
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"
bklog() { xprt_field 10; }
dir=$MNT/backlog
mkdir -p "$dir"
b0=$(bklog)
timeout 120 fio --directory="$dir" --size=16m --bs=4k --ioengine=libaio --direct=1 \
	--iodepth=128 --numjobs=4 --time_based --runtime=10 --group_reporting \
	--name=reader --rw=randread --output=/tmp/fio-backlog-read.txt ||
	{ tail -n 20 /tmp/fio-backlog-read.txt; tb_die "fio with 512 reads in flight failed"; }
b1=$(bklog)
grep -E "^ +READ:" /tmp/fio-backlog-read.txt
tb_log "backlog utilisation: $b0 before, $b1 after"
((b1 > b0)) || tb_die "no task waited for a slot (bklog_u $b0 -> $b1): the test did not reach the backlog"
timeout 180 fio --directory="$dir" --size=8m --bsrange=4k-64k --ioengine=libaio --direct=1 \
	--iodepth=64 --numjobs=4 --group_reporting --name=writer --rw=randwrite \
	--verify=crc32c --do_verify=1 --verify_fatal=1 --output=/tmp/fio-backlog-write.txt ||
	{ tail -n 20 /tmp/fio-backlog-write.txt; tb_die "fio write and verify with 256 in flight failed"; }
grep -E "^ +(READ|WRITE):" /tmp/fio-backlog-write.txt
rm -rf "$dir"
tb_umount "$MNT"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "backlog: all checks passed"
