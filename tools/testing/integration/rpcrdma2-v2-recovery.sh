#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: RDMA2_ERROR recovery (-00 §6.4.3, §6.5) on NFS I/O over version 2: each RDMA2_ERR_* code injected where its chunk is used; recoverable ones resend the RPC as -00 asks and the I/O succeeds, the others fail the RPC cleanly and the mount stays usable
# run.sh-options: --timeout 1500 --server-script tools/testing/integration/server/responder-recovery.sh
# integration-tier: long
#
# Client script for tools/testing/vm/run.sh. The server runs one
# responder per transport error on ports 20100-20109
# (server/responder-recovery.sh); the data is written first through
# svcrdma. For each port, an NFSv3 mount (soft) over rpcrdma2, version 2:
#   recoverable errors, the I/O succeeds and its data is compared (cmp):
#     20100 WRITEs of 256 KiB refused for their Read chunk
#           (RDMA2_ERR_READ_CHUNKS): resent as Position-Zero Reads;
#     20101 READs refused for their Write chunk (RDMA2_ERR_REPLY_RESOURCE,
#           the responder takes no Write chunks): resent with a Reply
#           chunk of the length asked for;
#     20102 READDIRs refused for a Reply chunk of 3 segments
#           (RDMA2_ERR_SEGMENTS 2): resent with 2 (the Reply chunk cut to a
#           prefix of the receive buffer), later ones planned so at once;
#     20103 a READ refused with RDMA2_ERR_WRITE_CHUNKS: resent without
#           Write chunks, with a Reply chunk;
#     20104 a READ refused with RDMA2_ERR_WRITE_RESOURCE: resent with a
#           Reply chunk of the length needed;
#     20105 a Call during the mount refused with RDMA2_ERR_REPLY_RESOURCE:
#           resent with a Reply chunk;
#   and for each: the responder counted the resent XID as a resend done as
#   -00 asks (resent_<code>), none otherwise (resent_noncompliant) and no
#   resend of an RPC that must fail (refused_resent); rpcrdma2's counter
#   of that recovery (mountstats fields 32-36) and its tracepoints
#   (rpcrdma2_peer_error action=resend:<kind>, rpcrdma2_marshal
#   resends=1 hints=...) say so;
#   errors that fail the RPC, the I/O fails (or is retried by the NFS
#   client with a new RPC), and the mount works afterwards:
#     20106 a WRITE refused with RDMA2_ERR_READ_CHUNKS, and its
#           Position-Zero Read resend refused again: -00 "MUST terminate";
#     20107 RDMA2_ERR_SYSTEM, 20108 BAD_XDR, INVAL_HTYPE, INVAL_FLAG and an
#           undefined code, for READs;
#     20109 RDMA2_ERR_REPLY_RESOURCE for more than the READDIR's whole
#           receive buffer: -EMSGSIZE;
#   and for each: rpcrdma2 failed the RPC (rpcrdma2_reply class=fail with
#   the errno, rpcrdma2_peer_error action=fail, mountstats field 37), the
#   refused XID was never sent again (refused_resent 0), and a later I/O
#   of the same kind on that mount succeeds. run.sh fails the test on any
#   kernel warning in the client's log.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
FILE=f262144
ENTRIES=300
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

# stat_of PORT NAME: a responder counter.
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"
xprt_field() { # N: field N of the xprt: rdma line (Documentation/admin-guide.rst)
	awk -v m="$MNT" -v f="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $(f + 2); exit}' \
		/proc/self/mountstats
}
# mountstats fields of the recoveries (admin-guide.rst)
F_POSITION_ZERO=32 F_REPLY_CHUNK=33 F_SEGMENTS=34 F_WRITE_RESOURCE=35 F_REPLY_RESOURCE=36 F_FAILED=37

mount_port() {
	mkdir -p "$MNT"
	timeout 60 mount -t nfs -o "vers=3,proto=rdma,port=$1,nolock,soft,timeo=100,retrans=2" \
		"$NFS_SERVER:$NFS_EXPORT" "$MNT" || tb_die "port $1: mount failed: $(dmesg | grep rpcrdma2 | tail -n 3)"
	tb_assert_proto "$MNT" rdma
	dmesg | grep -q "rpcrdma2: server answered in RPC-over-RDMA version 2" ||
		tb_die "port $1: the connection did not settle on version 2"
}
read_back() { # NAME: drop caches, compare the file with the reference
	tb_drop_caches
	timeout 60 cmp "$REF/$FILE" "$MNT/$1"
}
list_dir() { # the directory's entry count
	tb_drop_caches
	timeout 60 ls -f "$MNT/dir" | grep -c '^e'
}
write_file() { # NAME
	timeout 60 dd if="$REF/$FILE" of="$MNT/$1" bs=256k conv=fsync status=none
}
settle() { sleep 2; } # the responder writes its counters within 0.5 s

common_checks() { # PORT
	local port=$1
	(($(stat_of "$port" resent_noncompliant) == 0)) ||
		tb_die "port $port: $(stat_of "$port" resent_noncompliant) resends did not do what the error asked" # conformance: recovery-resend
	(($(stat_of "$port" refused_resent) == 0)) ||
		tb_die "port $port: $(stat_of "$port" refused_resent) RPCs that had to fail were sent again" # conformance: recovery-fail
	(($(stat_of "$port" malformed) == 0)) || tb_die "port $port: the responder saw malformed messages"
	! grep -q "panicked" "/results/ctl/responder-$port.log" || tb_die "the responder on $port panicked"
}

# recovered PORT CODE-NAME KIND FIELD RESENT-STAT IO...: IO (a command)
# must succeed through a mount on PORT; the responder refused with
# CODE-NAME and counted the resend in RESENT-STAT; rpcrdma2 counted the
# recovery KIND in mountstats field FIELD.
recovered() {
	local port=$1 name=$2 kind=$3 field=$4 resent=$5 n mine
	shift 5
	tb_log "=== port $port: $name, recovered by $kind"
	dmesg -C
	tb_trace_rpcrdma2
	mount_port "$port"
	"$@" || tb_die "port $port: '$*' failed although $name is recoverable: $(dmesg | grep rpcrdma2 | tail -n 3)"
	settle
	n=$(stat_of "$port" "$resent")
	mine=$(xprt_field "$field")
	tb_log "port $port: errors sent $(stat_of "$port" errors_sent), resends as asked ($resent) $n; rpcrdma2's $kind count $mine, failed $(xprt_field $F_FAILED)"
	((n >= 1)) || tb_die "port $port: no Call was resent after $name: $(tail -n 5 "/results/ctl/responder-$port.log")" # conformance: recovery-resend
	((mine >= n)) || tb_die "port $port: mountstats field $field counts $mine recoveries, the responder saw $n resends"
	(($(xprt_field $F_FAILED) == 0)) || tb_die "port $port: $(xprt_field $F_FAILED) RPCs failed"
	common_checks "$port"
	[ -n "$(tb_trace_events peer_error "\\($name\\) action=resend:$kind")" ] ||
		tb_die "port $port: no rpcrdma2_peer_error with ($name) action=resend:$kind"
	[ -n "$(tb_trace_events marshal "resends=1 hints=")" ] ||
		tb_die "port $port: no rpcrdma2_marshal of a resend"
	tb_log "port $port: $(tb_trace_events marshal 'resends=1 ' | head -n 1 | sed 's/.*rpcrdma2_marshal: //')"
	[ -z "$(tb_trace_events reply 'class=fail')" ] || tb_die "port $port: an RPC failed: $(tb_trace_events reply 'class=fail' | head -n 2)"
	[ -z "$(tb_trace_events disconnect)" ] || tb_die "port $port: the connection was dropped"
	dmesg | grep -q "rpcrdma2: reply: server answered $name .*: resending it" ||
		tb_die "port $port: no log line saying what was done about $name"
	tb_umount "$MNT"
}

# failed PORT STATUS NAME... -- IO...: IO through a mount on PORT meets
# the errors NAME... (each answered by a failed RPC with status STATUS);
# the same IO then succeeds on that mount (it is tried up to 6 times: the
# NFS client may retry a failed READ itself with a new RPC).
failed() {
	local port=$1 status=$2 names=() name tries=0 fails injected
	shift 2
	while [ "$1" != -- ]; do names+=("$1"); shift; done
	shift
	tb_log "=== port $port: ${names[*]} must fail the RPC ($status)"
	dmesg -C
	tb_trace_rpcrdma2
	mount_port "$port"
	until "$@"; do
		tries=$((tries + 1))
		tb_log "port $port: '$*' failed (attempt $tries), as the error asks"
		((tries < 6)) || tb_die "port $port: the I/O never succeeded after the errors: the mount is not usable"
	done
	settle
	injected=$(stat_of "$port" errors_injected)
	fails=$(tb_trace_events reply "class=fail .*status=$status" | wc -l)
	tb_log "port $port: $tries failed attempts; responder injected $injected errors; rpcrdma2 failed $fails RPCs, mountstats failed $(xprt_field $F_FAILED)"
	((injected >= ${#names[@]})) || tb_die "port $port: only $injected errors injected"
	for name in "${names[@]}"; do
		[ -n "$(tb_trace_events peer_error "\\($name\\) action=fail")" ] ||
			tb_die "port $port: no rpcrdma2_peer_error with ($name) action=fail"
	done
	((fails == ${#names[@]})) || tb_die "port $port: ${#names[@]} errors must fail ${#names[@]} RPCs with $status, $fails did" # conformance: recovery-fail
	(($(xprt_field $F_FAILED) == ${#names[@]})) || tb_die "port $port: mountstats counts $(xprt_field $F_FAILED) failed RPCs"
	common_checks "$port"
	[ -z "$(tb_trace_events disconnect)" ] || tb_die "port $port: the connection was dropped"
	dmesg | grep -q "rpcrdma2: reply: server answered .*RPC failed" || tb_die "port $port: no log line about the failed RPC"
	tb_umount "$MNT"
}

dmesg -C
# cont_reply_pieces=0: READDIRs and the mount's Calls are offered Reply
# chunks on version 2 as on version 1 (by default their replies are
# continued instead), so the Reply chunk errors of 20102, 20105 and 20109
# have a Reply chunk to refuse.
tb_step "insmod rpcrdma2.ko" insmod "$KO" cont_reply_pieces=0
tb_random_files "$REF" f 262144

# The data, through svcrdma (no injected errors).
tb_mount 3 rdma "$MNT"
mkdir -p "$MNT/dir"
for i in $(seq 1 $ENTRIES); do : >"$MNT/dir/e$i-$(printf '%040d' "$i")"; done
cp "$REF/$FILE" "$MNT/$FILE"
tb_umount "$MNT"

# The I/O of each case.
io_write_read() { write_file "$1" && read_back "$1"; }
io_read() { read_back "$FILE"; }
io_list() { [ "$(list_dir)" -eq $ENTRIES ]; }
io_list_twice() { io_list && io_list; }

recovered 20100 RDMA2_ERR_READ_CHUNKS position_zero $F_POSITION_ZERO resent_read_chunks io_write_read w-20100
(($(stat_of 20100 refused_read_chunks) == $(stat_of 20100 resent_read_chunks))) ||
	tb_die "port 20100: $(stat_of 20100 refused_read_chunks) WRITEs refused, $(stat_of 20100 resent_read_chunks) resent as Position-Zero Reads" # conformance: recovery-position-zero
recovered 20101 RDMA2_ERR_REPLY_RESOURCE reply_resource $F_REPLY_RESOURCE resent_reply_resource io_read
(($(stat_of 20101 refused_write_chunks) == $(stat_of 20101 resent_reply_resource))) ||
	tb_die "port 20101: $(stat_of 20101 refused_write_chunks) READs refused, $(stat_of 20101 resent_reply_resource) resent"
recovered 20102 RDMA2_ERR_SEGMENTS segments $F_SEGMENTS resent_segments io_list_twice
recovered 20103 RDMA2_ERR_WRITE_CHUNKS reply_chunk $F_REPLY_CHUNK resent_write_chunks io_read
recovered 20104 RDMA2_ERR_WRITE_RESOURCE write_resource $F_WRITE_RESOURCE resent_write_resource io_read
recovered 20105 RDMA2_ERR_REPLY_RESOURCE reply_resource $F_REPLY_RESOURCE resent_reply_resource io_read

failed 20106 -5 RDMA2_ERR_READ_CHUNKS -- io_write_read w-20106
(($(stat_of 20106 resent_read_chunks) == 1)) ||
	tb_die "port 20106: the WRITE was not resent as a Position-Zero Read before failing" # conformance: recovery-position-zero
[ -n "$(tb_trace_events peer_error '\(RDMA2_ERR_READ_CHUNKS\) action=resend:position_zero')" ] ||
	tb_die "port 20106: the first RDMA2_ERR_READ_CHUNKS was not recovered"
failed 20107 -5 RDMA2_ERR_SYSTEM -- io_read
failed 20108 -5 RDMA2_ERR_BAD_XDR RDMA2_ERR_INVAL_HTYPE RDMA2_ERR_INVAL_FLAG \
	'RDMA2_ERROR \(a code draft -00 does not define\)' -- io_read
failed 20109 -90 RDMA2_ERR_REPLY_RESOURCE -- io_list

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "RDMA2_ERROR recovery: all checks passed"
