# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by server scripts (tools/testing/vm/run.sh --server-script):
#   trace_svcrdma EVENT[:FILTER]...
# enables the named rpcrdma tracepoints (each with an optional filter
# expression) and keeps a copy of the trace buffer in the control
# directory both guests share (/results/ctl/server-trace.txt) until the
# client is finished, so that a client test can check what the server
# saw and did on the wire.

trace_svcrdma() {
	local T=/sys/kernel/tracing ev
	mountpoint -q "$T" || mount -t tracefs nodev "$T"
	echo 8192 >"$T/buffer_size_kb"
	for ev in "$@"; do
		if [[ $ev == *:* ]]; then
			echo "${ev#*:}" >"$T/events/rpcrdma/${ev%%:*}/filter"
		fi
		echo 1 >"$T/events/rpcrdma/${ev%%:*}/enable"
	done
	echo 1 >"$T/tracing_on"
	# Replaced only when the trace changed (see nfsd-clients.sh).
	(
		trace=unset
		while :; do
			s=$(cat "$T/trace")
			if [ "$s" != "$trace" ]; then
				printf '%s\n' "$s" >/results/ctl/server-trace.tmp
				mv /results/ctl/server-trace.tmp /results/ctl/server-trace.txt
				trace=$s
			fi
			[ -e /results/ctl/client.finished ] && exit 0
			sleep 0.5
		done
	) </dev/null >/dev/null 2>&1 &
	echo "tracing svcrdma: $*"
}
