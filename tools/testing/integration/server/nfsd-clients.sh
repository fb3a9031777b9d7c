#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: lets a client
# test see and poke nfsd's NFSv4 state through the control directory both
# guests share (/results/ctl), until the client is finished:
#
#   * every 0.2 s, /results/ctl/nfsd-clients.txt gets the info and states
#     files of every client in /proc/fs/nfsd/clients (callback state,
#     delegations, opens) and the server's /proc/locks (leases);
#   * a file /results/ctl/srv-req.NAME holding paths relative to the
#     export, one per line, asks for conflicting accesses: the server
#     appends a line to each file locally, to all of them at once.
#     Opening a file for writing breaks any read delegation a client
#     holds (nfsd sends CB_RECALL and the open waits until the delegation
#     is returned, or lease-break-time). The time until every open and
#     write finished, in milliseconds, goes to /results/ctl/srv-done.NAME.
#
# nfsd's delegation and callback tracepoints (nfsd_deleg_*, nfsd_cb_*,
# nfsd_open) and the lease ones (generic_add_lease, break_lease_*) go to
# /results/ctl/server-trace.txt.

set -euo pipefail

EXPORT=${NFS_EXPORT:-/export}
CTL=/results/ctl

snapshot() {
	local d
	for d in /proc/fs/nfsd/clients/*/; do
		[ -d "$d" ] || continue
		echo "=== client $(basename "$d")"
		cat "$d/info" 2>/dev/null || true
		echo "--- states"
		cat "$d/states" 2>/dev/null || true
	done
	echo "=== /proc/locks"
	cat /proc/locks 2>/dev/null || true
}

serve_requests() {
	local req name path start end
	for req in "$CTL"/srv-req.*; do
		[ -e "$req" ] || continue
		name=${req##*/srv-req.}
		path=$(cat "$req")
		rm -f "$req"
		# In the background: a write blocks until the delegation is
		# returned, and the snapshots must go on meanwhile.
		(
			start=$(date +%s%N)
			n=0
			while read -r p; do
				[ -n "$p" ] || continue
				echo "written on the server" >>"$EXPORT/$p" &
				n=$((n + 1))
			done <<<"$path"
			wait
			end=$(date +%s%N)
			echo $(((end - start) / 1000000)) >"$CTL/srv-done.$name.tmp"
			mv "$CTL/srv-done.$name.tmp" "$CTL/srv-done.$name"
			echo "conflicting write to $n file(s) ($(head -n 1 <<<"$path") ...): $(cat "$CTL/srv-done.$name") ms"
		) &
	done
}

# nfsd grants no delegation while any lock manager of the namespace is in
# its grace period (nfs4_open_delegation: locks_in_grace), and lockd's
# lasts the NFSv4 lease time, 90 s, from nfsd's start. Restart nfsd with
# a 10-second lockd grace period and wait it out. (nfsd's own NFSv4 grace
# period is skipped: nfsdcld has no clients to reclaim.)
echo 10 >/proc/sys/fs/nfs/nlm_grace_period
rpc.nfsd 0
rpc.nfsd
grep -q "^rdma" /proc/fs/nfsd/portlist || echo "rdma ${NFS_RDMA_PORT:-20049}" >/proc/fs/nfsd/portlist
grep -q "^rdma" /proc/fs/nfsd/portlist
echo "nfsd restarted with nlm_grace_period=$(cat /proc/sys/fs/nfs/nlm_grace_period): $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
sleep 12

T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T"
echo 4096 >"$T/buffer_size_kb"
for d in "$T"/events/nfsd/nfsd_deleg_* "$T"/events/nfsd/nfsd_cb_* "$T"/events/nfsd/nfsd_open \
	"$T"/events/filelock/generic_add_lease "$T"/events/filelock/break_lease_*; do
	[ -d "$d" ] || continue
	echo 1 >"$d/enable"
done
echo 1 >"$T/tracing_on"
# Each file is replaced only when its content changed: a client guest
# reading a file over 9p while it is replaced can crash in Linux 6.12
# (Documentation/testing.rst, "Troubleshooting"), so the fewer
# replacements the better.
(
	state=unset trace=unset
	while :; do
		s=$(snapshot)
		if [ "$s" != "$state" ]; then
			printf '%s\n' "$s" >"$CTL/nfsd-clients.tmp"
			mv "$CTL/nfsd-clients.tmp" "$CTL/nfsd-clients.txt"
			state=$s
		fi
		s=$(cat "$T/trace")
		if [ "$s" != "$trace" ]; then
			printf '%s\n' "$s" >"$CTL/server-trace.tmp"
			mv "$CTL/server-trace.tmp" "$CTL/server-trace.txt"
			trace=$s
		fi
		serve_requests
		[ -e "$CTL/client.finished" ] && exit 0
		sleep 0.2
	done
) </dev/null >>/results/server/nfsd-clients.log 2>&1 &
echo "publishing nfsd client state in $CTL/nfsd-clients.txt; serving $CTL/srv-req.*"
