#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 backchannel on version 2 (the responder relaying nfsd's callbacks): delegations, CB_RECALL, CB_NULL probes, traced reverse Calls, reconnect during a recall; CB_NULL on version 1
# run.sh-options: --server-script tools/testing/integration/server/responder-callbacks.sh
#
# Client script for tools/testing/vm/run.sh. The server
# (server/responder-callbacks.sh) publishes nfsd's client state, does
# conflicting accesses on request, and runs the responder with
# --relay-callbacks --probe-callbacks on port 20110 (versions 2 and 1)
# and 20111 (--v1-only): nfsd's callbacks on the responder's TCP
# connection reach rpcrdma2 as reverse-direction Calls (RDMA2_MSG with
# F_RESPONSE clear), rpcrdma2's replies (F_RESPONSE set) go back to nfsd,
# and when nfsd gives a session its backchannel the responder sends a
# CB_NULL of its own (nfsd sends none to NFSv4.1 and later sessions).
#   1.-9. lib/backchannel.sh on version 2 (port 20110);
#   10. on port 20111 (version 1 only): an NFSv4.1 mount's connection
#       settles on version 1, and the responder's CB_NULL probe on it is
#       answered (rpcrdma2_bc_call and rpcrdma2_bc_reply outcome=sent).
#   11. on port 20112 (--bad-reverse-call): the responder's
#       reverse-direction Call offering a Write chunk is answered with
#       RDMA2_ERROR RDMA2_ERR_REPLY_RESOURCE, F_RESPONSE set (-00 §6.4.3;
#       rpcrdma2_reply class=reverse_error), and the mount goes on on
#       the same connection.
#   12. on port 20113 (--unknown-htype-call): a message of header type 7
#       without F_RESPONSE, carrying the XID of a Call in flight, ahead
#       of that Call's reply, is answered with RDMA2_ERROR
#       RDMA2_ERR_INVAL_HTYPE, F_RESPONSE set (-00 §6.4.3); the Call
#       completes with its own reply and the mount stays on one
#       connection.
#   13. on port 20114 (--continued-reverse-call): when the session gets
#       its backchannel, a CB_NULL continued over two RDMA2_MSG pieces
#       without F_RESPONSE is reassembled (rpcrdma2_reply
#       class=reverse_piece, then class=reverse_call), served by the
#       callback service and answered with a successful reply carrying
#       F_RESPONSE; the mount goes on on its one connection.
#   14. on port 20115 (--inline 1024 --pad-callbacks 150): a CB_RECALL
#       whose reply (about 1.3 KB) exceeds the client's 1024-byte call
#       threshold: rpcrdma2 continues it (-00 §6.5; rpcrdma2_piece
#       dir=bc_reply, F_MORE on all but the last; rpcrdma2_bc_reply
#       outcome=sent), the responder reassembles it, finds every appended
#       operation answered NFS4_OK and hands nfsd the reply without
#       them; the recall completes, nothing is dropped.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

BC_WIRE=v2
BC_PORT=20110
BC_STATS=/results/ctl/responder-20110.stats
# shellcheck source=lib/backchannel.sh
. "$SRC/tools/testing/integration/lib/backchannel.sh"
cat "$BC_STATS"

tb_log "=== CB_NULL on version 1 (responder --v1-only, port 20111)"
BC_STATS=/results/ctl/responder-20111.stats
BC_VERS=1
echo >/sys/kernel/tracing/trace
sent0=$(stat_of cb_null_sent) ok0=$(stat_of cb_null_replies)
NFS_RDMA_PORT=20111 tb_mount 4.1 rdma "$MNT"
[ -n "$(tb_trace_events version "vers=1 ")" ] ||
	tb_die "port 20111: the connection did not settle on version 1: $(tb_trace_events version)"
cb_null_probe 4.1 "$sent0" "$ok0"
n=$(check_bc_trace "port 20111")
((n >= 1)) || tb_die "port 20111: no reverse Call traced"
tb_umount "$MNT"

# planted_answer PORT KIND WHAT: mounts NFSv4.1 through the responder on
# PORT (one planted message per connection, its counters KIND_sent,
# KIND_answered and KIND_wrong), checks that the connection settled on
# version 2 and waits until the client answered. Fails (status 1, the
# counters logged) unless one message was sent and answered as it must
# be. Leaves the mount up and sets CONNS0 and CLOSED0 (the responder's
# connection counters before the mount) for goes_on.
planted_answer() {
	local port=$1 kind=$2 i
	BC_STATS=/results/ctl/responder-$port.stats
	echo >/sys/kernel/tracing/trace
	CONNS0=$(stat_of connections) CLOSED0=$(stat_of connections_closed)
	NFS_RDMA_PORT=$port tb_mount 4.1 rdma "$MNT"
	[ -n "$(tb_trace_events version "vers=2 ")" ] ||
		tb_die "port $port: the connection did not settle on version 2: $(tb_trace_events version)"
	for ((i = 0; i < 50; i++)); do
		(($(stat_of "${kind}_answered") + $(stat_of "${kind}_wrong") >= 1)) && break
		ls "$MNT" >/dev/null
		sleep 0.2
	done
	tb_log "port $port: $kind: sent $(stat_of "${kind}_sent"), answered $(stat_of "${kind}_answered"), wrong $(stat_of "${kind}_wrong")"
	(($(stat_of "${kind}_sent") == 1)) &&
		[ "$(stat_of "${kind}_answered") $(stat_of "${kind}_wrong")" = "1 0" ] || {
		tail -n 3 "/results/ctl/responder-$port.log"
		return 1
	}
}

# goes_on PORT CONN: the mount goes on after the answer: 200 KB written,
# caches dropped and read back identical (else dies); fails (status 1,
# logged) if connection CONN (any, if empty) was torn down or the
# responder saw other than one connection since planted_answer, or one
# closed. Unmounts.
goes_on() {
	local port=$1 conn=$2
	head -c 200000 /dev/urandom >/tmp/goes-on
	cp /tmp/goes-on "$MNT/goes-on"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cmp /tmp/goes-on "$MNT/goes-on" || tb_die "port $port: data differs after the answer"
	rm -f "$MNT/goes-on"
	local ok=0
	[ -z "$(tb_trace_events disconnect "${conn:+conn=$conn }")" ] ||
		{ tb_log "port $port: torn down after the answer: $(tb_trace_events disconnect)"; ok=1; }
	(($(stat_of connections) == CONNS0 + 1 && $(stat_of connections_closed) == CLOSED0)) ||
		{ tb_log "port $port: $(($(stat_of connections) - CONNS0)) connection(s), $(($(stat_of connections_closed) - CLOSED0)) closed"; ok=1; }
	tb_umount "$MNT"
	return $ok
}

tb_log "=== a reverse-direction Call we cannot serve (responder --bad-reverse-call, port 20112)"
planted_answer 20112 bad_reverse_call ||
	tb_die "port 20112: the reverse-direction Call with a Write chunk was not answered (once) with RDMA2_ERR_REPLY_RESOURCE" # conformance: reverse-error
rev=$(tb_trace_events reply 'xid=0xcbad0001 .*class=reverse_error' | head -n 1)
[ -n "$rev" ] ||
	tb_die "port 20112: no rpcrdma2_reply xid=0xcbad0001 class=reverse_error: $(tb_trace_events reply | tail -n 5)"
conn=$(sed -n 's/.* conn=\([0-9]*\) .*/\1/p' <<<"$rev")
[ -n "$conn" ] || tb_die "port 20112: no connection id in: $rev"
dmesg | grep -q "answered reverse-direction Call xid 0xcbad0001 with RDMA2_ERR_REPLY_RESOURCE" ||
	tb_die "port 20112: no kernel log line for the answer"
goes_on 20112 "$conn" ||
	tb_die "port 20112: the mount did not go on on its one connection after the answer" # conformance: reverse-error
tb_log "port 20112: the reverse-direction Call with a Write chunk was answered with RDMA2_ERR_REPLY_RESOURCE; the mount went on on one connection"

tb_log "=== a message of an unknown header type carrying the XID of a Call in flight (responder --unknown-htype-call, port 20113)"
planted_answer 20113 unknown_htype ||
	tb_die "port 20113: the message of header type 7 was not answered (once) with RDMA2_ERR_INVAL_HTYPE" # conformance: unknown-htype
# The Call whose XID it carried got its own reply (the mount went on).
goes_on 20113 "" ||
	tb_die "port 20113: the mount did not go on on its one connection after the answer" # conformance: unknown-htype
tb_log "port 20113: the unknown header type was answered with RDMA2_ERR_INVAL_HTYPE; the Call it named completed; one connection"

tb_log "=== a reverse-direction Call continued over two pieces (responder --continued-reverse-call, port 20114)"
planted_answer 20114 continued_reverse_call ||
	tb_die "port 20114: the CB_NULL continued over two pieces was not answered (once) with a successful reply" # conformance: continued-reverse-call
piece=$(tb_trace_events reply 'xid=0xcbad0002 .*class=reverse_piece' | head -n 1)
whole=$(tb_trace_events reply 'xid=0xcbad0002 .*class=reverse_call' | head -n 1)
[ -n "$piece" ] && [ -n "$whole" ] ||
	tb_die "port 20114: the pieces were not traced as reverse_piece then reverse_call: $(tb_trace_events reply 'xid=0xcbad0002')" # conformance: continued-reverse-call
[ -n "$(tb_trace_events bc_reply 'xid=0xcbad0002 .*outcome=sent')" ] ||
	tb_die "port 20114: no rpcrdma2_bc_reply xid=0xcbad0002 outcome=sent: $(tb_trace_events bc_reply | tail -n 3)" # conformance: continued-reverse-call
goes_on 20114 "" ||
	tb_die "port 20114: the mount did not go on on its one connection after the answer" # conformance: continued-reverse-call
tb_log "port 20114: the continued CB_NULL was reassembled, served and answered; one connection"

tb_log "=== a callback reply larger than the inline threshold (responder --inline 1024 --pad-callbacks 150, port 20115)"
BC_STATS=/results/ctl/responder-20115.stats
echo >/sys/kernel/tracing/trace
NFS_RDMA_PORT=20115 tb_mount 4.1 rdma "$MNT"
[ -n "$(tb_trace_events version "vers=2 ")" ] ||
	tb_die "port 20115: the connection did not settle on version 2: $(tb_trace_events version)"
wait_for 20 callback_up || tb_die "port 20115: the server does not report the callback path up"
read -r served0 _ dropped0 <<<"$(bc_stats "$MNT")"
recall 4.1 padded deleg-padded 20000
wait_for 5 stat_above padded_replies_stripped 0 || true
tb_log "port 20115: padded callbacks $(stat_of padded_callbacks), replies stripped $(stat_of padded_replies_stripped), not reached $(stat_of padded_replies_not_reached), wrong $(stat_of padded_replies_wrong); continued replies $(stat_of continued_reverse_replies) in $(stat_of reverse_reply_pieces) pieces, interrupted $(stat_of reverse_replies_interrupted)"
(($(stat_of padded_callbacks) >= 1)) || tb_die "port 20115: the responder padded no CB_COMPOUND"
(($(stat_of padded_replies_stripped) >= 1 && $(stat_of padded_replies_wrong) == 0)) ||
	tb_die "port 20115: no reply to a padded CB_COMPOUND came with every appended operation NFS4_OK" # conformance: large-cb-reply
(($(stat_of continued_reverse_replies) >= 1 && $(stat_of reverse_replies_interrupted) == 0)) ||
	tb_die "port 20115: the responder reassembled no continued callback reply, or one was interrupted" # conformance: large-cb-reply
pieces=$(tb_trace_events piece 'dir=bc_reply ')
[ -n "$(grep 'more=1' <<<"$pieces")" ] && [ -n "$(grep 'more=0' <<<"$pieces")" ] ||
	tb_die "port 20115: no rpcrdma2_piece dir=bc_reply with and without F_MORE: $pieces" # conformance: large-cb-reply
xid=$(xid_of "$(head -n 1 <<<"$pieces")")
big=$(tb_trace_events bc_reply "xid=$xid .*outcome=sent")
[ -n "$big" ] || tb_die "port 20115: no rpcrdma2_bc_reply xid=$xid outcome=sent: $(tb_trace_events bc_reply | tail -n 3)"
len=$(sed -n 's/.* len=\([0-9]*\) .*/\1/p' <<<"$big" | head -n 1)
((len > 1024)) || tb_die "port 20115: the continued reply $xid is $len bytes, within the threshold"
read -r served _ dropped <<<"$(bc_stats "$MNT")"
((served > served0 && dropped == dropped0)) ||
	tb_die "port 20115: backchannel calls served $served (before: $served0), dropped $dropped (before: $dropped0)" # conformance: large-cb-reply
rm -f "$MNT/"deleg-*
tb_umount "$MNT"
tb_log "port 20115: the $len-byte reply to callback $xid went in $(wc -l <<<"$pieces") pieces, was reassembled, stripped and handed to nfsd; the recall completed"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 backchannel (version 2, and CB_NULL on version 1): all checks passed"
