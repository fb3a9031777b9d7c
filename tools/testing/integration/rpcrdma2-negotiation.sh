#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 version negotiation: our RDMA2_CONNPROP as the v2 probe, ERR_VERS from svcrdma, v1 fallback with nothing resent, force_v1
# run.sh-options: --server-script tools/testing/integration/server/trace-errvers.sh
#
# Client script for tools/testing/vm/run.sh, with the server tracing
# svcrdma's version errors (server/trace-errvers.sh):
#   1. default module parameters: the connection's first message is our
#      RDMA2_CONNPROP, the version 2 probe (rpcrdma2_connprop dir=sent,
#      XID 0x434f4e50; no RPC is a probe). Proof from the server's side:
#      its trace shows it received a message with vers 2 and that XID
#      (svcrdma_decode_badvers_err) and answered ERR_VERS
#      (svcrdma_err_vers); rpcrdma2 logs the switch to version 1 with
#      nothing to send again (no RPC is resent: no reply class=resend);
#      the mount then works (I/O round trip checked);
#   2. force_v1=1: no probe is sent; the server sees no bad version.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
TRACE=/results/ctl/server-trace.txt
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

server_events() { # EVENT: lines of the server's trace for EVENT
	grep -h "$1" "$TRACE" 2>/dev/null || true
}
wait_trace() { # EVENT COUNT: wait (10 s) until the server traced COUNT
	local i
	for ((i = 0; i < 50; i++)); do
		(($(server_events "$1" | wc -l) >= $2)) && return 0
		sleep 0.2
	done
	return 1
}

head -c 200000 /dev/urandom >/tmp/ref

tb_log "=== default: probe version 2, fall back to version 1"
dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
[ "$(cat /sys/module/rpcrdma2/parameters/force_v1)" = N ] || tb_die "force_v1 is not off by default"
tb_trace_rpcrdma2
tb_mount 3 rdma "$MNT" rsize=1024,wsize=1024
probe=434f4e50
[ -n "$(tb_trace_events connprop 'dir=sent ')" ] || tb_die "rpcrdma2 sent no RDMA2_CONNPROP (no rpcrdma2_connprop dir=sent event)"
[ -z "$(tb_trace_events marshal 'probe=1')" ] || tb_die "an RPC was the version 2 probe"
[ -z "$(tb_trace_events marshal 'vers=2 ')" ] || tb_die "an RPC was sent in version 2 to svcrdma" # conformance: fallback
[ -z "$(tb_trace_events reply 'class=resend')" ] || tb_die "an RPC was sent again after the fallback" # conformance: fallback
[ -n "$(tb_trace_events reply 'class=fallback')" ] || tb_die "no fallback traced"
dmesg | grep "rpcrdma2: server answered the RPC-over-RDMA version 2 probe with ERR_VERS: continuing in version 1 (the probe was our RDMA2_CONNPROP" >/dev/null ||
	tb_die "rpcrdma2 did not fall back to version 1" # conformance: fallback
wait_trace svcrdma_decode_badvers_err 1 || tb_die "the server's trace shows no bad-version message: $(cat "$TRACE" 2>&1 | tail -n 5)"
wait_trace svcrdma_err_vers 1 || tb_die "the server's trace shows no ERR_VERS sent"
server_events svcrdma_decode_badvers_err | head -n 3
server_events svcrdma_decode_badvers_err | grep "xid=0x$probe vers=2" >/dev/null ||
	tb_die "the server did not see the probe (xid 0x$probe) as a version 2 message"
tb_log "server saw xid 0x$probe with vers=2 and answered ERR_VERS"
cp /tmp/ref "$MNT/ref"
tb_umount "$MNT"
tb_drop_caches
tb_mount 3 rdma "$MNT" rsize=1024,wsize=1024
cmp /tmp/ref "$MNT/ref" || tb_die "data differs after the fallback"
rm "$MNT/ref"
tb_umount "$MNT"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2

tb_log "=== force_v1=1: version 1 from the first message"
before=$(server_events svcrdma_decode_badvers_err | wc -l)
dmesg -C
tb_step "insmod rpcrdma2.ko force_v1=1" insmod "$KO" force_v1=1
tb_trace_rpcrdma2
tb_mount 3 rdma "$MNT" rsize=1024,wsize=1024
ls "$MNT" >/dev/null
dmesg | grep "rpcrdma2: connected to .*: RPC-over-RDMA version 1" >/dev/null || tb_die "force_v1: not a version 1 connection"
[ -z "$(tb_trace_events marshal 'probe=1')" ] || tb_die "force_v1: a version 2 probe was sent"
[ -z "$(tb_trace_events connprop 'dir=sent')" ] || tb_die "force_v1: an RDMA2_CONNPROP was sent"
[ -z "$(tb_trace_events marshal 'vers=2')" ] || tb_die "force_v1: a version 2 Call was sent"
tb_umount "$MNT"
sleep 1
after=$(server_events svcrdma_decode_badvers_err | wc -l)
((after == before)) || tb_die "force_v1: the server saw $((after - before)) bad-version messages"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 negotiation: all checks passed"
