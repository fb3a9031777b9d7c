#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: the responder's fault switches against rpcrdma2 on version 2: malformed replies, injected errors, disconnects, no CONNPROP/private data, delays; nothing crashes, the responder keeps serving
# run.sh-options: --timeout 1200 --server-script tools/testing/integration/server/responder-faults.sh
#
# Client script for tools/testing/vm/run.sh. The server runs a clean
# responder on port 20050 and one per fault switch on 20060-20069
# (server/responder-faults.sh). For each faulty port: an NFSv3 mount
# (soft, short timeouts) is tried and a file written and read back, with
# a time limit; whatever the fault does to that mount (an RPC error, a
# reconnect, a failed mount) is logged, not judged (what rpcrdma2 must do
# is issue 11's). Then:
#   1. the faulty responder is still alive (it accepts another
#      connection) and counted the fault;
#   2. a clean mount through port 20050 still works (I/O checked);
#   3. run.sh fails the test on any kernel warning in the client's log.
# The switches without a malformation (no CONNPROP, no private data,
# 2 credits, a delayed reply) must give a working mount.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$SRC/rpcrdma2.ko
MNT=/mnt/nfs
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
stat_of() { awk -v n="$2" '$1 == n {print $2}' "/results/ctl/responder-$1.stats" 2>/dev/null || echo 0; }

dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
head -c 100000 /dev/urandom >/tmp/ref

try_port() { # PORT: mount, write, read back; returns 0 if it all worked
	local port=$1 ok=0
	mkdir -p "$MNT"
	if timeout 30 mount -t nfs -o "vers=3,proto=rdma,port=$port,nolock,soft,timeo=30,retrans=1" \
		"$NFS_SERVER:$NFS_EXPORT" "$MNT"; then
		if timeout 30 cp /tmp/ref "$MNT/f-$port" && timeout 30 cmp /tmp/ref "$MNT/f-$port"; then
			ok=1
		fi
		timeout 20 umount -f "$MNT" || timeout 10 umount -l "$MNT" || true
	fi
	((ok))
}

probe_port() { # PORT: one more connection attempt (a mount, then unmount)
	mkdir -p "$MNT"
	if timeout 30 mount -t nfs -o "vers=3,proto=rdma,port=$1,nolock,soft,timeo=30,retrans=1" \
		"$NFS_SERVER:$NFS_EXPORT" "$MNT"; then
		timeout 20 umount -f "$MNT" || timeout 10 umount -l "$MNT" || true
	fi
}

clean_check() {
	TB_MOUNT_TIMEOUT=60 NFS_RDMA_PORT=20050 tb_mount 3 rdma "$MNT"
	cp /tmp/ref "$MNT/clean" && cmp /tmp/ref "$MNT/clean" || tb_die "clean mount after port $1: I/O failed"
	tb_umount "$MNT"
}

for port in 20060 20061 20062 20063 20064 20065 20066 20067; do
	tb_log "=== port $port: $(head -n 1 "/results/ctl/responder-$port.log" | sed 's/.*responder: //')"
	if try_port "$port"; then
		tb_log "port $port: the mount worked despite the fault"
	else
		tb_log "port $port: the fault broke that mount (rpcrdma2: $(dmesg | grep rpcrdma2 | tail -n 2 | tr '\n' ' '))"
	fi
	sleep 1
	before=$(stat_of "$port" connections)
	probe_port "$port"
	sleep 1
	(($(stat_of "$port" connections) > before)) ||
		tb_die "the responder on $port accepts no more connections after its fault"
	grep -q "fault injection\|injecting" "/results/ctl/responder-$port.log" ||
		tb_log "port $port: the fault was not reached"
	! grep -q "panicked" "/results/ctl/responder-$port.log" || tb_die "the responder on $port panicked"
	clean_check "$port"
done
for port in 20068 20069; do
	tb_log "=== port $port (must work)"
	try_port "$port" || tb_die "port $port: the mount or its I/O failed: $(tail -n 5 "/results/ctl/responder-$port.log")"
done
(($(stat_of 20069 replies_delayed) == 1)) || tb_die "port 20069: no reply was delayed"
(($(stat_of 20068 connprop_sent) == 0)) || tb_die "port 20068: a CONNPROP was sent"
for port in 20060 20061 20062 20063 20064 20065; do
	(($(stat_of $port malformed_sent) >= 1)) || tb_die "port $port: no malformed reply was sent"
done
(($(stat_of 20067 disconnects_injected) >= 1)) || tb_die "port 20067: no disconnect was injected"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "responder fault switches: all checks passed"
