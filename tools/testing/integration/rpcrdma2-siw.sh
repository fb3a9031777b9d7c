#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: a second RDMA provider: rpcrdma2 over soft-iWARP (siw0), NFSv3 and v4.1 to svcrdma (version 1) and to the user-space responder (version 2), Read and Write chunks
# run.sh-options: --provider siw --timeout 900 --server-script tools/testing/integration/server/responder.sh
# integration-tier: long
#
# Client script for tools/testing/vm/run.sh --provider siw: both guests
# run soft-iWARP (siw0 on eth0) instead of soft-RoCE, so rdma_cm connects
# over iWARP (MPA over TCP) and every RDMA Read and Write is an iWARP one.
#   1. the RDMA device is siw: RDMA_DEV is siw0, ACTIVE on eth0, transport
#      iWARP, the siw module loaded, no other RDMA device (no rxe0, no
#      rdma_rxe); the test fails, it does not skip, if any of that is not
#      so (and run.sh already fails the run if 'modprobe siw' or 'rdma link
#      add siw0 type siw' fails);
#   2. for svcrdma (port 20049, the connection settles on version 1 after
#      ERR_VERS) and the responder (port 20050, server/responder.sh, version
#      2), each with NFSv3 and NFSv4.1 over rpcrdma2: rdma_cm shows the
#      connection on siw0 from the client's eth0 address to the server's;
#      files of 0, 1, 4097, 65537 and 1 MiB + 13 bytes written (the large
#      ones in Read chunks: the server RDMA-Reads them), caches dropped,
#      remounted, read back (Write chunks: the server RDMA-Writes them) and
#      compared by SHA-256; a 300-entry directory listed (Reply chunks);
#      rpcrdma2's mountstats count Read, Write and Reply chunk segments
#      and no bad reply, and rpcrdma2 logged no reply or send error;
#   3. the responder registered its RDMA Read sinks with remote write (the
#      iWARP rule; its log says so per connection), counted Read chunk
#      Calls, Write chunk and Reply chunk replies and version 2
#      connections, and saw nothing malformed;
#   4. rmmod rpcrdma2; run.sh fails the test on any kernel warning.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 4097 65537 1048589)
RESPONDER_PORT=20050
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

# --- 1. the device is siw, and the only one ------------------------------
tb_log "RDMA provider '${RDMA_PROVIDER:-}', device '${RDMA_DEV:-}'"
[ "${RDMA_PROVIDER:-}" = siw ] && [ "${RDMA_DEV:-}" = siw0 ] ||
	tb_die "not run with --provider siw (RDMA_PROVIDER '${RDMA_PROVIDER:-}', RDMA_DEV '${RDMA_DEV:-}')"
grep -q '^siw ' /proc/modules || tb_die "the siw module is not loaded"
! grep -q '^rdma_rxe ' /proc/modules || tb_die "rdma_rxe is loaded in an iWARP run"
link=$(rdma link show siw0/1) || tb_die "no siw0 (rdma link show siw0/1 failed)"
tb_log "rdma link: $link"
[[ $link == *"state ACTIVE"* && $link == *"netdev eth0"* ]] || tb_die "siw0 is not ACTIVE on eth0: $link"
transport=$(ibv_devinfo -d siw0 | awk '/transport:/ {print $2; exit}')
[ "$transport" = iWARP ] || tb_die "siw0's transport is '$transport', not iWARP"
devs=$(ls /sys/class/infiniband)
[ "$devs" = siw0 ] || tb_die "RDMA devices other than siw0: $(echo "$devs" | tr '\n' ' ')"

# rdma_line, rdma_field NAME: the mount's "xprt: rdma" line of
# /proc/self/mountstats, a field of it by name.
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"

# assert_on_siw PORT: rdma_cm's connection to the server's PORT is on siw0,
# from this guest's eth0 address (rdma resource show cm_id).
assert_on_siw() {
	local port=$1 ids
	ids=$(rdma resource show cm_id | grep -F "dst-addr $SERVER_IP:$port" || true)
	[ -n "$ids" ] || {
		rdma resource show cm_id
		tb_die "port $port: no rdma_cm id connected to $SERVER_IP:$port"
	}
	tb_log "cm_id: $ids"
	! grep -v -F "link siw0/1 " <<<"$ids" >/dev/null ||
		tb_die "port $port: an rdma_cm id is not on siw0/1: $ids"
	grep -F "src-addr $CLIENT_IP:" <<<"$ids" >/dev/null ||
		tb_die "port $port: the connection does not come from eth0's $CLIENT_IP: $ids"
}

dmesg -C
# cont_reply_pieces=0: version 2 offers a Reply chunk for the READDIR
# replies too (by default they are continued), so the Reply chunk path
# runs over iWARP against both servers.
tb_step "insmod rpcrdma2.ko" insmod "$KO" cont_reply_pieces=0
tb_random_files "$REF" f "${SIZES[@]}"

# --- 2. NFS over rpcrdma2 over siw -------------------------------------
one() { # NAME PORT VERS
	local name=$1 port=$2 vers=$3 s dir rd wr reply bad n
	tb_log "=== $name (port $port), NFS vers=$vers, over siw0"
	dmesg -C
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	dmesg | grep -E "rpcrdma2: connected to $NFS_SERVER:$port \(conn [0-9]+\)" >/dev/null ||
		tb_die "$name vers=$vers: the mount did not connect through rpcrdma2"
	assert_on_siw "$port"
	dir=$MNT/siw-$name-$vers
	rm -rf "$dir"
	mkdir -p "$dir/big"
	for s in "${SIZES[@]}"; do
		cp "$REF/f$s" "$dir/f$s"
	done
	(cd "$dir/big" && seq -f 'entry-with-a-long-name-%06g' 1 300 | xargs touch)
	sync
	rd=$(rdma_field read_chunk) bad=$(rdma_field bad_reply)
	tb_log "$name vers=$vers: writes: read_chunk_segments=$rd bad_replies=$bad"
	((rd > 0)) || tb_die "$name vers=$vers: no Read chunk segment counted (the server RDMA-Read nothing)"
	tb_umount "$MNT"
	tb_drop_caches
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	assert_on_siw "$port"
	for s in "${SIZES[@]}"; do
		[ "$(sha256sum <"$dir/f$s")" = "$(sha256sum <"$REF/f$s")" ] ||
			tb_die "$name vers=$vers: f$s differs after the round trip over siw"
	done
	n=$(ls "$dir/big" | wc -l)
	[ "$n" = 300 ] || tb_die "$name vers=$vers: listed $n entries, expected 300"
	rdma_line
	wr=$(rdma_field write_chunk) reply=$(rdma_field reply_chunk) bad=$(rdma_field bad_reply)
	tb_log "$name vers=$vers: reads: write_chunk_segments=$wr reply_chunk_segments=$reply bad_replies=$bad"
	((wr > 0)) || tb_die "$name vers=$vers: no Write chunk segment counted (the server RDMA-Wrote nothing)"
	((reply > 0)) || tb_die "$name vers=$vers: no Reply chunk segment counted"
	((bad == 0)) || tb_die "$name vers=$vers: $bad bad replies"
	rm -rf "$dir"
	if [ "$name" = responder ]; then
		dmesg | grep "rpcrdma2: server answered in RPC-over-RDMA version 2: connection settled on version 2" >/dev/null ||
			tb_die "$name vers=$vers: the connection did not settle on version 2"
	else
		dmesg | grep "rpcrdma2: server answered the RPC-over-RDMA version 2 probe with ERR_VERS: continuing in version 1" >/dev/null ||
			tb_die "$name vers=$vers: rpcrdma2 did not fall back to version 1 against svcrdma"
	fi
	if dmesg | grep -E "rpcrdma2: (send|release): |rpcrdma2: reply: (dropped|protocol error|xid .* failed)"; then
		tb_die "$name vers=$vers: rpcrdma2 logged errors"
	fi
	tb_umount "$MNT"
	tb_log "$name vers=$vers: ${#SIZES[@]} files and a 300-entry directory verified over siw0"
}

for vers in 3 4.1; do
	one svcrdma "$NFS_RDMA_PORT" "$vers"
	one responder "$RESPONDER_PORT" "$vers"
done

# --- 3. the responder's side ---------------------------------------------
stat_of() { # NAME: a responder counter
	awk -v n="$1" '$1 == n {print $2}' "/results/ctl/responder-$RESPONDER_PORT.stats" 2>/dev/null || echo 0
}
sleep 2 # the responder writes its counters within 0.5 s of a change
cat "/results/ctl/responder-$RESPONDER_PORT.stats"
conns=$(grep -c "client private data" "/results/ctl/responder-$RESPONDER_PORT.log" || true)
sinks=$(grep -c "iWARP: RDMA Read sinks registered with remote write" "/results/ctl/responder-$RESPONDER_PORT.log" || true)
tb_log "responder: $conns connections, $sinks with remote-write Read sinks"
((conns >= 2)) || tb_die "responder: $conns connections logged, expected one per NFS version at least"
((sinks == conns)) || tb_die "responder: $sinks of $conns connections registered their Read sinks with remote write"
(($(stat_of conn_v2) >= 2)) || tb_die "responder: fewer version 2 connections than NFS versions"
(($(stat_of conn_v1) == 0)) || tb_die "responder: a connection settled on version 1"
for c in read_chunk_calls replies_write_chunk replies_reply_chunk; do
	(($(stat_of $c) > 0)) || tb_die "responder: counter $c is 0"
done
(($(stat_of malformed) == 0)) || tb_die "responder: rpcrdma2 sent malformed messages"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 over soft-iWARP (siw0): all checks passed"
