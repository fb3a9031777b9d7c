# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The body of the backchannel tests, sourced by rpcrdma2-backchannel.sh
# (RPC-over-RDMA version 1, svcrdma) and rpcrdma2-v2-backchannel.sh
# (version 2, the responder relaying nfsd's callbacks). The server runs
# server/nfsd-clients.sh, which publishes nfsd's client state and does
# conflicting accesses on request. Set before sourcing:
#   BC_WIRE   v1 or v2: the RPC-over-RDMA version the connections settle on
#   BC_PORT   the server's RDMA port (svcrdma or a responder)
#   BC_STATS  (v2) the responder's counters file
#
# For NFSv4.1 and NFSv4.2 over rpcrdma2, with every rpcrdma2 tracepoint
# on:
#   1. the connection settles on BC_WIRE (rpcrdma2_version);
#   2. nfsd reports the client's callback state UP (for NFSv4.1 sessions
#      nfsd marks the backchannel up once it has a connection for it; it
#      sends no CB_NULL on the wire itself);
#   3. (v2) the responder's own CB_NULL probe, sent when nfsd gives the
#      session its backchannel (--probe-callbacks), is answered with
#      success: the responder counts the reply and rpcrdma2 traces the
#      reverse Call (rpcrdma2_bc_call) and its reply (rpcrdma2_bc_reply
#      outcome=sent) under the probe's XID;
#   4. opening a file for reading gets a read delegation (the server's
#      states file lists it);
#   5. a conflicting write on the server makes nfsd send CB_RECALL; the
#      client returns the delegation and the server's write completes in
#      under a second (without a working backchannel it waits for the
#      lease break time, 45 s, and nfsd revokes the delegation);
#   6. the delegation is gone from the server's states; the file reads
#      back with the server's write;
#   7. the callback counters move: mountstats counts the callback served
#      for the recall (one CB_COMPOUND: CB_SEQUENCE, CB_RECALL) and a
#      reply sent for every callback (rpcrdma2's xprt fields), none
#      dropped; (v2) the responder relayed callbacks and handed the
#      client's replies to nfsd; every reverse Call rpcrdma2 traced
#      (rpcrdma2_reply class=reverse_call in the wire's version) has a
#      rpcrdma2_bc_call and a rpcrdma2_bc_reply outcome=sent with its XID;
#   8. (NFSv4.1) reconnect during a recall: a disconnect is injected
#      (fail_sunrpc) at the first transmission after the server starts the
#      recall -- the callback's reply or the DELEGRETURN -- so the
#      connection drops while the callback is outstanding; the client
#      reconnects (rpcrdma2_disconnect and rpcrdma2_reconnect
#      reason=injected, a new rpcrdma2_connect), the recall still
#      completes (within 20 s), the callback path is UP again afterwards
#      ((v2) and the responder's CB_NULL on the new connection is
#      answered) and a new delegation is granted;
#   9. (NFSv4.1) a CB_RECALL storm: the client holds 200 read delegations
#      at once and the server writes to all 200 files together; every
#      write finishes within 30 s (a recall not answered waits for the
#      lease break, 45 s), no delegation is left, mountstats counts a
#      callback served and a reply sent for each of the 200, none
#      dropped; (v2) the responder relayed 200 callbacks and handed 200
#      replies to nfsd;
#  10. the kernel logged no warnings, no rpcrdma2 backchannel message (a
#      dropped callback, a reply too large or not posted), no failed
#      backchannel reply, and no rpcrdma2_bc_call or rpcrdma2_bc_reply
#      event says a callback or a reply was dropped.

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
CTL=/results/ctl
STATE=$CTL/nfsd-clients.txt
: "${BC_WIRE:?}" "${BC_PORT:?}"
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
case $BC_WIRE in
v1) BC_VERS=1 ;;
v2) BC_VERS=2 ;;
*) tb_die "BC_WIRE must be v1 or v2" ;;
esac
export NFS_RDMA_PORT=$BC_PORT

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
deleg_at_least() { (($(deleg_count) >= $1)); }
no_deleg() { (($(deleg_count) == 0)); }
# bc_stats MNT: "served replies dropped", fields 29-31 of the mount's
# xprt: line (rpcrdma2's backchannel counters, Documentation/admin-guide.rst;
# after "xprt: rdma", so awk's $31-$33).
bc_stats() {
	awk -v m="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $31, $32, $33; exit}' \
		/proc/self/mountstats
}
# stat_of NAME: a counter of the responder (written within 0.5 s of a
# change).
stat_of() { awk -v n="$1" '$1 == n {print $2}' "$BC_STATS" 2>/dev/null || echo 0; }
stat_above() { (($(stat_of "$1") > $2)); }
# xid_of LINE: the xid= field of a trace line.
xid_of() { sed -n 's/.* xid=\(0x[0-9a-f]*\) .*/\1/p' <<<"$1"; }

# check_bc_trace WHAT: every reverse Call received since the trace was
# cleared was handed to the callback service and answered: for each
# rpcrdma2_reply class=reverse_call (in the wire's version), a
# rpcrdma2_bc_call outcome=queued and a rpcrdma2_bc_reply outcome=sent
# with its XID; nothing dropped. Prints the number of reverse Calls.
check_bc_trace() {
	local what=$1 line xid n=0
	while read -r line; do
		[ -n "$line" ] || continue
		xid=$(xid_of "$line")
		[ -n "$(tb_trace_events bc_call "xid=$xid .*outcome=queued")" ] ||
			tb_die "$what: reverse Call $xid: no rpcrdma2_bc_call outcome=queued"
		[ -n "$(tb_trace_events bc_reply "xid=$xid .*outcome=sent")" ] ||
			tb_die "$what: reverse Call $xid: no rpcrdma2_bc_reply outcome=sent"
		n=$((n + 1))
	done <<<"$(tb_trace_events reply "class=reverse_call")"
	[ -z "$(tb_trace_events reply "class=reverse_call" | grep -v " vers=$BC_VERS " || true)" ] ||
		tb_die "$what: a reverse Call in another version than $BC_VERS: $(tb_trace_events reply "class=reverse_call")"
	[ -z "$(tb_trace_events 'bc_(call|reply)' 'outcome=dropped')" ] ||
		tb_die "$what: a callback or reply was dropped: $(tb_trace_events 'bc_(call|reply)' 'outcome=dropped')" # conformance: cb-recall
	echo "$n"
}

F=/sys/kernel/debug/fail_sunrpc
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

# recall VERS NAME FILE LIMIT_MS: hold a read delegation on FILE, have the
# server write to it, and require the write to finish within LIMIT_MS.
# With INJECT=1, the first transmission after the write starts drops the
# connection.
#
# nfsd grants no delegation on a file handle caught in its filter of
# recently recalled ones (three bits of 256 a handle, cleared 30 to 90 s
# later): after the storm's 200 recalls it catches most new files. A file
# that gets none is removed and another (FILE.1, FILE.2, ...) tried.
recall() {
	local vers=$1 name=$2 file=$3 limit=$4 ms k
	for ((k = 1; ; k++)); do
		echo "reference" >"$MNT/$file"
		sync
		tb_drop_caches
		exec 3<"$MNT/$file"
		head -c 5 <&3 >/dev/null
		wait_for 5 has_deleg && break
		exec 3<&-
		((k < 15)) || tb_die "vers=$vers ($name): no delegation granted on $k files; server state:
$(server_state)"
		rm -f "$MNT/$file"
		file=$3.$k
	done
	((k == 1)) || tb_log "vers=$vers ($name): a delegation granted after $((k - 1)) file(s) got none"
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

# recall_storm N: N read delegations held at once, all recalled together
# (step 9).
recall_storm() {
	local n=$1 i fd fds=() served0 served replies dropped ms rc0 rr0
	for ((i = 0; i < n; i++)); do
		echo "storm $i" >"$MNT/storm-$i"
	done
	sync
	tb_drop_caches
	for ((i = 0; i < n; i++)); do
		exec {fd}<"$MNT/storm-$i"
		fds+=("$fd")
	done
	# nfsd declines a delegation now and then for reasons of its own (a
	# file handle caught in its filter of recently recalled ones, see
	# recall; a write open of the file not yet released), and the client
	# does not ask again while it holds the file open. A file the server
	# lists no delegation for is replaced by a new one of the same name
	# (a new file handle), up to four times.
	local round state missing
	for ((round = 0; ; round++)); do
		wait_for 30 deleg_at_least "$n" && break
		state=$(server_state)
		missing=()
		for ((i = 0; i < n; i++)); do
			grep -Eq "type: deleg, access: r, .*[\"/]storm-$i\"" <<<"$state" || missing+=("$i")
		done
		((round < 4)) ||
			tb_die "storm: the server lists $(deleg_count) read delegations for the $n files held open, after replacing those it had none for $round times; server state:
$(server_state | grep -v 'type: deleg')"
		tb_log "storm: the server lists $(deleg_count) read delegations for the $n files held open; replacing the ${#missing[@]} without one: ${missing[*]/#/storm-}"
		for i in "${missing[@]}"; do
			fd=${fds[i]}
			exec {fd}<&-
			rm -f "$MNT/storm-$i"
			echo "storm $i" >"$MNT/storm-$i"
		done
		sync
		tb_drop_caches
		for i in "${missing[@]}"; do
			exec {fd}<"$MNT/storm-$i"
			fds[i]=$fd
		done
	done
	read -r served0 _ _ <<<"$(bc_stats "$MNT")"
	if [ "$BC_WIRE" = v2 ]; then
		rc0=$(stat_of reverse_calls_sent) rr0=$(stat_of reverse_replies)
	fi
	rm -f "$CTL/srv-done.storm"
	for ((i = 0; i < n; i++)); do
		echo "storm-$i"
	done >"$CTL/storm-list"
	mv "$CTL/storm-list" "$CTL/srv-req.storm"
	wait_for 120 test -e "$CTL/srv-done.storm" ||
		tb_die "storm: the server's $n conflicting writes did not finish in 120 s" # conformance: cb-recall-storm
	ms=$(cat "$CTL/srv-done.storm")
	tb_log "storm: the server's $n conflicting writes took $ms ms"
	((ms < 30000)) ||
		tb_die "storm: recalling $n delegations took $ms ms (>= 30 s): some were not returned until the lease break" # conformance: cb-recall-storm
	for fd in "${fds[@]}"; do
		exec {fd}<&-
	done
	wait_for 20 no_deleg || tb_die "storm: the server still lists $(deleg_count) delegation(s)" # conformance: cb-recall-storm
	read -r served replies dropped <<<"$(bc_stats "$MNT")"
	tb_log "storm: backchannel calls served $((served - served0)), replies sent $replies, dropped $dropped"
	((served >= served0 + n)) ||
		tb_die "storm: $((served - served0)) callbacks served for $n recalls" # conformance: cb-recall-storm
	((replies >= served)) || tb_die "storm: $replies replies for $served callbacks" # conformance: cb-recall-storm
	((dropped == 0)) || tb_die "storm: $dropped callbacks or replies dropped" # conformance: cb-recall-storm
	[ -z "$(tb_trace_events 'bc_(call|reply)' 'outcome=dropped')" ] ||
		tb_die "storm: a callback or reply was dropped: $(tb_trace_events 'bc_(call|reply)' 'outcome=dropped' | head -n 3)" # conformance: cb-recall-storm
	if [ "$BC_WIRE" = v2 ]; then
		wait_for 10 stat_above reverse_replies $((rr0 + n - 1)) || true
		tb_log "storm: responder relayed $(($(stat_of reverse_calls_sent) - rc0)) callback(s), handed $(($(stat_of reverse_replies) - rr0)) reply(ies) to nfsd"
		(($(stat_of reverse_calls_sent) - rc0 >= n && $(stat_of reverse_replies) - rr0 >= n)) ||
			tb_die "storm: the responder relayed $(($(stat_of reverse_calls_sent) - rc0)) callbacks and $(($(stat_of reverse_replies) - rr0)) replies for $n recalls" # conformance: cb-recall-storm
	fi
	rm -f "$MNT/"storm-*
}

reconnect_during_recall() {
	local vers=$1 before after ok0
	echo >/sys/kernel/tracing/trace
	before=$(tb_trace_events connect | wc -l)
	[ "$BC_WIRE" != v2 ] || ok0=$(stat_of cb_null_replies)
	INJECT=1 recall "$vers" inject deleg-inject 20000
	after=$(tb_trace_events connect | wc -l)
	[ -n "$(tb_trace_events disconnect 'reason=injected')" ] || tb_die "vers=$vers: no disconnect was injected"
	[ -n "$(tb_trace_events reconnect 'reason=injected')" ] ||
		tb_die "vers=$vers: no rpcrdma2_reconnect naming the injected disconnect: $(tb_trace_events reconnect)"
	((after > before)) || tb_die "vers=$vers: no reconnect after the injected disconnect (no rpcrdma2_connect)"
	wait_for 30 callback_up || tb_die "vers=$vers: the callback path is not UP after the reconnect: $(server_state | grep callback)"
	if [ "$BC_WIRE" = v2 ]; then
		# The session's backchannel is bound to the new connection: the
		# responder's CB_NULL on it is answered.
		wait_for 10 stat_above cb_null_replies "$ok0" ||
			tb_die "vers=$vers: no CB_NULL answered on the new connection (the backchannel was not rebound)"
		tb_log "vers=$vers: CB_NULL answered on the new connection"
	fi
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
	tb_log "vers=$vers: recall across a reconnect completed ($(tb_trace_events connect | wc -l) connection(s) traced); the callback path is UP again and delegations are granted"
}

# cb_null_probe VERS: (v2) the responder's CB_NULL on the new mount's
# connection was answered, and rpcrdma2 traced it both ways.
cb_null_probe() {
	local vers=$1 sent0=$2 ok0=$3 call xid
	wait_for 10 stat_above cb_null_replies "$ok0" ||
		tb_die "vers=$vers: the responder's CB_NULL probe got no successful reply (sent $(stat_of cb_null_sent) before: $sent0, replies $(stat_of cb_null_replies), failed $(stat_of cb_null_failed))" # conformance: cb-reply
	call=$(tb_trace_events bc_call 'xid=0xcb' | tail -n 1)
	[ -n "$call" ] || tb_die "vers=$vers: no rpcrdma2_bc_call for the CB_NULL probe (XID 0xcb......)"
	xid=$(xid_of "$call")
	[ -n "$(tb_trace_events bc_reply "xid=$xid .*outcome=sent")" ] ||
		tb_die "vers=$vers: the CB_NULL probe $xid: no rpcrdma2_bc_reply outcome=sent"
	((${#xid} == 10)) || tb_die "vers=$vers: bad probe xid '$xid'"
	tb_log "vers=$vers: CB_NULL probe $xid answered (rpcrdma2_bc_call: $(sed 's/.*rpcrdma2_bc_call: //' <<<"$call"); responder: $(stat_of cb_null_replies) successful replies, $(stat_of cb_null_failed) failed)"
	(($(stat_of cb_null_failed) == 0)) || tb_die "vers=$vers: the client refused a CB_NULL probe"
}

tb_step "insmod rpcrdma2.ko" insmod "$KO"
dmesg -C
tb_trace_rpcrdma2
for vers in 4.1 4.2; do
	f=deleg-$vers
	tb_log "=== vers=$vers (RPC-over-RDMA version $BC_VERS, port $BC_PORT)"
	echo >/sys/kernel/tracing/trace
	if [ "$BC_WIRE" = v2 ]; then
		sent0=$(stat_of cb_null_sent) ok0=$(stat_of cb_null_replies)
		rc0=$(stat_of reverse_calls_sent) rr0=$(stat_of reverse_replies)
	fi
	tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	[ -n "$(tb_trace_events version "vers=$BC_VERS ")" ] ||
		tb_die "vers=$vers: the connection did not settle on RPC-over-RDMA version $BC_VERS: $(tb_trace_events version)"
	echo "written by the client" >"$MNT/$f"
	sync
	wait_for 20 callback_up || tb_die "vers=$vers: the server does not report the callback path up: $(server_state | grep callback)"
	tb_log "vers=$vers: server reports $(server_state | grep '^callback state')"
	[ "$BC_WIRE" != v2 ] || cb_null_probe "$vers" "$sent0" "$ok0"

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
	((ms < 1000)) || tb_die "vers=$vers: the recall took $ms ms (>= 1 s): the delegation was not returned promptly" # conformance: cb-recall
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
	n=$(check_bc_trace "vers=$vers")
	((n >= 1)) || tb_die "vers=$vers: no reverse Call traced"
	tb_log "vers=$vers: $n reverse Call(s) traced, each queued and answered"
	if [ "$BC_WIRE" = v2 ]; then
		wait_for 5 stat_above reverse_replies "$rr0" || true
		tb_log "vers=$vers: responder relayed $(($(stat_of reverse_calls_sent) - rc0)) callback(s) from nfsd, handed $(($(stat_of reverse_replies) - rr0)) reply(ies) to nfsd"
		(($(stat_of reverse_calls_sent) > rc0)) || tb_die "vers=$vers: the responder relayed no callback"
		(($(stat_of reverse_replies) > rr0)) || tb_die "vers=$vers: the responder handed no callback reply to nfsd"
	fi
	cp /sys/kernel/tracing/trace "trace-$vers.txt"
	rm -f "$MNT/"deleg-*
	tb_umount "$MNT"
done

if [ -d "$F" ]; then
	tb_log "=== vers=4.1: reconnect during a recall"
	tb_mount 4.1 rdma "$MNT"
	wait_for 20 callback_up || tb_die "the server does not report the callback path up"
	reconnect_during_recall 4.1
	cp /sys/kernel/tracing/trace trace-reconnect.txt
	rm -f "$MNT/"deleg-*
	tb_umount "$MNT"
else
	tb_log "no $F (CONFIG_FAIL_SUNRPC): reconnect during a recall not tested"
fi

tb_log "=== vers=4.1: a CB_RECALL storm"
tb_mount 4.1 rdma "$MNT"
wait_for 20 callback_up || tb_die "the server does not report the callback path up"
recall_storm 200
tb_umount "$MNT"

if dmesg | grep -E "WARNING:|BUG:|Oops|rpcrdma2: backchannel:|Could not send backchannel reply"; then
	tb_die "kernel warnings or backchannel failures (above)"
fi
