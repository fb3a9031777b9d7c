#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 backchannel: NFSv4.1/4.2 callbacks over RDMA (delegations, CB_RECALL, reconnect during a recall)
# run.sh-options: --server-script tools/testing/integration/server/nfsd-clients.sh
#
# Client script for tools/testing/vm/run.sh, with the server publishing
# nfsd's client state and doing conflicting accesses on request
# (server/nfsd-clients.sh). For NFSv4.1 and NFSv4.2 over rpcrdma2
# (RPC-over-RDMA version 1 with svcrdma, RFC 8167):
#   1. nfsd reports the client's callback state UP (for NFSv4.1 sessions
#      nfsd marks the backchannel up once it has a connection for it; it
#      sends no CB_NULL on the wire);
#   2. opening a file for reading gets a read delegation (the server's
#      states file lists it);
#   3. a conflicting write on the server makes nfsd send CB_RECALL; the
#      client returns the delegation and the server's write completes in
#      under a second (without a working backchannel it waits for the
#      lease break time, 45 s, and nfsd revokes the delegation);
#   4. the delegation is gone from the server's states; the file reads
#      back with the server's write;
#   5. mountstats counts the callback served for the recall (one
#      CB_COMPOUND: CB_SEQUENCE, CB_RECALL) and a reply sent for every
#      callback (rpcrdma2's xprt fields), none dropped;
#   6. (NFSv4.1) reconnect during a recall: a disconnect is injected
#      (fail_sunrpc) at the first transmission after the server starts the
#      recall -- the callback's reply or the DELEGRETURN -- so the
#      connection drops while the callback is outstanding; the client
#      reconnects, the recall still completes (within 20 s), the callback
#      path is UP again afterwards and a new delegation is granted;
#   7. the kernel logged no warnings, no rpcrdma2 backchannel message (a
#      dropped callback, a reply too large or not posted) and no failed
#      backchannel reply.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$SRC/rpcrdma2.ko
MNT=/mnt/nfs
CTL=/results/ctl
STATE=$CTL/nfsd-clients.txt
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

# wait_for SECS CMD...: poll CMD every 0.2 s for up to SECS seconds.
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 5; i++)); do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}
# The server's view of the (single) client, fresh (written every 0.2 s).
server_state() { cat "$STATE" 2>/dev/null || true; }
callback_up() { server_state | grep -q '^callback state: UP'; }
# deleg_count: read delegations the server lists for this client.
deleg_count() { server_state | grep -c 'type: deleg, access: r' || true; }
has_deleg() { (($(deleg_count) >= 1)); }
no_deleg() { (($(deleg_count) == 0)); }
# bc_stats MNT: "served replies dropped", fields 29-31 after "rdma" of the
# mount's xprt: line (rpcrdma2's backchannel counters).
bc_stats() {
	awk -v m="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $31, $32, $33; exit}' \
		/proc/self/mountstats
}

F=/sys/kernel/debug/fail_sunrpc
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

# recall VERS NAME FILE LIMIT_MS: hold a read delegation on FILE, have the
# server write to it, and require the write to finish within LIMIT_MS.
# With INJECT=1, the first transmission after the write starts drops the
# connection.
recall() {
	local vers=$1 name=$2 file=$3 limit=$4 ms
	echo "reference" >"$MNT/$file"
	sync
	tb_drop_caches
	exec 3<"$MNT/$file"
	head -c 5 <&3 >/dev/null
	wait_for 10 has_deleg || tb_die "vers=$vers ($name): no delegation granted; server state:
$(server_state)"
	rm -f "$CTL/srv-done.$name"
	if [ "${INJECT:-0}" = 1 ]; then
		echo 0 >"$F/verbose"
		echo 0 >"$F/probability"
		echo 1 >"$F/interval"
		echo 1 >"$F/times"
		echo 100 >"$F/probability"
	fi
	echo "$file" >"$CTL/srv-req.$name"
	wait_for 60 test -e "$CTL/srv-done.$name" || tb_die "vers=$vers ($name): the server's conflicting write did not finish in 60 s"
	echo 0 >"$F/probability" 2>/dev/null || true
	ms=$(cat "$CTL/srv-done.$name")
	exec 3<&-
	tb_log "vers=$vers ($name): the server's conflicting write took $ms ms"
	((ms < limit)) || tb_die "vers=$vers ($name): the recall took $ms ms (limit $limit)"
	wait_for 10 no_deleg || tb_die "vers=$vers ($name): the server still lists a delegation"
}

reconnect_during_recall() {
	local vers=$1 before after
	before=$(dmesg | grep -c "rpcrdma2: connected to" || true)
	tb_trace_rpcrdma2
	INJECT=1 recall "$vers" inject deleg-inject 20000
	after=$(dmesg | grep -c "rpcrdma2: connected to" || true)
	[ -n "$(tb_trace_events disconnect 'reason=injected')" ] || tb_die "vers=$vers: no disconnect was injected"
	((after > before)) || tb_die "vers=$vers: no reconnect after the injected disconnect ($before -> $after connects)"
	wait_for 30 callback_up || tb_die "vers=$vers: the callback path is not UP after the reconnect: $(server_state | grep callback)"
	# The server grants delegations again on the new connection. (No
	# second recall: when the injected disconnect flushed the callback's
	# reply, nfsd reuses the CB_SEQUENCE seqid it never saw answered, the
	# Linux client replies NFS4ERR_RETRY_UNCACHED_REP, and nfsd waits for
	# the lease to expire -- session-level behaviour of the NFS client and
	# server, not of the transport; over TCP the reply usually leaves
	# before the connection closes.)
	echo "reference" >"$MNT/deleg-after"
	sync
	tb_drop_caches
	exec 3<"$MNT/deleg-after"
	head -c 5 <&3 >/dev/null
	wait_for 10 has_deleg || tb_die "vers=$vers: no delegation granted after the reconnect"
	exec 3<&-
	tb_log "vers=$vers: recall across a reconnect completed; the callback path is UP again and delegations are granted"
}

tb_step "insmod rpcrdma2.ko" insmod "$KO"
dmesg -C
for vers in 4.1 4.2; do
	f=deleg-$vers
	tb_log "=== vers=$vers"
	tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	echo "written by the client" >"$MNT/$f"
	sync
	wait_for 20 callback_up || tb_die "vers=$vers: the server does not report the callback path up: $(server_state | grep callback)"
	tb_log "vers=$vers: server reports $(server_state | grep '^callback state')"

	# A read open of a file nobody else has open gets a read delegation.
	tb_drop_caches
	exec 3<"$MNT/$f"
	head -c 10 <&3 >/dev/null
	wait_for 10 has_deleg || tb_die "vers=$vers: no delegation granted; server state:
$(server_state)"
	tb_log "vers=$vers: server granted $(deleg_count) read delegation(s)"

	# The conflicting write on the server recalls it.
	read -r served0 _ _ <<<"$(bc_stats "$MNT")"
	rm -f "$CTL/srv-done.$vers"
	echo "$f" >"$CTL/srv-req.$vers"
	wait_for 60 test -e "$CTL/srv-done.$vers" || tb_die "vers=$vers: the server's conflicting write did not finish in 60 s"
	ms=$(cat "$CTL/srv-done.$vers")
	tb_log "vers=$vers: the server's conflicting write took $ms ms (CB_RECALL answered, delegation returned)"
	((ms < 1000)) || tb_die "vers=$vers: the recall took $ms ms (>= 1 s): the delegation was not returned promptly"
	exec 3<&-
	wait_for 10 no_deleg || tb_die "vers=$vers: the server still lists a delegation:
$(server_state)"
	tb_drop_caches
	grep -q "written on the server" "$MNT/$f" || tb_die "vers=$vers: the server's write is not visible"

	read -r served replies dropped <<<"$(bc_stats "$MNT")"
	tb_log "vers=$vers: backchannel calls served $served, replies sent $replies, dropped $dropped"
	((served >= served0 + 1)) || tb_die "vers=$vers: mountstats counts $served callbacks served, $served0 before the recall (the CB_COMPOUND with CB_RECALL is one)"
	((replies >= served)) || tb_die "vers=$vers: $replies replies for $served callbacks"
	((dropped == 0)) || tb_die "vers=$vers: $dropped callbacks or replies dropped"
	rm -f "$MNT/"deleg-*
	tb_umount "$MNT"
done

if [ -d "$F" ]; then
	tb_log "=== vers=4.1: reconnect during a recall"
	tb_mount 4.1 rdma "$MNT"
	wait_for 20 callback_up || tb_die "the server does not report the callback path up"
	reconnect_during_recall 4.1
	rm -f "$MNT/"deleg-*
	tb_umount "$MNT"
else
	tb_log "no $F (CONFIG_FAIL_SUNRPC): reconnect during a recall not tested"
fi

if dmesg | grep -E "WARNING:|BUG:|Oops|rpcrdma2: backchannel:|Could not send backchannel reply"; then
	tb_die "kernel warnings or backchannel failures (above)"
fi
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 backchannel: all checks passed"
