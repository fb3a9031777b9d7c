#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Client script for `make demo` (runs in the client guest): shows, as a
# user would type it, rpcrdma2 being loaded and NFS running over it: once
# to the stock Linux server (svcrdma, port 20049, RPC-over-RDMA version 1
# only) and, when the server guest runs the project's responder
# (tools/responder, port 20050), once on version 2.

set -uo pipefail
# shellcheck source=vm/guest/lib.sh
. "$TESTBED_LIB"

MNT=/mnt/nfs
V2_PORT=20050

show() {
	printf '\n\033[1mclient# %s\033[0m\n' "$*"
	bash -c "$*" 2>&1
}
say() {
	printf '\n\033[36m== %s\033[0m\n' "$*"
}
fail() {
	printf '\n\033[31mdemo: %s\033[0m\n' "$*"
	exit 1
}
# xprt FIELD: field FIELD (1-based, after "rdma") of the mount's xprt: line.
xprt() {
	awk -v m="$MNT" -v f="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $(f + 2); exit}' \
		/proc/self/mountstats
}
# Tell what the connection negotiated and what the data path did, in words.
report() {
	local port=$1 vers
	vers=$(tb_trace_events version "conn=" | tail -n 1 | sed -n 's/.* vers=\([0-9]\) how=\(.*\)$/version \1 (\2)/p')
	[ -n "$vers" ] || vers="no version settled?"
	say "port $port: RPC-over-RDMA $vers"
	printf '   Read chunk segments (NFS WRITE data pulled by the server): %s\n' "$(xprt 11)"
	printf '   Write chunk segments (NFS READ data placed by the server): %s\n' "$(xprt 12)"
	printf '   Reply chunk segments (replies too large to send inline):   %s\n' "$(xprt 13)"
	printf '   Long Calls (whole Call in a Read chunk):                   %s\n' "$(xprt 21)"
	printf '   MRs the server invalidated remotely (Send With Invalidate): %s\n' "$(xprt 28)"
	printf '   NFSv4.1 callbacks served (backchannel):                    %s\n' "$(xprt 29)"
}
run_mount() { # PORT: mount NFSv4.1 at the default sizes, copy a file, report
	local port=$1
	show "mount -t nfs -o vers=4.1,proto=rdma,port=$port $NFS_SERVER:$NFS_EXPORT $MNT" ||
		fail "the mount through port $port failed"
	show "dmesg | grep 'rpcrdma2:' | tail -n 3"
	show "cp /tmp/demo $MNT/demo && sha256sum /tmp/demo $MNT/demo" ||
		fail "copy over port $port failed"
	a=$(sha256sum </tmp/demo) b=$(sha256sum <"$MNT/demo")
	[ "$a" = "$b" ] || fail "the copy over port $port differs"
	report "$port"
	show "rm $MNT/demo && umount $MNT"
}

show "uname -r"
show "rdma link show"
show "modinfo $SRC/rpcrdma2.ko | grep -E '^(name|description|license|parm):'"
dmesg -C
show "insmod $SRC/rpcrdma2.ko && dmesg | grep rpcrdma2"
tb_trace_rpcrdma2
mkdir -p "$MNT"
head -c 3000000 /dev/urandom >/tmp/demo

say "NFSv4.1 to the stock Linux server (svcrdma): it speaks RPC-over-RDMA version 1 only"
run_mount "$NFS_RDMA_PORT"

if [ -s "/results/ctl/responder-$V2_PORT.stats" ]; then
	say "NFSv4.1 through the project's RPC-over-RDMA version 2 responder (forwarding to nfsd)"
	echo >/sys/kernel/tracing/trace
	run_mount "$V2_PORT"
else
	say "(the server runs no version 2 responder on port $V2_PORT: version 2 not shown)"
fi

show "rmmod rpcrdma2 && echo unloaded"
say "every event is in the rpcrdma2 tracepoints: trace-cmd record -e rpcrdma2 (see Documentation/admin-guide.rst)"
