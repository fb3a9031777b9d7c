#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
# integration-test: stock C client (rpcrdma.ko) through the user-space responder: NFSv3/v4.1/v4.2 data integrity on every chunk path (the responder's version 1 side, what make bench's c-resp measures)
# run.sh-options: --timeout 1200 --server-script tools/testing/integration/server/responder.sh
# integration-tier: long
#
# Client script for tools/testing/vm/run.sh. The server runs the
# responder (server/responder.sh) on port 20050 (versions 2 and 1) and
# 20051 (--v1-only), both forwarding to nfsd over TCP. The stock C client
# speaks version 1 only, so this is the responder's version 1 side under
# the client make bench compares it with svcrdma by (c-resp, m-c-resp).
# For NFSv3 and v4.1 on 20051 and v4.2 on 20050, mounted with proto=rdma
# over rpcrdma.ko:
#   1. files of sizes around the inline threshold and page boundaries,
#      4 MiB by cp and 4 MiB by O_DIRECT 1 MiB writes (WRITEs inline and
#      in Read chunks), caches dropped, remounted and read back by
#      SHA-256, buffered and O_DIRECT (READs inline and in Write chunks);
#   2. a 1000-entry directory listed (READDIR in Reply chunks) and a
#      2000-byte symlink read back;
#   3. fio with 8 RPCs in flight, 256 KiB and 4 KiB random I/O, verified
#      (crc32c): many Calls at once, matched by XID;
# then from the responder's counters: every path above was taken (inline
# replies, Write chunks, Reply chunks, Read chunk Calls), every connection
# settled on version 1, and nothing was malformed or answered with an
# error.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 1023 1024 1025 4095 4096 4097 8192 65537 262144 1048589)
TARGET=$(printf 'y/%.0s' $(seq 1 1000))
CASES=("20051 3" "20051 4.1" "20050 4.2")

# stat_of PORT NAME: a responder counter.
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

grep -q '^rpcrdma2 ' /proc/modules && tb_die "rpcrdma2 is loaded: this test is of the C client"
tb_step "modprobe rpcrdma" tb_modprobe rpcrdma
grep -q '^rpcrdma ' /proc/modules || tb_die "modprobe rpcrdma succeeded but rpcrdma is not loaded"

tb_random_files "$REF" f "${SIZES[@]}"
head -c $((4 << 20)) /dev/urandom >"$REF/big"
head -c $((4 << 20)) /dev/urandom >"$REF/direct"
(cd "$REF" && sha256sum -- * >/tmp/ref.sha256)
nfiles=$(wc -l </tmp/ref.sha256)

one_case() { # PORT VERS
	local port=$1 vers=$2 dir out
	tb_log "=== C client, port $port, NFS vers=$vers"
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	dir=$MNT/c-resp-$port-$vers
	rm -rf "$dir"
	mkdir -p "$dir/big-dir"
	cp "$REF"/f* "$REF/big" "$dir/"
	dd if="$REF/direct" of="$dir/direct" bs=1M oflag=direct status=none ||
		tb_die "port $port vers=$vers: O_DIRECT write failed"
	(cd "$dir/big-dir" && seq -f 'entry-with-a-long-name-%06g' 1 1000 | xargs touch)
	ln -s "$TARGET" "$dir/link"
	sync
	tb_umount "$MNT"
	tb_drop_caches

	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	(cd "$dir" && sha256sum --quiet -c /tmp/ref.sha256) ||
		tb_die "port $port vers=$vers: read-back checksums differ from what was written ($nfiles files)"
	dd if="$dir/direct" of=/tmp/direct.back bs=1M iflag=direct status=none ||
		tb_die "port $port vers=$vers: O_DIRECT read failed"
	cmp "$REF/direct" /tmp/direct.back || tb_die "port $port vers=$vers: O_DIRECT read-back differs"
	rm -f /tmp/direct.back
	[ "$(ls "$dir/big-dir" | wc -l)" = 1000 ] ||
		tb_die "port $port vers=$vers: the directory does not list 1000 entries"
	[ "$(readlink "$dir/link")" = "$TARGET" ] || tb_die "port $port vers=$vers: the symlink target differs"

	out=/tmp/fio-$port-$vers.txt
	timeout 300 fio --directory="$dir" --size=4m --iodepth=4 --ioengine=libaio --direct=1 \
		--verify=crc32c --verify_fatal=1 \
		--name=large --bs=256k --rw=randrw \
		--name=small --bs=4k --rw=randrw --output="$out" ||
		tb_die "port $port vers=$vers: fio failed: $(tail -n 5 "$out")"
	[ "$(grep -c 'err= 0' "$out")" = 2 ] || tb_die "port $port vers=$vers: fio reported errors: $(grep 'err=' "$out")"
	rm -rf "$dir"
	[ ! -e "$dir" ] || tb_die "port $port vers=$vers: rm -rf $dir left it behind"
	tb_umount "$MNT"
	tb_log "C client, port $port, NFS vers=$vers: OK"
}

for c in "${CASES[@]}"; do
	# shellcheck disable=SC2086
	one_case $c
done
tb_rmmod rpcrdma 30

sleep 2 # the responders write their counters within 0.5 s of a change
for port in 20050 20051; do
	cat "/results/ctl/responder-$port.stats"
	(($(stat_of $port conn_v1) >= 1)) || tb_die "responder $port: no version 1 connection"
	(($(stat_of $port conn_v2) == 0)) || tb_die "responder $port: the C client settled on version 2"
	for n in malformed errors_sent prop_violations inv_handle_foreign; do
		(($(stat_of $port $n) == 0)) || tb_die "responder $port: counter $n is $(stat_of $port $n)"
	done
	for n in replies_inline replies_write_chunk replies_reply_chunk read_chunk_calls bytes_spliced_to_nfsd; do
		(($(stat_of $port $n) > 0)) || tb_die "responder $port: counter $n is 0 (a path not taken)"
	done
	tb_log "responder $port: $(stat_of $port calls) Calls; Write chunk replies $(stat_of $port replies_write_chunk), Reply chunk replies $(stat_of $port replies_reply_chunk), Read chunk Calls $(stat_of $port read_chunk_calls), bytes spliced to nfsd $(stat_of $port bytes_spliced_to_nfsd)"
done
dmesg | grep -iE "rpcrdma.*(error|fail)" && tb_die "rpcrdma logged errors (above)"
tb_log "c-client-responder: PASS"
