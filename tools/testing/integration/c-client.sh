#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
# integration-test: stock C client (rpcrdma.ko): NFS v3/v4.0/v4.1/v4.2 over RDMA data integrity
# run.sh-args: 3 4.0 4.1 4.2
#
# Client script for tools/testing/vm/run.sh (runs in the client guest):
#
#   tools/testing/vm/run.sh tools/testing/integration/c-client.sh [VERS...]
#
# Checks the testbed and the stock C transport end to end, as the baseline
# the rpcrdma2 tests are compared with:
#   1. the testbed's autoload guard: with no RDMA transport registered, a
#      proto=rdma mount fails and does not load rpcrdma;
#   2. modprobe rpcrdma loads it (its svcrdma half shows in
#      /proc/sys/sunrpc/transports; client classes are not listed there);
#   3. for each NFS version (default: 3 4.1): mount over RDMA (port 20049),
#      assert the mount really uses RDMA, write a 4 MiB random file, files of
#      odd sizes and a 4 MiB O_DIRECT file, unmount, drop caches, mount
#      again, read everything back (buffered and O_DIRECT) and compare
#      SHA-256 sums, list the directory, clean up, unmount;
#   4. rmmod rpcrdma.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

VERSIONS=("$@")
((${#VERSIONS[@]})) || VERSIONS=(3 4.1)
SIZES=(0 1 511 4095 4096 4097 65536 65537 1000003 1048577)
REF=/tmp/ref
MNT=/mnt/nfs

tb_log "c-client: versions ${VERSIONS[*]}, server $NFS_SERVER:$NFS_EXPORT, kernel $KREL"

# 1. the guard: no rdma class, so a proto=rdma mount must fail without
# loading rpcrdma behind our back.
grep -q '^rpcrdma ' /proc/modules && tb_die "rpcrdma is loaded before the test loaded it"
tb_has_transport rdma && tb_die "svcrdma is registered before the test loaded rpcrdma"
mkdir -p "$MNT"
if timeout 60 mount -t nfs -o vers=4.1,proto=rdma,port="$NFS_RDMA_PORT",sec=sys \
	"$NFS_SERVER:$NFS_EXPORT" "$MNT" 2>/tmp/guard.err; then
	umount "$MNT" || true
	tb_die "a proto=rdma mount succeeded with no RDMA transport loaded (autoload guard broken)"
fi
tb_log "guard: proto=rdma mount without a transport failed as expected: $(tr '\n' ' ' </tmp/guard.err)"
grep -q '^rpcrdma ' /proc/modules && tb_die "the failed mount autoloaded rpcrdma (autoload guard broken)"
dmesg | grep 'refused autoload of rpcrdma' >/dev/null ||
	tb_die "no 'refused autoload' in dmesg: the mount did not go through the guard"

# 2. load the C client.
tb_step "modprobe rpcrdma" tb_modprobe rpcrdma
grep -q '^rpcrdma ' /proc/modules || tb_die "modprobe rpcrdma succeeded but rpcrdma is not loaded"
tb_has_transport rdma || tb_die "rpcrdma loaded but no 'rdma' in /proc/sys/sunrpc/transports"
tb_log "svc transports: $(tb_transports | tr '\n' ' ')"

# 3. reference data, made once.
mkdir -p "$REF"
head -c $((4 << 20)) /dev/urandom >"$REF/big"
head -c $((4 << 20)) /dev/urandom >"$REF/direct"
tb_random_files "$REF" odd- "${SIZES[@]}"
(cd "$REF" && sha256sum -- * >/tmp/ref.sha256)
nfiles=$(wc -l </tmp/ref.sha256)

for v in "${VERSIONS[@]}"; do
	d=$MNT/c-client-v$v
	tb_log "=== NFS v$v over RDMA"
	tb_mount "$v" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	rm -rf "$d"
	mkdir "$d"
	t0=${EPOCHREALTIME/./}
	cp "$REF/big" "$REF"/odd-* "$d/"
	dd if="$REF/direct" of="$d/direct" bs=1M oflag=direct status=none
	sync
	t1=${EPOCHREALTIME/./}
	tb_log "wrote $nfiles files ($(du -sk "$REF" | cut -f1) KiB) in $(((t1 - t0) / 1000)) ms"
	tb_umount "$MNT"

	tb_drop_caches
	tb_mount "$v" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	t0=${EPOCHREALTIME/./}
	(cd "$d" && sha256sum --quiet -c /tmp/ref.sha256) ||
		tb_die "v$v: read-back checksums differ from what was written"
	dd if="$d/direct" of=/tmp/direct.back bs=1M iflag=direct status=none
	cmp "$REF/direct" /tmp/direct.back || tb_die "v$v: O_DIRECT read-back differs"
	rm -f /tmp/direct.back
	t1=${EPOCHREALTIME/./}
	tb_log "read back and verified $nfiles files in $(((t1 - t0) / 1000)) ms"

	ls -la "$d"
	listed=$(find "$d" -mindepth 1 -maxdepth 1 -type f | wc -l)
	((listed == nfiles)) || tb_die "v$v: directory lists $listed files, expected $nfiles"
	for s in "${SIZES[@]}"; do
		got=$(stat -c %s "$d/odd-$s")
		((got == s)) || tb_die "v$v: odd-$s has size $got"
	done
	awk -v m="$MNT" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:"' \
		/proc/self/mountstats | sed 's/^[[:space:]]*/  mountstats: /'
	rm -rf "$d"
	[ ! -e "$d" ] || tb_die "v$v: rm -rf $d left it behind"
	tb_umount "$MNT"
	tb_log "NFS v$v over RDMA: OK"
done

# 4. unload.
tb_rmmod rpcrdma 30
grep -q '^rpcrdma ' /proc/modules && tb_die "rpcrdma still loaded after rmmod"
tb_has_transport rdma && tb_die "svcrdma still registered after rmmod rpcrdma"
tb_log "c-client: PASS (versions ${VERSIONS[*]})"
