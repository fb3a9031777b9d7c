#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: lets a client
# test see and poke nfsd's NFSv4 state through the control directory both
# guests share (/results/ctl), until the client is finished:
#
#   * every 0.2 s, /results/ctl/nfsd-clients.txt gets the info and states
#     files of every client in /proc/fs/nfsd/clients (callback state,
#     delegations, opens);
#   * a file /results/ctl/srv-req.NAME holding a path relative to the
#     export asks for a conflicting access: the server appends a line to
#     that file locally. Opening it for writing breaks any read delegation
#     a client holds (nfsd sends CB_RECALL and the open waits until the
#     delegation is returned, or lease-break-time). The time the open and
#     write took, in milliseconds, goes to /results/ctl/srv-done.NAME.
#
# It also ends nfsd's grace period at once: nfsd grants no delegations
# while clients may still reclaim state (90 s after it starts).

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
}

serve_requests() {
	local req name path start end
	for req in "$CTL"/srv-req.*; do
		[ -e "$req" ] || continue
		name=${req##*/srv-req.}
		path=$(cat "$req")
		rm -f "$req"
		start=$(date +%s%N)
		echo "written on the server" >>"$EXPORT/$path"
		end=$(date +%s%N)
		echo $(((end - start) / 1000000)) >"$CTL/srv-done.$name.tmp"
		mv "$CTL/srv-done.$name.tmp" "$CTL/srv-done.$name"
		echo "conflicting write to $path: $(cat "$CTL/srv-done.$name") ms"
	done
}

echo Y >/proc/fs/nfsd/v4_end_grace
echo "nfsd grace period ended: v4_end_grace=$(cat /proc/fs/nfsd/v4_end_grace)"
(
	while :; do
		snapshot >"$CTL/nfsd-clients.tmp"
		mv "$CTL/nfsd-clients.tmp" "$CTL/nfsd-clients.txt"
		serve_requests
		[ -e "$CTL/client.finished" ] && exit 0
		sleep 0.2
	done
) </dev/null >>/results/server/nfsd-clients.log 2>&1 &
echo "publishing nfsd client state in $CTL/nfsd-clients.txt; serving $CTL/srv-req.*"
