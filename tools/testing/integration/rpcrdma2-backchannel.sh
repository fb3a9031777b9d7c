#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 backchannel: NFSv4.1/4.2 callbacks over RDMA (CB_NULL, delegations, CB_RECALL)
# run.sh-options: --server-script tools/testing/integration/server/nfsd-clients.sh
#
# Client script for tools/testing/vm/run.sh, with the server publishing
# nfsd's client state and doing conflicting accesses on request
# (server/nfsd-clients.sh). For NFSv4.1 and NFSv4.2 over rpcrdma2
# (RPC-over-RDMA version 1 with svcrdma, RFC 8167):
#   1. the server's CB_NULL probe is answered: nfsd reports the client's
#      callback state UP;
#   2. opening a file for reading gets a read delegation (the server's
#      states file lists it);
#   3. a conflicting write on the server makes nfsd send CB_RECALL; the
#      client returns the delegation and the server's write completes in
#      under a second (without a working backchannel it waits for the
#      lease break time, 45 s, and nfsd revokes the delegation);
#   4. the delegation is gone from the server's states; the file reads
#      back with the server's write;
#   5. mountstats counts the callbacks served and the replies sent
#      (rpcrdma2's xprt fields), none dropped; the kernel logged no
#      warnings and no failed backchannel replies.

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
# bc_stats MNT: "served replies dropped", the last three fields of the
# mount's xprt: line (rpcrdma2's backchannel counters).
bc_stats() {
	awk -v m="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $(NF-2), $(NF-1), $NF; exit}' \
		/proc/self/mountstats
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
	((served >= 2)) || tb_die "vers=$vers: mountstats counts $served callbacks served (CB_NULL and CB_RECALL at least)"
	((replies >= served)) || tb_die "vers=$vers: $replies replies for $served callbacks"
	((dropped == 0)) || tb_die "vers=$vers: $dropped callbacks or replies dropped"
	rm -f "$MNT/$f"
	tb_umount "$MNT"
done

if dmesg | grep -E "WARNING:|BUG:|Oops|backchannel.*dropped|Could not send backchannel reply|RPC/RDMA backchannel overflow"; then
	tb_die "kernel warnings or backchannel failures (above)"
fi
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 backchannel: all checks passed"
