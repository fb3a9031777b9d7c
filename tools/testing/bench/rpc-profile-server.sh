#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script of tools/testing/bench/rpc-profile.sh (run.sh
# --server-script): starts the responders as the integration tests do
# (integration/server/responder.sh: 20050 versions 2 and 1, 20051
# --v1-only) and serves the client's profiling requests through the
# control directory both guests share. A request is a file
# /results/ctl/prof-req.NAME holding one word:
#   start  perf record of the whole guest (cpu-clock, 1000 Hz, call
#          graphs) for RPC_PROFILE_SECS seconds (default 12)
#   fold   wait for that recording and fold it (perf-fold.py) into
#          /results/ctl/prof-NAME.folded
# and is answered by /results/ctl/prof-done.NAME.WORD ("ok" or why not).
# The loop waits on a FIFO between looks (no fork while it waits: its
# cost lands in every profile, under "other").

set -euo pipefail
CTL=/results/ctl
SECS=${RPC_PROFILE_SECS:-12}
PERF_PID=
command -v perf >/dev/null || { echo "rpc-profile: no perf in the guest (Debian linux-perf on the host)"; exit 1; }

serve() { # NAME WORD
	local data=/tmp/prof-$1.perf
	case $2 in
	start)
		perf record -q -e cpu-clock -F 1000 -a -g -o "$data" -- sleep "$SECS" \
			</dev/null >/dev/null 2>"$CTL/prof-$1.err" &
		PERF_PID=$!
		# perf is recording once its data file exists
		for _ in $(seq 50); do [ -e "$data" ] && break; read -r -t 0.1 -u 3 _ || true; done
		[ -e "$data" ] || { echo "perf did not start: $(head -c 200 "$CTL/prof-$1.err")"; return; }
		echo ok ;;
	fold)
		# no fork while perf records (pgrep would land in the profile)
		[ -z "$PERF_PID" ] || wait "$PERF_PID" || true
		PERF_PID=
		[ -s "$data" ] || { echo "no profile data"; return; }
		perf script -i "$data" -F comm,tid,ip,sym,dso 2>>"$CTL/prof-$1.err" |
			python3 /src/tools/testing/bench/perf-fold.py >"$CTL/prof-$1.folded"
		rm -f "$data"
		echo ok ;;
	*) echo "unknown request '$2'" ;;
	esac
}

(
	mkfifo /tmp/rpc-profile.fifo
	exec 3<>/tmp/rpc-profile.fifo
	while :; do
		read -r -t 0.2 -u 3 _ || true
		for r in "$CTL"/prof-req.*; do
			[ -e "$r" ] || continue
			name=${r##*/prof-req.}
			word=$(<"$r")
			rm -f "$r"
			serve "$name" "$word" >"$CTL/prof-tmp.$name" 2>&1 || true
			mv "$CTL/prof-tmp.$name" "$CTL/prof-done.$name.$word"
		done
	done
) </dev/null >/dev/null 2>&1 &

# shellcheck source=../integration/server/responder.sh
. /src/tools/testing/integration/server/responder.sh
