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

tb_log "=== a reverse-direction Call we cannot serve (responder --bad-reverse-call, port 20112)"
BC_STATS=/results/ctl/responder-20112.stats
echo >/sys/kernel/tracing/trace
conns0=$(stat_of connections) closed0=$(stat_of connections_closed)
NFS_RDMA_PORT=20112 tb_mount 4.1 rdma "$MNT"
[ -n "$(tb_trace_events version "vers=2 ")" ] ||
	tb_die "port 20112: the connection did not settle on version 2: $(tb_trace_events version)"
answered() { (($(stat_of bad_reverse_call_answered) + $(stat_of bad_reverse_call_wrong) >= 1)); }
for ((i = 0; i < 50; i++)); do
	answered && break
	ls "$MNT" >/dev/null
	sleep 0.2
done
sent=$(stat_of bad_reverse_call_sent)
((sent == 1)) || tb_die "port 20112: the responder sent $sent bad reverse-direction Calls, not 1"
got="$(stat_of bad_reverse_call_answered) $(stat_of bad_reverse_call_wrong)"
[ "$got" = "1 0" ] ||
	tb_die "port 20112: the reverse-direction Call with a Write chunk was not answered with RDMA2_ERR_REPLY_RESOURCE (answered $(stat_of bad_reverse_call_answered), wrong $(stat_of bad_reverse_call_wrong)): $(grep -i 'bad reverse' /results/ctl/responder-20112.log | tail -n 3)" # conformance: reverse-error
rev=$(tb_trace_events reply 'xid=0xcbad0001 .*class=reverse_error' | head -n 1)
[ -n "$rev" ] ||
	tb_die "port 20112: no rpcrdma2_reply xid=0xcbad0001 class=reverse_error: $(tb_trace_events reply | tail -n 5)"
conn=$(sed -n 's/.* conn=\([0-9]*\) .*/\1/p' <<<"$rev")
# The mount goes on, on the same connection.
head -c 200000 /dev/urandom >/tmp/rev-error
cp /tmp/rev-error "$MNT/rev-error"
sync
echo 3 >/proc/sys/vm/drop_caches
cmp /tmp/rev-error "$MNT/rev-error" || tb_die "port 20112: data differs after the RDMA2_ERROR"
rm -f "$MNT/rev-error"
[ -n "$conn" ] && [ -z "$(tb_trace_events disconnect "conn=$conn ")" ] ||
	tb_die "port 20112: connection ${conn:-?} was torn down after answering: $(tb_trace_events disconnect)" # conformance: reverse-error
(($(stat_of connections) == conns0 + 1 && $(stat_of connections_closed) == closed0)) ||
	tb_die "port 20112: $(($(stat_of connections) - conns0)) connection(s), $(($(stat_of connections_closed) - closed0)) closed: the mount did not stay on one connection" # conformance: reverse-error
dmesg | grep -q "answered reverse-direction Call xid 0xcbad0001 with RDMA2_ERR_REPLY_RESOURCE" ||
	tb_die "port 20112: no kernel log line for the answer"
tb_log "port 20112: the reverse-direction Call with a Write chunk was answered with RDMA2_ERR_REPLY_RESOURCE; the mount went on on one connection"
tb_umount "$MNT"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 backchannel (version 2, and CB_NULL on version 1): all checks passed"
