#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: the responder's fault switches against rpcrdma2 on version 2: every kind of the malformed-message catalogue judged (the outcome each must have: RPC error, dropped message or reconnect), injected errors, disconnects, no CONNPROP/private data, delays; nothing crashes, nothing stays busy
# run.sh-options: --timeout 1500 --server-script tools/testing/integration/server/responder-faults.sh
# integration-tier: long
#
# Client script for tools/testing/vm/run.sh. The server runs a clean
# responder on port 20050, one per other fault switch on 20060-20063, and
# one per kind of the malformed-message catalogue on 20100 and up, each
# malforming the 4th reply of every connection
# (server/responder-faults.sh).
#
# For each kind, an NFSv3 mount (soft, short timeouts) through its
# responder writes a file and reads it back, with rpcrdma2's tracepoints
# on. The responder logs the XID of the Call whose reply it malformed.
# The outcome is read off the trace and must be the one EXPECT gives
# (Documentation/conformance.rst, "The malformed-message catalogue"):
#   fail        the malformed message failed the RPC it names (reply
#               class=fail for that XID), and no protocol error broke the
#               connection; "fail ERRNO" also names the errno (-EIO
#               otherwise, as the C client);
#   drop        the message was counted and dropped (class=drop), the
#               connection stayed up, and the I/O completed (the RPC was
#               retransmitted after its timeout);
#   disconnect  the message broke the connection (class=disconnect, or a
#               disconnect for a protocol or completion error), rpcrdma2
#               reconnected and the I/O completed;
#   ignored     nothing was refused: the I/O completed on one connection.
# After each kind: the responder accepts another connection, and did not
# panic. Then the other switches, a clean mount (rmmod refused while it is
# mounted), and rmmod after it: the module's census of ib objects must be
# back to zero (rpcrdma/ib/census.rs). run.sh fails the test on any kernel
# warning, a leak report among them.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
RESPONDER=$SRC/tools/responder/target/release/rpcrdma-responder
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
[ -x "$RESPONDER" ] || tb_die "$RESPONDER is not built (tools/responder/build.sh)"
# stat_of PORT NAME: a responder counter.
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"
# stat_above PORT NAME N: whether counter NAME on PORT exceeds N within 5 s
# (the responder rewrites its counters file within about 0.5 s of a
# change, not at once: Documentation/responder.rst).
stat_above() {
	local i
	for ((i = 0; i < 50; i++)); do
		(($(stat_of "$1" "$2") > $3)) && return 0
		sleep 0.1
	done
	return 1
}

# What rpcrdma2 must do with each kind (see the header). The catalogue and
# this table must agree: a kind missing here fails the test.
declare -A EXPECT=(
	[bad-vers]=disconnect
	[other-vers]=disconnect
	[reserved-flag]=fail
	[no-response-flag]=fail
	[more-on-nomsg]=fail
	[more-with-chunks]=fail
	[unknown-htype]=fail
	[obsolete-htype]=fail
	[trunc-prefix]=drop
	[trunc-header]=fail
	[bad-discriminant]=fail
	[read-list-in-reply]=fail
	[write-count-overrun]=fail
	[credit-zero]=ignored
	[credit-max-zero]=ignored
	[xid-mismatch]=ignored
	[rpc-xid-mismatch]=fail
	[empty-nomsg]=fail
	[msg-no-payload]=fail
	[err-unknown-code]=fail
	[err-trailing]=fail
	[err-vers-settled]=fail
	[connprop-bad]=drop
	[write-longer]=fail
	[foreign-inv]=disconnect
	[duplicate]=ignored
	[extra-grant-zero]=ignored
	[reverse-garbage]=drop
	[cont-xid-change]=fail
	[cont-htype-change]=fail
	[cont-close]=disconnect
	[cont-abandoned]=ignored
	[cont-overlong]="fail -90"
)

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
tb_trace_rpcrdma2
head -c 100000 /dev/urandom >/tmp/ref

mount_opts() { echo "vers=3,proto=rdma,port=$1,nolock,soft,timeo=30,retrans=2"; }

try_port() { # PORT: mount, write, read back; returns 0 if it all worked
	local port=$1 ok=0
	mkdir -p "$MNT"
	if timeout 40 mount -t nfs -o "$(mount_opts "$port")" "$NFS_SERVER:$NFS_EXPORT" "$MNT"; then
		# The direct read is a READ whose data comes back by RDMA Write
		# (the reply the chunk-list kinds rewrite).
		if timeout 40 cp /tmp/ref "$MNT/f-$port" &&
			timeout 40 dd if="$MNT/f-$port" of=/tmp/back bs=128k iflag=direct status=none &&
			cmp -s /tmp/ref /tmp/back; then
			ok=1
		fi
		timeout 20 umount -f "$MNT" || timeout 10 umount -l "$MNT" || true
	fi
	((ok))
}

probe_port() { # PORT: one more connection attempt (a mount, then unmount)
	mkdir -p "$MNT"
	if timeout 40 mount -t nfs -o "$(mount_opts "$1")" "$NFS_SERVER:$NFS_EXPORT" "$MNT"; then
		timeout 20 umount -f "$MNT" || timeout 10 umount -l "$MNT" || true
	fi
}

# outcome XID: what the trace (cleared before the kind's mount) shows
# rpcrdma2 did with the malformed message answering XID.
outcome() {
	local xid=$1 why
	why=$(tb_trace_events disconnect | sed -n 's/.* reason=//p' |
		grep -v -x -e close -e destroy -e 'RPC timeout' | head -n 1)
	if [ -n "$(tb_trace_events reply 'class=disconnect')" ] || [ -n "$why" ]; then
		echo "disconnect${why:+ ($why)}"
	elif f=$(tb_trace_events reply "xid=$xid .*class=fail ") && [ -n "$f" ]; then
		echo "fail ($(sed -n 's/.* status=//p' <<<"$f" | head -n 1))"
	elif [ -n "$(tb_trace_events reply 'class=drop')" ]; then
		echo drop
	else
		echo ignored
	fi
}

"$RESPONDER" --list-malformed >/tmp/malformed-kinds
bad=()
port=20100
while read -r kind _; do
	want=${EXPECT[$kind]:-}
	[ -n "$want" ] || tb_die "kind $kind of the responder's catalogue has no expected outcome here"
	echo >/sys/kernel/tracing/trace
	io=failed
	if try_port "$port"; then io=ok; fi
	xid=$(sed -n 's/.*malformed reply [0-9]* (xid \(0x[0-9a-f]*\)).*/\1/p' \
		"/results/ctl/responder-$port.log" | head -n 1)
	[ -n "$xid" ] || tb_die "port $port ($kind): the responder malformed no reply"
	got=$(outcome "$xid")
	tb_log "kind $kind (port $port, xid $xid): expected $want, got $got, I/O $io"
	[[ $got == "$want"* ]] || { tb_trace_events disconnect | head -n 6; tb_trace_events reply | head -n 12; } | sed "s/^/  $kind trace: /"
	case $want in
	disconnect) [[ $got == disconnect* && $io == ok ]] || bad+=("$kind: $got, I/O $io") ;;
	fail) [[ $got == fail* ]] || bad+=("$kind: $got, I/O $io") ;;
	"fail "*) [[ $got == "fail (${want#fail })" ]] || bad+=("$kind: $got, I/O $io") ;;
	drop | ignored) [[ $got == "$want" && $io == ok ]] || bad+=("$kind: $got, I/O $io") ;;
	esac
	! grep -q "panicked" "/results/ctl/responder-$port.log" || tb_die "the responder on $port panicked"
	before=$(stat_of "$port" connections)
	probe_port "$port"
	stat_above "$port" connections "$before" ||
		tb_die "the responder on $port ($kind) accepts no more connections after its fault"
	port=$((port + 1))
done </tmp/malformed-kinds
((port - 20100 >= 25)) || tb_die "the catalogue has only $((port - 20100)) kinds"
if ((${#bad[@]})); then
	printf '%s\n' "${bad[@]}" | sed 's/^/unexpected outcome: /'
	tb_die "${#bad[@]} malformed-message kinds did not have their expected outcome" # conformance: malformed-outcomes
fi

# The switches without a malformation must give a working mount; an
# injected RDMA2_ERR_* fails one RPC; an injected disconnect reconnects.
for port in 20060 20061 20062 20063; do
	tb_log "=== port $port: $(head -n 1 "/results/ctl/responder-$port.log" | sed 's/.*responder: //')"
	echo >/sys/kernel/tracing/trace
	case $port in
	20060) try_port "$port" || true
	       [ -n "$(tb_trace_events peer_error 'code=10 ')" ] ||
		       tb_die "port 20060: the injected RDMA2_ERR (code 10) was not seen" ;;
	# On iWARP the peer's close flushes the QP before the CM reports it:
	# the connection may end as "flushed" there, never on RoCE.
	20061) try_port "$port" || tb_die "port 20061: no recovery from the injected disconnect"
	       peer='reason=peer disconnected'
	       [ "$RDMA_PROVIDER" = siw ] && peer='reason=(peer disconnected|flushed)$'
	       [ -n "$(tb_trace_events disconnect "$peer")" ] ||
		       tb_die "port 20061: the peer's disconnect was not traced ($(tb_trace_events disconnect | sed -n 's/.* reason=//p' | sort | uniq -c | tr '\n' ' '))" ;;
	*) try_port "$port" || tb_die "port $port: the mount or its I/O failed: $(tail -n 5 "/results/ctl/responder-$port.log")" ;; # conformance: no-private-data
	esac
done
stat_above 20063 replies_delayed 0 && (($(stat_of 20063 replies_delayed) == 1)) ||
	tb_die "port 20063: not exactly one reply was delayed"
(($(stat_of 20062 connprop_sent) == 0)) || tb_die "port 20062: a CONNPROP was sent"
stat_above 20061 disconnects_injected 0 || tb_die "port 20061: no disconnect was injected"

TB_MOUNT_TIMEOUT=60 NFS_RDMA_PORT=20050 tb_mount 3 rdma "$MNT"
cp /tmp/ref "$MNT/clean" && cmp /tmp/ref "$MNT/clean" || tb_die "clean mount after the faults: I/O failed"
! rmmod rpcrdma2 2>/tmp/rmmod.err || tb_die "rmmod rpcrdma2 succeeded under a live mount"
grep -q "in use" /tmp/rmmod.err || tb_die "rmmod under a mount failed, but not as busy: $(cat /tmp/rmmod.err)"
tb_umount "$MNT"
# Every connection of the 30-odd faulty ones is gone: the module unloads
# and its census of ib objects (cm ids, PDs, CQs, QPs, MRs, mappings,
# buffers) is back to zero (a leak would be a warning line, see run.sh).
dmesg -C
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
dmesg | grep -q "rpcrdma2: ib census at unload: nothing held" ||
	tb_die "no clean census at unload: $(dmesg | grep 'census' | head -n 8)"
tb_log "responder fault switches: all checks passed"
